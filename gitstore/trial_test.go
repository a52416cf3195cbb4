package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/secrets/secrettest"
)

// A trial write answers as the write would, and leaves the store as it was: main, the
// catalog, the versions.
func TestTrialWrites(t *testing.T) {
	ctx := context.Background()
	_, s := newPolicyStore(t, Options{}, Policy{MaxMemories: 2, ReviewPaths: []string{"/team/"}})
	if _, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "a", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	head := s.Head()
	versions := func() int {
		p, err := s.Versions(ctx, VersionFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Versions)
	}
	before := versions()

	try := func(name string, write func(ctx context.Context) error) (TrialResult, error) {
		t.Helper()
		var res TrialResult
		err := write(Trial(ctx, &res))
		if s.Head() != head {
			t.Fatalf("%s: main moved from %s to %s", name, head, s.Head())
		}
		if n := versions(); n != before {
			t.Fatalf("%s: %d versions, want %d", name, n, before)
		}
		return res, err
	}

	res, err := try("a new memory", func(ctx context.Context) error {
		r, err := s.Write(ctx, WriteInput{Path: "/b.md", Content: "b", Actor: apiActor})
		if err == nil && (r.Version == nil || r.Memory.Path != "/b.md") {
			t.Errorf("a new memory: result %+v, want the version it would make", r)
		}
		return err
	})
	if err != nil || !res.Changes {
		t.Fatalf("a new memory: %+v, %v; want it to change the store", res, err)
	}
	if _, err := s.GetByPath(ctx, "/b.md", false); !IsKind(err, KindNotFound) {
		t.Fatalf("the tried memory can be read: %v", err)
	}

	res, err = try("the same content", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "a", Actor: apiActor})
		return err
	})
	if err != nil || res.Changes {
		t.Fatalf("the same content: %+v, %v; want no change", res, err)
	}

	_, err = try("a create of a taken path", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "x", Actor: apiActor, Precondition: &Precondition{Type: NotExists}})
		return err
	})
	if !IsKind(err, KindPreconditionFailed) {
		t.Fatalf("a create of a taken path: %v, want a failed precondition", err)
	}

	_, err = try("a file below a file", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/a.md/b.md", Content: "x", Actor: apiActor})
		return err
	})
	if !IsKind(err, KindPathConflict) {
		t.Fatalf("a file below a file: %v, want a path conflict", err)
	}

	_, err = try("a delete of nothing", func(ctx context.Context) error {
		_, err := s.DeletePath(ctx, DeletePathInput{Path: "/nothing.md", Actor: apiActor})
		return err
	})
	if !IsKind(err, KindNotFound) {
		t.Fatalf("a delete of nothing: %v, want not found", err)
	}

	// A reviewed folder: refused to the store's own writes, tried as a proposal takes it.
	if _, err := s.Write(ctx, WriteInput{Path: "/team/x.md", Content: "x", Actor: apiActor}); ErrorRule(err) != RuleReview {
		t.Fatalf("a direct write to a reviewed folder: %v, want the review rule", err)
	}
	res, err = try("a reviewed folder", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/team/x.md", Content: "x", Actor: apiActor})
		return err
	})
	if err != nil || !res.Changes {
		t.Fatalf("a reviewed folder: %+v, %v; want it to pass as in a proposal", res, err)
	}

	// The quota: one memory more fits, two do not.
	res, err = try("a memory over the quota", func(ctx context.Context) error {
		_, err := s.MovePath(ctx, MovePathInput{From: "/a.md", To: "/c.md", Actor: apiActor})
		return err
	})
	if err != nil || !res.Changes {
		t.Fatalf("a rename: %+v, %v", res, err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/b.md", Content: "b", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	head, before = s.Head(), versions()
	_, err = try("a memory over the quota", func(ctx context.Context) error {
		_, err := s.Write(ctx, WriteInput{Path: "/c.md", Content: "c", Actor: apiActor})
		return err
	})
	if ErrorRule(err) != RuleQuota {
		t.Fatalf("a memory over the quota: %v, want the quota rule", err)
	}
}

// Trial writes queued among real ones make nothing, and take nothing from the real ones'
// groups.
func TestTrialsAmongWrites(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.Write(ctx, WriteInput{Path: fmt.Sprintf("/real/%d.md", i), Content: "real", Actor: apiActor})
			errs <- err
		}()
		go func() {
			defer wg.Done()
			var res TrialResult
			_, err := s.Write(Trial(ctx, &res), WriteInput{Path: fmt.Sprintf("/tried/%d.md", i), Content: "tried", Actor: apiActor})
			if err == nil && !res.Changes {
				err = fmt.Errorf("trial %d: no change", i)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"/real/", "/tried/"} {
		p, err := s.List(ctx, ListOptions{PathPrefix: prefix, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		want := 100
		if prefix == "/tried/" {
			want = 0
		}
		if len(p.Items) != want {
			t.Fatalf("%s holds %d memories, want %d", prefix, len(p.Items), want)
		}
	}
	// The trees that the trials built are not in main's history (git fsck finds main whole).
	fsck(t, s)
}

// groupCounter counts the groups that reach main.
type groupCounter struct {
	nopObserver
	groups            atomic.Int64
	redacted, refused atomic.Int64
}

func (g *groupCounter) GroupCommitted(string, int, time.Duration, time.Duration) { g.groups.Add(1) }
func (g *groupCounter) SecretsRefused(_ string, redacted bool) {
	if redacted {
		g.redacted.Add(1)
	} else {
		g.refused.Add(1)
	}
}

// Trials queued among writes do not split the writes into groups of their own: a client
// whose writes are all tried (a propose key) would otherwise cost everyone else's writes a
// journal sync each.
func TestTrialsDoNotSplitGroups(t *testing.T) {
	ctx := context.Background()
	obs := &groupCounter{}
	d := newTestDataDir(t, Options{Observer: obs})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "groups", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	// Hold the writer, queue real writes and trials in turn, then let it go.
	running, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() { held <- s.runTask(ctx, func() error { close(running); <-release; return nil }) }()
	<-running
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	queued := func(n int) {
		for len(s.reqs) < n {
			time.Sleep(time.Millisecond)
		}
	}
	for i := range 10 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.Write(ctx, WriteInput{Path: fmt.Sprintf("/real/%d.md", i), Content: "real", Actor: apiActor})
			errs <- err
		}()
		queued(2*i + 1)
		go func() {
			defer wg.Done()
			var res TrialResult
			_, err := s.Write(Trial(ctx, &res), WriteInput{Path: fmt.Sprintf("/tried/%d.md", i), Content: "tried", Actor: apiActor})
			errs <- err
		}()
		queued(2*i + 2)
	}
	before := obs.groups.Load()
	close(release)
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := obs.groups.Load() - before; n != 1 {
		t.Fatalf("10 writes queued among 10 trials reached main in %d groups, want 1", n)
	}
}

// A trial leaves the writer's clock as it was: a version made after it is not dated by it.
func TestTrialLeavesTheClock(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	clock := func() time.Time { return time.UnixMilli(now.Load()).UTC() }
	d := newTestDataDir(t, Options{Clock: clock})
	now.Store(1_000_000)
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "clock", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	now.Store(3_000_000) // the clock, later stepped back
	var res TrialResult
	if _, err := s.Write(Trial(ctx, &res), WriteInput{Path: "/a.md", Content: "a", Actor: apiActor}); err != nil || !res.Changes {
		t.Fatalf("trial: %+v, %v", res, err)
	}
	now.Store(2_000_000)
	w, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "a", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Version.CreatedAt.UnixMilli(); got != 2_000_000 {
		t.Fatalf("the version is dated %d, want 2000000: the trial moved the writer's clock", got)
	}
}

// A trial leaves no tree in the writer's cache that main does not hold.
func TestTrialLeavesNoTrees(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Write(ctx, WriteInput{Path: "/x/a.md", Content: "a", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	cached := func() (map[plumbing.Hash]bool, int) {
		keys := map[plumbing.Hash]bool{}
		var entries int
		if err := s.runTask(ctx, func() error {
			for h := range s.trees {
				keys[h] = true
			}
			entries = s.treeEntries
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return keys, entries
	}
	before, entries := cached()
	var res TrialResult
	if _, err := s.Write(Trial(ctx, &res), WriteInput{Path: "/x/y/b.md", Content: "b", Actor: apiActor}); err != nil || !res.Changes {
		t.Fatalf("trial: %+v, %v", res, err)
	}
	after, n := cached()
	for h := range after {
		if !before[h] {
			t.Errorf("tree %s, which the trial built, is in the cache", h)
		}
	}
	if n > entries {
		t.Errorf("the cache holds %d entries after the trial, %d before", n, entries)
	}
}

// A trial counts a refusal for secrets (the write goes no further), not a redaction, which
// the write that follows it counts.
func TestTrialSecretsMetric(t *testing.T) {
	ctx := context.Background()
	sample := secrettest.Samples()[0]
	for _, mode := range []SecretsPolicy{SecretsReject, SecretsRedact} {
		obs := &groupCounter{}
		_, s := newPolicyStore(t, Options{Observer: obs}, Policy{Secrets: mode})
		var res TrialResult
		_, err := s.Write(Trial(ctx, &res), WriteInput{Path: "/s.md", Content: sample.Content, Actor: apiActor})
		if (err == nil) != (mode == SecretsRedact) {
			t.Fatalf("%s: trial: %v", mode, err)
		}
		want := [2]int64{1, 0} // refused, redacted
		if mode == SecretsRedact {
			want = [2]int64{0, 0}
		}
		if got := [2]int64{obs.refused.Load(), obs.redacted.Load()}; got != want {
			t.Fatalf("%s: a trial counted %d refused and %d redacted, want %v", mode, got[0], got[1], want)
		}
	}
}

// What does not go through the writer's groups cannot be tried: given a trial's context,
// it refuses and does nothing, rather than doing it for real.
func TestTrialRefusedOutsideTheWriter(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	d := newTestDataDir(t, Options{})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "plain", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "a", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "b", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	var res TrialResult
	tctx := Trial(ctx, &res)
	dir := filepath.Join(t.TempDir(), "fork")
	head := s.Head()
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"Fork", func() error { return s.Fork(tctx, dir) }},
		{"SetBranch", func() error { return s.SetBranch(tctx, ProposalBranches+"x", head) }},
		{"ReceivePush", func() error { return s.ReceivePush(tctx, []string{head}, "key_x") }},
		{"GC", func() error { _, err := s.GC(tctx); return err }},
		{"Reindex", func() error { return d.Reindex(tctx, s.ID(), nil) }},
		{"CreateStore", func() error {
			_, err := d.CreateStore(tctx, CreateStoreInput{Name: "tried", Actor: apiActor})
			return err
		}},
		{"Redact", func() error {
			_, err := s.Redact(tctx, RedactInput{VersionID: w.Version.ID, Actor: apiActor})
			return err
		}},
	} {
		if err := c.do(); err == nil {
			t.Errorf("%s with a trial's context: no error", c.name)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the tried fork is there: %v", err)
	}
	if b, err := s.Branches(ctx, ProposalBranches); err != nil || len(b) != 0 {
		t.Errorf("branches %v, %v; want none", b, err)
	}
	if v, err := s.Version(ctx, w.Version.ID, true); err != nil || v.RedactedAt != nil {
		t.Errorf("the version after a tried redaction: %+v, %v", v, err)
	}
	if l, err := d.ListStores(ctx, StoreListOptions{}); err != nil || len(l.Stores) != 1 {
		t.Errorf("stores %+v, %v; want the one", l, err)
	}
}
