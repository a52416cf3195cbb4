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
// session or key, not the store's, counted without a clock: under a context already done, a
// listing by operation, which walks all of 2,000 versions, stops with the context's error
// once it has walked versionsPerCheck of them; one by a session or key that made none of
// them walks none and answers, once the versions are in sesver and keyver. Before, it walks
// those above the index's mark in ver, and stops likewise. (The versions are added to the
// catalog directly, as the writer records them, to be many in little time.)
// BenchmarkVersionListing times them.
func TestVersionListingCost(t *testing.T) {
	s := mustCreate(t, newTestDataDir(t, Options{lagIndex: true}), "cost")
	addSeedVersions(t, s, 2000)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	none := []VersionFilter{{SessionID: "sesn_none"}, {APIKeyID: "apikey_none"}, {SessionID: "sesn_none", Operation: OpDeleted}}
	for _, f := range append([]VersionFilter{{Operation: OpDeleted}}, none...) {
		if _, err := s.Versions(done, f); !errors.Is(err, context.Canceled) {
			t.Fatalf("a walk of every version by %+v, none indexed, under a canceled context: %v", f, err)
		}
	}
	indexSeeded(t, s)
	if _, err := s.Versions(done, VersionFilter{Operation: OpDeleted}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a walk of every version under a canceled context: %v", err)
	}
	for _, f := range none {
		p, err := s.Versions(done, f)
		if err != nil || len(p.Versions) != 0 {
			t.Errorf("a listing by session %q key %q operation %q walked the store's versions: %d versions, %v",
				f.SessionID, f.APIKeyID, f.Operation, len(p.Versions), err)
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

// BenchmarkVersionListing lists the first page of versions of a store of 10,000 versions
// (100,000 with GITMEM_BENCH_LARGE) by filters that match none or few of them: a session
// and a key that never wrote, a session of a key of its own that wrote 5 versions spread
// over the history (seedVersions), and an operation that no version has, which walks them
// all (docs/performance.md, Listing versions by session or key).
func BenchmarkVersionListing(b *testing.B) {
	n := 10000
	if benchLarge() {
		n = 100000
	}
	s := benchStore(b)
	seedVersions(b, s, n)
	for _, c := range []struct {
		name string
		f    VersionFilter
	}{
		{"session=none", VersionFilter{SessionID: "sesn_none"}},
		{"key=none", VersionFilter{APIKeyID: "apikey_none"}},
		{"session=rare", VersionFilter{SessionID: seedRare.ID}},
		{"key=rare", VersionFilter{APIKeyID: seedRare.APIKeyID}},
		{"operation=deleted", VersionFilter{Operation: OpDeleted}},
		{"unfiltered", VersionFilter{}},
	} {
		b.Run(fmt.Sprintf("versions=%d,%s", n, c.name), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Versions(context.Background(), c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// seedRare is the session of seedVersions that wrote 5 versions, with a key of its own.
var seedRare = Actor{Type: SessionActor, ID: "sesn_01SEEDRARE", APIKeyID: "apikey_01SEEDRARE"}

// seedVersions adds n versions to s's catalog directly, records as the writer makes them (of
// no commit: nothing reads their history), a second apart: a quarter by apiActor, the
// others by three sessions of it, but 5 spread evenly by seedRare; and then adds them to
// sesver and keyver, as the writer does soon after it writes.
func seedVersions(tb testing.TB, s *Store, n int) {
	tb.Helper()
	addSeedVersions(tb, s, n)
	indexSeeded(tb, s)
}

// indexSeeded has the writer add every version to sesver and keyver.
func indexSeeded(tb testing.TB, s *Store) {
	tb.Helper()
	if err := s.runTask(context.Background(), func() error { return s.indexActors(nil) }); err != nil {
		tb.Fatal(err)
	}
}

// addSeedVersions is seedVersions, its versions left out of sesver and keyver.
func addSeedVersions(tb testing.TB, s *Store, n int) {
	tb.Helper()
	start := time.Now().Add(-time.Duration(n) * time.Second)
	for done := 0; done < n; {
		err := s.updateCatalog(func(ct catTx) error {
			for k := 0; k < 10000 && done < n; k++ {
				a := apiActor
				if n >= 10 && done%(n/5) == n/10 {
					a = seedRare
				} else if done%4 != 0 {
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
