package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// TestSDKVersionsBySessionAndKey: the SDK pages through the versions of a session and of an
// API key, two at a time, and gets each one's versions newest first, those of a key's
// sessions with its own; also combined with an operation, and for a session or key that
// never wrote. Session ids begin with one another (sesn_a, sesn_ab).
func TestSDKVersionsBySessionAndKey(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	keyA, secretA, _ := ts.keys.Create("a", apikeys.ReadWrite, "")
	keyB, secretB, _ := ts.keys.Create("b", apikeys.ReadWrite, "")
	a, b := ts.client(option.WithAPIKey(secretA)), ts.client(option.WithAPIKey(secretB))
	store, err := a.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "by session"})
	if err != nil {
		t.Fatal(err)
	}

	// Writes of A, of B, and of sessions of each; the versions each should list, oldest first.
	type writer struct {
		c       anthropic.Client
		key     string
		session string
	}
	writers := []writer{{a, keyA.ID, ""}, {a, keyA.ID, "sesn_a"}, {b, keyB.ID, ""}, {b, keyB.ID, "sesn_ab"}, {a, keyA.ID, "sesn_ab"}}
	want := map[string][]string{}    // by session or key id
	created := map[string][]string{} // the creations of each
	var ids []string
	for i := range 30 {
		w := writers[i%len(writers)]
		var opts []option.RequestOption
		if w.session != "" {
			opts = append(opts, option.WithHeader(SessionHeader, w.session))
		}
		var m *anthropic.BetaManagedAgentsMemory
		if i < 12 {
			m, err = w.c.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{
				Path: fmt.Sprintf("/m/%d.md", i), Content: anthropic.String(fmt.Sprint(i))}, opts...)
			if err == nil {
				ids = append(ids, m.ID)
				created[w.key] = append(created[w.key], m.MemoryVersionID)
				created[w.session] = append(created[w.session], m.MemoryVersionID)
			}
		} else {
			m, err = w.c.Beta.MemoryStores.Memories.Update(ctx, ids[i%len(ids)], anthropic.BetaMemoryStoreMemoryUpdateParams{
				MemoryStoreID: store.ID, Content: anthropic.String(fmt.Sprint(i))}, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		want[w.key] = append(want[w.key], m.MemoryVersionID)
		want[w.session] = append(want[w.session], m.MemoryVersionID)
	}

	list := func(p anthropic.BetaMemoryStoreMemoryVersionListParams) []string {
		t.Helper()
		p.Limit = anthropic.Int(2)
		var got []string
		pages := b.Beta.MemoryStores.MemoryVersions.ListAutoPaging(ctx, store.ID, p)
		for pages.Next() {
			got = append(got, pages.Current().ID)
		}
		if err := pages.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	newestFirst := func(ids []string) []string {
		out := slices.Clone(ids)
		slices.Reverse(out)
		return out
	}
	for _, id := range []string{"sesn_a", "sesn_ab", "sesn_none"} {
		if got, w := list(anthropic.BetaMemoryStoreMemoryVersionListParams{SessionID: anthropic.String(id)}), newestFirst(want[id]); !slices.Equal(got, w) {
			t.Errorf("versions of session %s:\n got %v\nwant %v", id, got, w)
		}
		if got, w := list(anthropic.BetaMemoryStoreMemoryVersionListParams{SessionID: anthropic.String(id), Operation: "created"}), newestFirst(created[id]); !slices.Equal(got, w) {
			t.Errorf("creations of session %s:\n got %v\nwant %v", id, got, w)
		}
	}
	for _, id := range []string{keyA.ID, keyB.ID, "apikey_none"} {
		if got, w := list(anthropic.BetaMemoryStoreMemoryVersionListParams{APIKeyID: anthropic.String(id)}), newestFirst(want[id]); !slices.Equal(got, w) {
			t.Errorf("versions of key %s:\n got %v\nwant %v", id, got, w)
		}
		if got, w := list(anthropic.BetaMemoryStoreMemoryVersionListParams{APIKeyID: anthropic.String(id), Operation: "created"}), newestFirst(created[id]); !slices.Equal(got, w) {
			t.Errorf("creations of key %s:\n got %v\nwant %v", id, got, w)
		}
	}
	if len(want["sesn_ab"]) != 12 || len(want[keyA.ID]) != 18 {
		t.Fatalf("the writes were not spread as meant: %d by sesn_ab, %d by key a", len(want["sesn_ab"]), len(want[keyA.ID]))
	}
}

// TestVersionsEndAtWriteTimeout: a listing that walks the store's versions (by operation)
// ends once its answer could no longer be written (--write-timeout): here at once, and the
// request ends in an error rather than a page that no one receives.
func TestVersionsEndAtWriteTimeout(t *testing.T) {
	ctx := context.Background()
	statuses := make(chan int, 1)
	ts := startServer(t, Options{Limits: Limits{WriteTimeout: time.Nanosecond},
		Observe: func(route, _, _ string, status int, _ time.Duration) {
			if route == "/v1/memory_stores/:store/memory_versions" {
				statuses <- status
			}
		}})
	st, err := ts.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "walked", Actor: gitstore.SystemActor})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := st.Write(ctx, gitstore.WriteInput{Path: fmt.Sprintf("/%d.md", i), Content: "x", Actor: gitstore.SystemActor}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get(ts.url + "/v1/memory_stores/" + st.ID() + "/memory_versions?operation=deleted")
	if err == nil {
		resp.Body.Close() // the answer's write fails at the deadline: an error, or a cut answer
	}
	select {
	case status := <-statuses:
		if status == http.StatusOK {
			t.Fatal("the listing walked on past its deadline and answered 200")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listing did not end")
	}
}

// TestRequestContextEndsAtDeadline: a read's context, a mounted page's (the UI) as an API
// route's, ends at its answer's deadline (--write-timeout), so that work which stops on its
// context (a walk of a store's versions for the UI's activity by folder) stops there; a
// change's context does not (it ends when the client goes), so that no change stops halfway.
func TestRequestContextEndsAtDeadline(t *testing.T) {
	const within = 3 * time.Second
	left := make(chan time.Duration, 1)
	ts := startServer(t, Options{Limits: Limits{WriteTimeout: within}}, func(s *Server) {
		s.Mount("/probe/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, ok := r.Context().Deadline()
			if !ok {
				d = time.Now().Add(time.Hour)
			}
			left <- time.Until(d)
		}))
	})
	resp, err := http.Get(ts.url + "/probe/page")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := <-left; d <= 0 || d > within {
		t.Fatalf("a mounted page's context ends in %s, want within %s", d, within)
	}
	resp, err = http.Post(ts.url+"/probe/page", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := <-left; d <= within {
		t.Fatalf("a change's context ends in %s, at its answer's deadline", d)
	}
}
