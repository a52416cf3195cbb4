package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/gitexec"
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

// TestSearchRebuildingIs503: a search that meets its store's index being built from nothing
// is answered as every short-lived state, through the one mapping of kinds: 503
// overloaded_error, x-should-retry: true, with a Retry-After (2 s) that a rebuild outlasts
// and a message that says how far it is.
func TestSearchRebuildingIs503(t *testing.T) {
	ctx := context.Background()
	var svc *search.Service
	ts := startServer(t, Options{}, func(srv *Server) {
		svc = search.New(srv.data, search.Options{BatchSize: 2, RebuildWait: time.Millisecond})
		srv.EnableSearch(svc)
	})
	c := ts.client()
	store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a.md", "/b.md", "/c.md", "/d.md"} {
		if _, err := c.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: p, Content: anthropic.String("a walrus")}); err != nil {
			t.Fatal(err)
		}
	}
	paused, resume := make(chan struct{}), make(chan struct{})
	rebuilt := make(chan error, 1)
	go func() {
		var once sync.Once
		rebuilt <- svc.Rebuild(ctx, store.ID, func(done, total int) {
			if done > 0 && done < total {
				once.Do(func() { close(paused); <-resume })
			}
		})
	}()
	<-paused
	err = c.Get(ctx, "v1/memory_stores/"+store.ID+"/search?q=walrus", nil, new(map[string]any), option.WithMaxRetries(0))
	close(resume)
	status, typ, body := apiErr(t, err)
	msg, _ := body["message"].(string)
	if status != http.StatusServiceUnavailable || typ != "overloaded_error" || !strings.Contains(msg, "is being rebuilt (2 of 4 memories)") {
		t.Errorf("search during a rebuild: %d %s %v, want 503 overloaded_error that says how far it is", status, typ, body)
	}
	var e *anthropic.Error
	if errors.As(err, &e) && (e.Response.Header.Get("Retry-After") != "2" || e.Response.Header.Get("x-should-retry") != "true") {
		t.Errorf("503 headers: Retry-After %q, x-should-retry %q, want 2 and true", e.Response.Header.Get("Retry-After"), e.Response.Header.Get("x-should-retry"))
	}
	if err := <-rebuilt; err != nil {
		t.Fatal(err)
	}
}

// TestNoGitIs501: ErrNoGit is a 501 that says what needed git, wrapped in a *gitstore.Error
// or not; a full disk's bare error shows no text of its cause (handleError makes it a
// storage error that names the file first).
func TestNoGitIs501(t *testing.T) {
	for _, err := range []error{gitstore.ErrNoGit, gitexec.NoGit("sync needs git"), fmt.Errorf("sync: %w", gitexec.NoGit("sync needs git"))} {
		if ae := errorFor(err); ae.status != http.StatusNotImplemented || ae.message != err.Error() {
			t.Errorf("errorFor(%v) = %+v, want 501 with its text", err, ae)
		}
	}
	full := &os.PathError{Op: "write", Path: "/secret/place", Err: syscall.ENOSPC}
	if ae := errorFor(full); ae.status != http.StatusInternalServerError || strings.Contains(ae.message, "/secret") {
		t.Errorf("errorFor(%v) = %+v, want a 500 that does not show its cause", full, ae)
	}
}
