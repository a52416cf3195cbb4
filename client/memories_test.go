package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

// server is a gitmem server on loopback that records the requests it receives.
type server struct {
	url  string
	keys *apikeys.Keys

	mu        sync.Mutex
	requests  []string // "METHOD path" of each request received
	oldServer bool     // answer without ProposalReadsHeader and versions, as servers before them did
}

func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	d, err := gitstore.Open(context.Background(), dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikeys.Open(dir)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	api := httpapi.New(d, keys, httpapi.Options{})
	s := &server{keys: keys}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		old := s.oldServer
		s.mu.Unlock()
		if old {
			w = withoutHeader{w, ProposalReadsHeader}
			r.Header.Del(IncludeVersionHeader)
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		api.Close()
		d.Close()
	})
	s.url = hs.URL
	return s
}

// withoutHeader drops a header from the answers it writes.
type withoutHeader struct {
	http.ResponseWriter
	name string
}

func (w withoutHeader) WriteHeader(code int) {
	w.Header().Del(w.name)
	w.ResponseWriter.WriteHeader(code)
}

func (w withoutHeader) Write(b []byte) (int, error) {
	w.Header().Del(w.name) // before an implicit WriteHeader(200)
	return w.ResponseWriter.Write(b)
}

// received returns the requests received since the last call.
func (s *server) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.requests
	s.requests = nil
	return r
}

// TestWriteToReviewedFolder: a write that a review policy sends to the caller's proposal,
// which the caller's reads do not see, is answered without its version, and the client does
// not ask the server for it (the server says that the caller reads main); a propose key's
// write gets its version (its reads see its proposal). Against a server that does not say,
// the client asks, and takes the 404 for "reads main", as before.
func TestWriteToReviewedFolder(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	_, rwSecret, _ := srv.keys.Create("person", apikeys.ReadWrite, "")
	_, proposeSecret, _ := srv.keys.Create("agent", apikeys.Propose, "")
	leadKey, leadSecret, _ := srv.keys.Create("lead", apikeys.ReadWrite, "")
	rw := New(srv.url, rwSecret)
	st, err := rw.CreateStore(ctx, gitstore.CreateStoreInput{Name: "team", Policy: gitstore.Policy{ReviewPaths: []string{"/team/"}, ReviewExempt: []string{leadKey.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	inMain, err := New(srv.url, leadSecret).Store(st.ID()).Write(ctx, gitstore.WriteInput{Path: "/team/main.md", Content: "in main"})
	if err != nil {
		t.Fatal(err)
	}
	srv.received()
	versionReads := func(reqs []string) int {
		return len(slices.DeleteFunc(slices.Clone(reqs), func(r string) bool { return !strings.Contains(r, "/memory_versions") }))
	}

	res, err := st.Write(ctx, gitstore.WriteInput{Path: "/team/a.md", Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); !strings.HasPrefix(res.Proposal, "prop_") || res.Version != nil || len(got) != 1 {
		t.Errorf("a reviewed write: proposal %q, version %v; requests %q, want the write alone", res.Proposal, res.Version, got)
	}
	up := "changed"
	if res, err = st.UpdateMemory(ctx, gitstore.UpdateInput{ID: inMain.Memory.ID, Content: &up}); err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); res.Proposal == "" || res.Version != nil || len(got) != 1 {
		t.Errorf("a reviewed update: proposal %q, version %v; requests %q, want the update alone", res.Proposal, res.Version, got)
	}

	v, err := st.Delete(ctx, gitstore.DeleteInput{ID: inMain.Memory.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); v.ID != "" || v.Operation != gitstore.OpDeleted || len(got) != 1 {
		t.Errorf("a reviewed delete: version %+v; requests %q, want the delete alone", v, got)
	}

	agent := New(srv.url, proposeSecret).Store(st.ID())
	res, err = agent.Write(ctx, gitstore.WriteInput{Path: "/notes/b.md", Content: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); res.Proposal == "" || res.Version == nil || res.Version.ID != res.Memory.VersionID || len(got) != 1 {
		t.Errorf("a propose key's write: proposal %q, version %v; requests %q, want the write alone, answered with its version", res.Proposal, res.Version, got)
	}

	srv.mu.Lock()
	srv.oldServer = true
	srv.mu.Unlock()
	res, err = st.Write(ctx, gitstore.WriteInput{Path: "/team/c.md", Content: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); res.Proposal == "" || res.Version != nil || versionReads(got) != 1 {
		t.Errorf("a reviewed write, from a server without %s: proposal %q, version %v; requests %q, want the version asked for", ProposalReadsHeader, res.Proposal, res.Version, got)
	}
}

// TestWriteIsOneRequest: a write, an update, a restore and a delete are one request each,
// answered with the version they made, as reading the version gives it, and with the
// secrets that the store's policy redacted. From a server that does not put the version in
// its answer, the client asks for it.
func TestWriteIsOneRequest(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	_, secret, _ := srv.keys.Create("person", apikeys.ReadWrite, "")
	st, err := New(srv.url, secret).CreateStore(ctx, gitstore.CreateStoreInput{Name: "team", Policy: gitstore.Policy{Secrets: gitstore.SecretsRedact}})
	if err != nil {
		t.Fatal(err)
	}
	sample := secrettest.Samples()[0]
	check := func(what string, res gitstore.WriteResult, err error, requests int) {
		t.Helper()
		got := srv.received()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != requests || res.Version == nil {
			t.Fatalf("%s: version %v; requests %q, want %d", what, res.Version, got, requests)
		}
		v, err := st.Version(ctx, res.Memory.VersionID)
		srv.received()
		if err != nil || !reflect.DeepEqual(*res.Version, v) {
			t.Errorf("%s: version %+v; reading it gives %+v (%v)", what, *res.Version, v, err)
		}
	}
	srv.received()
	res, err := st.Write(ctx, gitstore.WriteInput{Path: "/a.md", Content: sample.Content})
	check("a write", res, err, 1)
	if len(res.Redacted) != 1 || res.Redacted[0].Kind != sample.Kind || res.Redacted[0].Line != sample.Line || res.Redacted[0].Column != sample.Column {
		t.Errorf("redacted %v; want one %s at line %d, column %d", res.Redacted, sample.Kind, sample.Line, sample.Column)
	}
	first := res.Version.ID
	changed := "changed"
	res, err = st.UpdateMemory(ctx, gitstore.UpdateInput{ID: res.Memory.ID, Content: &changed})
	check("an update", res, err, 1)
	res, err = st.Restore(ctx, gitstore.RestoreInput{VersionID: first})
	check("a restore", res, err, 1)
	del, err := st.Delete(ctx, gitstore.DeleteInput{ID: res.Memory.ID})
	check("a delete", gitstore.WriteResult{Memory: gitstore.Memory{VersionID: del.ID}, Version: &del}, err, 1)

	srv.mu.Lock()
	srv.oldServer = true
	srv.mu.Unlock()
	res, err = st.Write(ctx, gitstore.WriteInput{Path: "/b.md", Content: "b"})
	check("a write to a server without versions in its answers", res, err, 2)
	del, err = st.Delete(ctx, gitstore.DeleteInput{ID: res.Memory.ID})
	check("a delete on a server without versions in its answers", gitstore.WriteResult{Memory: gitstore.Memory{VersionID: del.ID}, Version: &del}, err, 2)
}
