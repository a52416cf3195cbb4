package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// testServer is the real server on a loopback port, over a fresh data directory.
type testServer struct {
	url      string
	data     *gitstore.DataDir
	keys     *apikeys.Keys
	requests atomic.Int64 // requests the server received
}

// openDir opens the data directory dir and its keys; the caller closes the directory.
func openDir(t testing.TB, dir string) (*gitstore.DataDir, *apikeys.Keys) {
	t.Helper()
	d, err := gitstore.Open(context.Background(), dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikeys.Open(dir)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	return d, keys
}

func startServer(t *testing.T, opts Options, setup ...func(*Server)) *testServer {
	t.Helper()
	d, keys := openDir(t, t.TempDir())
	ts := &testServer{data: d, keys: keys}
	srv := New(d, keys, opts)
	for _, f := range setup {
		f(srv)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.requests.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		d.Close()
	})
	ts.url = hs.URL
	return ts
}

func (ts *testServer) client(opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(ts.url), option.WithAPIKey("unused")}, opts...)...)
}

// apiErr returns the status and error type of an SDK error.
func apiErr(t *testing.T, err error) (int, string, map[string]any) {
	t.Helper()
	var e *anthropic.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an API error, got %v", err)
	}
	var env struct {
		Type      string         `json:"type"`
		Error     map[string]any `json:"error"`
		RequestID string         `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(e.RawJSON()), &env); err != nil {
		t.Fatalf("error body %q: %v", e.RawJSON(), err)
	}
	if env.Type != "error" || env.RequestID == "" || e.RequestID != env.RequestID {
		t.Errorf("envelope %+v, request-id header %q", env, e.RequestID)
	}
	typ, _ := env.Error["type"].(string)
	return e.StatusCode, typ, env.Error
}

func TestSDKStoresAndMemories(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	c := ts.client()

	store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{
		Name: "User preferences", Description: anthropic.String("what the user likes"),
		Metadata: map[string]string{"team": "core"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(store.ID, "memstore_") || store.Name != "User preferences" || store.Metadata["team"] != "core" {
		t.Fatalf("store: %+v", store)
	}
	got, err := c.Beta.MemoryStores.Get(ctx, store.ID, anthropic.BetaMemoryStoreGetParams{})
	if err != nil || got.ID != store.ID || !got.CreatedAt.Equal(store.CreatedAt) {
		t.Fatalf("get store: %+v %v", got, err)
	}
	updated, err := c.Beta.MemoryStores.Update(ctx, store.ID, anthropic.BetaMemoryStoreUpdateParams{
		Name: anthropic.String("Prefs"), Metadata: map[string]string{"owner": "ann"}})
	if err != nil || updated.Name != "Prefs" || updated.Metadata["team"] != "core" || updated.Metadata["owner"] != "ann" {
		t.Fatalf("update store: %+v %v", updated, err)
	}

	mem := c.Beta.MemoryStores.Memories
	m, err := mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/style/code.md", Content: anthropic.String("tabs")})
	if err != nil {
		t.Fatal(err)
	}
	if m.Content != "" || m.ContentSizeBytes != 4 || m.Path != "/style/code.md" || !strings.HasPrefix(m.MemoryVersionID, "memver_") {
		t.Fatalf("created memory: %+v", m)
	}
	full, err := mem.Get(ctx, m.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID})
	if err != nil || full.Content != "tabs" {
		t.Fatalf("get memory: %+v %v", full, err)
	}
	// Upsert by path: the same path is the same memory.
	again, err := mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/style/code.md", Content: anthropic.String("spaces")})
	if err != nil || again.ID != m.ID || again.MemoryVersionID == m.MemoryVersionID {
		t.Fatalf("upsert: %+v %v", again, err)
	}
	// Update with a stale precondition: 409, not retried.
	before := ts.requests.Load()
	_, err = mem.Update(ctx, m.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID,
		Content: anthropic.String("x"), Precondition: anthropic.BetaManagedAgentsPreconditionParam{
			Type: anthropic.BetaManagedAgentsPreconditionTypeContentSha256, ContentSha256: anthropic.String(m.ContentSha256)}})
	if status, typ, _ := apiErr(t, err); status != 409 || typ != "memory_precondition_failed_error" {
		t.Errorf("stale precondition: %d %s", status, typ)
	}
	if n := ts.requests.Load() - before; n != 1 {
		t.Errorf("the SDK sent a 409 %d times; x-should-retry: false must stop its retries", n)
	}
	// Rename keeps the id; renaming onto another memory is a path conflict naming it.
	other, _ := mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/other.md", Content: anthropic.String("o")})
	renamed, err := mem.Update(ctx, m.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID, Path: anthropic.String("/code.md")})
	if err != nil || renamed.ID != m.ID || renamed.Path != "/code.md" {
		t.Fatalf("rename: %+v %v", renamed, err)
	}
	_, err = mem.Update(ctx, m.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: store.ID, Path: anthropic.String("/other.md")})
	if status, typ, body := apiErr(t, err); status != 409 || typ != "memory_path_conflict_error" || body["conflicting_memory_id"] != other.ID || body["conflicting_path"] != "/other.md" {
		t.Errorf("rename onto a memory: %d %s %v", status, typ, body)
	}

	// Lists: depth 1 rolls up, pages follow next_page, view=full carries content.
	for i := 0; i < 25; i++ {
		if _, err := mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{
			Path: "/notes/n" + string(rune('a'+i)) + ".md", Content: anthropic.String("note")}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := mem.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{Depth: anthropic.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, it := range page.Data {
		items = append(items, it.Type+":"+it.Path)
	}
	if got, want := strings.Join(items, " "), "memory:/code.md memory_prefix:/notes/ memory:/other.md"; got != want {
		t.Errorf("depth 1: %s, want %s", got, want)
	}
	n := 0
	iter := mem.ListAutoPaging(ctx, store.ID, anthropic.BetaMemoryStoreMemoryListParams{PathPrefix: anthropic.String("/notes/"), Limit: anthropic.Int(7), View: anthropic.BetaManagedAgentsMemoryViewFull})
	for iter.Next() {
		if iter.Current().Content != "note" {
			t.Errorf("full view without content: %+v", iter.Current())
		}
		n++
	}
	if iter.Err() != nil || n != 25 {
		t.Errorf("paged through %d memories (%v), want 25", n, iter.Err())
	}

	// Delete with a wrong hash changes nothing; with the right one it deletes.
	_, err = mem.Delete(ctx, other.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: store.ID, ExpectedContentSha256: anthropic.String(strings.Repeat("0", 64))})
	if status, typ, _ := apiErr(t, err); status != 409 || typ != "memory_precondition_failed_error" {
		t.Errorf("delete with a wrong hash: %d %s", status, typ)
	}
	del, err := mem.Delete(ctx, other.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: store.ID, ExpectedContentSha256: anthropic.String(other.ContentSha256)})
	if err != nil || del.ID != other.ID || string(del.Type) != "memory_deleted" {
		t.Fatalf("delete: %+v %v", del, err)
	}
	_, err = mem.Get(ctx, other.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: store.ID})
	if status, typ, _ := apiErr(t, err); status != 404 || typ != "not_found_error" {
		t.Errorf("get deleted: %d %s", status, typ)
	}

	// Versions: newest first, filtered by memory even after its delete.
	vers := c.Beta.MemoryStores.MemoryVersions
	vp, err := vers.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(other.ID)})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, v := range vp.Data {
		ops = append(ops, string(v.Operation))
		if v.CreatedBy.Type != "user_actor" || v.CreatedBy.UserID != "user_local" {
			t.Errorf("version by %+v", v.CreatedBy)
		}
	}
	if strings.Join(ops, ",") != "deleted,created" {
		t.Errorf("versions of a deleted memory: %v", ops)
	}
	v, err := vers.Get(ctx, m.MemoryVersionID, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: store.ID})
	if err != nil || v.Content != "tabs" || v.Path != "/style/code.md" || string(v.Operation) != "created" {
		t.Fatalf("get version: %+v %v", v, err)
	}
	// Redact: the version stays, without path or content, and says who redacted it.
	red, err := vers.Redact(ctx, v.ID, anthropic.BetaMemoryStoreMemoryVersionRedactParams{MemoryStoreID: store.ID})
	if err != nil || red.ID != v.ID || red.Path != "" || red.Content != "" || red.ContentSha256 != "" || red.RedactedAt.IsZero() ||
		red.RedactedBy.Type != "user_actor" || red.RedactedBy.UserID != "user_local" || !red.CreatedAt.Equal(v.CreatedAt) {
		t.Fatalf("redact: %+v %v", red, err)
	}
	if got, err := vers.Get(ctx, v.ID, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: store.ID}); err != nil || !got.RedactedAt.Equal(red.RedactedAt) || got.Content != "" {
		t.Errorf("redacted version read back: %+v %v", got, err)
	}

	// Archive: read-only, listed only with include_archived; then delete.
	if a, err := c.Beta.MemoryStores.Archive(ctx, store.ID, anthropic.BetaMemoryStoreArchiveParams{}); err != nil || a.ArchivedAt.IsZero() {
		t.Fatalf("archive: %+v %v", a, err)
	}
	_, err = mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/x.md", Content: anthropic.String("x")})
	if status, typ, _ := apiErr(t, err); status != 400 || typ != "invalid_request_error" {
		t.Errorf("write to an archived store: %d %s", status, typ)
	}
	list, err := c.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
	if err != nil || len(list.Data) != 0 {
		t.Errorf("archived store listed by default: %+v %v", list, err)
	}
	list, err = c.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{IncludeArchived: anthropic.Bool(true), CreatedAtGte: anthropic.Time(store.CreatedAt.Add(-time.Second))})
	if err != nil || len(list.Data) != 1 {
		t.Errorf("include_archived: %+v %v", list, err)
	}
	if d, err := c.Beta.MemoryStores.Delete(ctx, store.ID, anthropic.BetaMemoryStoreDeleteParams{}); err != nil || d.ID != store.ID {
		t.Fatalf("delete store: %+v %v", d, err)
	}
	_, err = c.Beta.MemoryStores.Get(ctx, store.ID, anthropic.BetaMemoryStoreGetParams{})
	if status, _, _ := apiErr(t, err); status != 404 {
		t.Errorf("get deleted store: %d", status)
	}
}

func TestSDKStrictCreate(t *testing.T) {
	ctx := context.Background()
	for _, strict := range []bool{false, true} {
		ts := startServer(t, Options{StrictCreate: strict})
		c := ts.client()
		store, _ := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "s"})
		first, err := c.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/a.md", Content: anthropic.String("1")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/a.md", Content: anthropic.String("2")})
		if !strict {
			if err != nil {
				t.Errorf("upsert mode: %v", err)
			}
			continue
		}
		status, typ, body := apiErr(t, err)
		if status != 409 || typ != "memory_path_conflict_error" || body["conflicting_memory_id"] != first.ID || body["conflicting_path"] != "/a.md" {
			t.Errorf("strict create on a taken path: %d %s %v", status, typ, body)
		}
	}
}

func TestSDKKeysAndSessions(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("writer", apikeys.ReadWrite, "")
	roKey, ro, _ := ts.keys.Create("reader", apikeys.ReadOnly, "")
	writer := ts.client(option.WithAPIKey(rw))

	store, err := writer.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := writer.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "other"})
	_, limited, _ := ts.keys.Create("one store", apikeys.ReadWrite, store.ID)

	// No key, a bad key, a bearer token.
	// The SDK will not send a request without a key; curl would.
	if status, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores", "", nil); status != 401 || !strings.Contains(body, `"type":"authentication_error"`) || !strings.Contains(body, "x-api-key") {
		t.Errorf("no key: %d %s", status, body)
	}
	badKey := ts.client(option.WithAPIKey("gitmem_wrong"))
	_, err = badKey.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
	if status, _, _ := apiErr(t, err); status != 401 {
		t.Errorf("bad key: %d", status)
	}
	bearer := ts.client(option.WithAPIKey(""), option.WithAuthToken(ro))
	if _, err := bearer.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{}); err != nil {
		t.Errorf("bearer token: %v", err)
	}

	// A read-only key reads and cannot write.
	reader := ts.client(option.WithAPIKey(ro))
	if _, err := reader.Beta.MemoryStores.Get(ctx, store.ID, anthropic.BetaMemoryStoreGetParams{}); err != nil {
		t.Errorf("read-only read: %v", err)
	}
	_, err = reader.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/a.md", Content: anthropic.String("x")})
	if status, typ, _ := apiErr(t, err); status != 403 || typ != "permission_error" {
		t.Errorf("read-only write: %d %s", status, typ)
	}

	// A key limited to one store sees only that store.
	one := ts.client(option.WithAPIKey(limited))
	if _, err := one.Beta.MemoryStores.Get(ctx, other.ID, anthropic.BetaMemoryStoreGetParams{}); err == nil {
		t.Error("a store-limited key read another store")
	} else if status, _, _ := apiErr(t, err); status != 403 {
		t.Errorf("store-limited key on another store: %d", status)
	}
	if l, err := one.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{}); err != nil || len(l.Data) != 1 || l.Data[0].ID != store.ID {
		t.Errorf("store-limited list: %+v %v", l, err)
	}

	// Writes name their actor: the key, or the session on whose behalf it writes.
	mem := writer.Beta.MemoryStores.Memories
	mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/by-key.md", Content: anthropic.String("k")})
	mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/by-session.md", Content: anthropic.String("s")},
		option.WithHeader(SessionHeader, "sesn_01abc"))
	vers := writer.Beta.MemoryStores.MemoryVersions
	vp, err := vers.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{SessionID: anthropic.String("sesn_01abc")})
	if err != nil || len(vp.Data) != 1 || vp.Data[0].Path != "/by-session.md" || vp.Data[0].CreatedBy.Type != "session_actor" || vp.Data[0].CreatedBy.SessionID != "sesn_01abc" {
		t.Errorf("session versions: %+v %v", vp, err)
	}
	keyID := ""
	keys, _ := ts.keys.List()
	for _, k := range keys {
		if k.Name == "writer" {
			keyID = k.ID
		}
	}
	vp, err = vers.List(ctx, store.ID, anthropic.BetaMemoryStoreMemoryVersionListParams{APIKeyID: anthropic.String(keyID)})
	if err != nil || len(vp.Data) != 2 {
		t.Errorf("versions by key %s: %d, want 2 (its own write and its session's)", keyID, len(vp.Data))
	}
	_, err = mem.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/x.md", Content: anthropic.String("s")},
		option.WithHeader(SessionHeader, "not a session"))
	if status, typ, _ := apiErr(t, err); status != 400 || typ != "invalid_request_error" {
		t.Errorf("bad session header: %d %s", status, typ)
	}

	// Revoking a key takes effect at once.
	if _, err := ts.keys.Revoke(roKey.ID); err != nil {
		t.Fatal(err)
	}
	_, err = reader.Beta.MemoryStores.Get(ctx, store.ID, anthropic.BetaMemoryStoreGetParams{})
	if status, _, _ := apiErr(t, err); status != 401 {
		t.Errorf("revoked key: %d", status)
	}
}
