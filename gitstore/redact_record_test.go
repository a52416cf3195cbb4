package gitstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// redactionFixture is a store whose history holds a secret at /keys/api.md (pushed with
// plain git, and named by refs/remotes/team/main too), since overwritten; it returns the
// store, the secret's version and the pushed commit.
func redactionFixture(t *testing.T) (*DataDir, *Store, Memory, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "record", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/a.md", "a\n", apiActor)
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	writeFile(t, filepath.Join(wt, "keys/api.md"), "key: MONGOOSE-9981\n")
	pushAll(t, wt, "add keys/api.md")
	pushed := strings.TrimSpace(gitIn(t, wt, "rev-parse", "HEAD"))
	gitIn(t, s.RepoPath(), "update-ref", "refs/remotes/team/main", pushed)
	m, err := s.GetByPath(ctx, "/keys/api.md", false)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/keys/api.md", "key: revoked\n", apiActor)
	return d, s, m, pushed
}

// TestRedactCatalogUpdateFails: when the catalog cannot record a redaction once main has
// moved, the redaction answers an error that says so, not a success; the rewrites it staged
// before the move let the next redaction move the other refs and prune, as if nothing had
// failed.
func TestRedactCatalogUpdateFails(t *testing.T) {
	ctx := context.Background()
	_, s, m, pushed := redactionFixture(t)
	repo := s.RepoPath()
	before := versionsOf(t, s)
	oldHead := s.Head()

	redactionRecordFault = func() error { return errors.New("the catalog's disk failed") }
	_, err := s.Redact(ctx, RedactInput{VersionID: m.VersionID, Actor: apiActor})
	redactionRecordFault = nil
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnavailable ||
		!strings.HasPrefix(e.Message, "version "+m.VersionID+" of memory "+m.ID+" is redacted") || !strings.Contains(e.Message, "redact it again") {
		t.Fatalf("redaction whose catalog update failed: %v", err)
	}
	if gitIn(t, repo, "rev-parse", "main") == oldHead+"\n" {
		t.Fatal("main did not move: the test does not test a failure after the move")
	}
	if !strings.Contains(allObjects(t, repo), "MONGOOSE") || gitIn(t, repo, "rev-parse", "refs/remotes/team/main") != pushed+"\n" {
		t.Fatal("the failed redaction went on to the other refs and the pruning")
	}
	// The rewrites are recorded at once all the same, the catalog taking them again: sync
	// knows a remote's old history for what it is before anyone redacts again.
	if _, ok, err := s.RewrittenTo(ctx, pushed); err != nil || !ok {
		t.Errorf("after the failed update, the rewrite of the pushed commit is unknown (%v)", err)
	}

	res, err := s.Redact(ctx, RedactInput{VersionID: m.VersionID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version.RedactedAt == nil || res.ContentRemains {
		t.Errorf("second redaction %+v", res)
	}
	if strings.Contains(allObjects(t, repo), "MONGOOSE") {
		t.Error("the content is still in the repository after the second redaction")
	}
	to, ok, err := s.RewrittenTo(ctx, pushed)
	if err != nil || !ok {
		t.Fatalf("the pushed commit's rewrite was not recorded: %s %v %v", to, ok, err)
	}
	if got := gitIn(t, repo, "rev-parse", "refs/remotes/team/main"); got != to+"\n" {
		t.Errorf("refs/remotes/team/main is at %s, not at %s, the rewrite of %s", got, to, pushed)
	}
	sameHistory(t, "versions after the redaction", versionsOf(t, s), redactedHistory(before, res.Version))
	s.readCatalog(func(ct catTx) error {
		if head, _ := ct.stagedRewrites(); !head.IsZero() {
			t.Errorf("rewrites still staged for %s", head)
		}
		return nil
	})
	fsck(t, s)
}

// TestStagedRewritesOfAFailedRedaction: rewrites staged by a redaction that never moved main
// (it failed, or the process died, before) are forgotten when the store opens, not recorded.
func TestStagedRewritesOfAFailedRedaction(t *testing.T) {
	ctx := context.Background()
	d, s, _, pushed := redactionFixture(t)
	old := plumbing.NewHash(pushed)
	never := plumbing.NewHash("1111111111111111111111111111111111111111")
	err := s.updateCatalog(func(ct catTx) error {
		return ct.stageRewrites(never, map[plumbing.Hash]plumbing.Hash{old: never})
	})
	if err != nil {
		t.Fatal(err)
	}
	d, s = reopen(t, d, filepath.Dir(filepath.Dir(s.RepoPath())), s.ID())
	t.Cleanup(func() { d.Close() })
	if to, ok, err := s.RewrittenTo(ctx, pushed); err != nil || ok {
		t.Errorf("a rewrite that main never took was recorded: %s -> %s (%v)", pushed, to, err)
	}
	s.readCatalog(func(ct catTx) error {
		if head, _ := ct.stagedRewrites(); !head.IsZero() {
			t.Errorf("rewrites still staged for %s after open", head)
		}
		return nil
	})
	if got := gitIn(t, s.RepoPath(), "rev-parse", "refs/remotes/team/main"); got != pushed+"\n" {
		t.Errorf("refs/remotes/team/main moved to %s", got)
	}
}

// TestRedactOtherAfterFailedUpdate: a redaction of another version, after one whose catalog
// update failed, finishes that one too: its rewrites are recorded before the new ones are
// staged, its other refs move, and its content is pruned.
func TestRedactOtherAfterFailedUpdate(t *testing.T) {
	ctx := context.Background()
	_, s, m, pushed := redactionFixture(t)
	b1 := mustWrite(t, s, "/b.md", "b one\n", apiActor)
	mustWrite(t, s, "/b.md", "b two\n", apiActor)

	// The update fails, and so does settling at once, until the fault goes.
	failing := false
	redactionRecordFault = func() error {
		failing = true
		return errors.New("the catalog's disk failed")
	}
	settleFault = func() error {
		if failing {
			return errors.New("the catalog's disk failed again")
		}
		return nil
	}
	defer func() { settleFault = nil }()
	_, err := s.Redact(ctx, RedactInput{VersionID: m.VersionID, Actor: apiActor})
	redactionRecordFault = nil
	if err == nil {
		t.Fatal("the redaction whose catalog update failed answered a success")
	}
	if _, ok, _ := s.RewrittenTo(ctx, pushed); ok {
		t.Fatal("the rewrites were recorded although settling failed: the test does not test the next redaction")
	}
	failing = false
	if _, err := s.Redact(ctx, RedactInput{VersionID: b1.Version.ID, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	repo := s.RepoPath()
	if strings.Contains(allObjects(t, repo), "MONGOOSE") {
		t.Error("the first redaction's content is still in the repository")
	}
	to, ok, err := s.RewrittenTo(ctx, pushed)
	if err != nil || !ok {
		t.Fatalf("the first redaction's rewrite of the pushed commit is unknown (%v)", err)
	}
	if got := gitIn(t, repo, "rev-parse", "refs/remotes/team/main"); got != to+"\n" {
		t.Errorf("refs/remotes/team/main is at %s, not at %s", got, to)
	}
	fsck(t, s)
}
