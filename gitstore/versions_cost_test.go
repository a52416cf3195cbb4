package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestVersionListingCost: a listing by session or API key walks the versions of that
// session or key, not the store's: one that matches none of 20,000 versions takes a small
// part of the time of a listing by operation, which walks them all. (The versions are added
// to the catalog directly, as the writer records them, to be many in little time.)
func TestVersionListingCost(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	seedVersions(t, s, 20000)
	fastest := func(f VersionFilter) time.Duration {
		best := time.Hour
		for range 3 {
			start := time.Now()
			p, err := s.Versions(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Versions) != 0 {
				t.Fatalf("%+v matched %d versions", f, len(p.Versions))
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	walk := fastest(VersionFilter{Operation: OpDeleted})
	for _, f := range []VersionFilter{{SessionID: "sesn_none"}, {APIKeyID: "apikey_none"}, {SessionID: "sesn_none", Operation: OpDeleted}} {
		took := fastest(f)
		what := fmt.Sprintf("session %q key %q operation %q", f.SessionID, f.APIKeyID, f.Operation)
		t.Logf("%s: %s; a walk of every version: %s", what, took, walk)
		if took*20 > walk {
			t.Errorf("a listing by %s took %s, a walk of every version %s", what, took, walk)
		}
	}
}

// TestVersionsEndWithContext: a listing that walks the store's versions (by operation) stops
// with its context's error once the context is done.
func TestVersionsEndWithContext(t *testing.T) {
	s := newTestStore(t)
	seedVersions(t, s, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := s.Versions(ctx, VersionFilter{Operation: OpDeleted})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a listing under a canceled context: %d versions, %v", len(p.Versions), err)
	}
	dl, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()
	if _, err := s.Versions(dl, VersionFilter{Operation: OpDeleted}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a listing past its deadline: %v", err)
	}
}

// seedVersions adds n versions to s's catalog directly, records as the writer makes them (of
// no commit: nothing reads their history): a quarter by apiActor, the others by three
// sessions of it, a second apart.
func seedVersions(tb testing.TB, s *Store, n int) {
	tb.Helper()
	start := time.Now().Add(-time.Duration(n) * time.Second)
	for done := 0; done < n; {
		err := s.updateCatalog(func(ct catTx) error {
			for k := 0; k < 10000 && done < n; k++ {
				a := apiActor
				if done%4 != 0 {
					a = Actor{Type: SessionActor, ID: fmt.Sprintf("sesn_01SEEDSESSION%013d", done%3), APIKeyID: apiActor.ID}
				}
				at := start.Add(time.Duration(done) * time.Second)
				v := verRec{ID: NewID(VersionPrefix, at), Memory: NewID(MemoryPrefix, at), Op: OpCreated,
					Path: fmt.Sprintf("/seed/%06d.md", done), Blob: strings.Repeat("ab", 20), SHA: strings.Repeat("cd", 32),
					Size: 100, At: at.UnixMilli(), actorRec: recOf(a), Commit: strings.Repeat("ef", 20)}
				if err := ct.addVersion(v); err != nil {
					return err
				}
				done++
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}
