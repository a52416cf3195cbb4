package httpapi

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/search"
)

// TestSDKRetriesUnavailable: a write that finds main.lock held by a git process (a push
// updating main) is answered 503 overloaded_error with Retry-After, which the official SDK
// retries by itself; once the lock is gone, the retry succeeds. A 409 is not retried (see
// TestSDKStoresAndMemories).
func TestSDKRetriesUnavailable(t *testing.T) {
	ctx := context.Background()
	ts := startServer(t, Options{})
	c := ts.client()
	store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ts.data.Store(ctx, store.ID)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(st.RepoPath(), "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	params := anthropic.BetaMemoryStoreMemoryNewParams{Path: "/a.md", Content: anthropic.String("x")}

	// Without retries the caller sees the answer itself.
	_, err = c.Beta.MemoryStores.Memories.New(ctx, store.ID, params, option.WithMaxRetries(0))
	status, typ, _ := apiErr(t, err)
	if status != http.StatusServiceUnavailable || typ != "overloaded_error" {
		t.Fatalf("write with main.lock held: %d %s, want 503 overloaded_error", status, typ)
	}
	var e *anthropic.Error
	if errors.As(err, &e) && (e.Response.Header.Get("Retry-After") == "" || e.Response.Header.Get("x-should-retry") != "true") {
		t.Errorf("503 headers: Retry-After %q, x-should-retry %q", e.Response.Header.Get("Retry-After"), e.Response.Header.Get("x-should-retry"))
	}

	// With the SDK's retries: the lock goes away while it waits, and the write succeeds.
	go func() {
		time.Sleep(1500 * time.Millisecond) // after the first attempt (which waits ~1 s for the lock)
		os.Remove(lock)
	}()
	before := ts.requests.Load()
	m, err := c.Beta.MemoryStores.Memories.New(ctx, store.ID, params)
	if err != nil {
		t.Fatalf("write retried by the SDK: %v", err)
	}
	if n := ts.requests.Load() - before; n < 2 || m.Path != "/a.md" {
		t.Errorf("the SDK sent %d requests (want a retry) and got %+v", n, m)
	}
}

// TestSDKRetriesSearchClosed: a search that meets the search service closed (the server
// shutting down) is the same 503 overloaded_error as any short-lived state, through the one
// mapping of kinds; the official SDK retries it by itself (twice, its default), and then
// reports it.
func TestSDKRetriesSearchClosed(t *testing.T) {
	ctx := context.Background()
	var svc *search.Service
	ts := startServer(t, Options{}, func(srv *Server) {
		svc = search.New(srv.data, search.Options{})
		srv.EnableSearch(svc)
	})
	c := ts.client(option.WithRequestTimeout(10 * time.Second))
	store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	before := ts.requests.Load()
	err = c.Get(ctx, "v1/memory_stores/"+store.ID+"/search?q=walrus", nil, new(map[string]any))
	status, typ, body := apiErr(t, err)
	if status != http.StatusServiceUnavailable || typ != "overloaded_error" || body["message"] != search.ErrClosed.Message {
		t.Errorf("search with the service closed: %d %s %v, want 503 overloaded_error", status, typ, body)
	}
	if n := ts.requests.Load() - before; n != 3 {
		t.Errorf("the SDK sent the search %d times, want 3 (two retries)", n)
	}
}
