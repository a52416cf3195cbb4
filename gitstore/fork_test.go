package gitstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// forkedStore is a data directory with a store holding /shared.md, forked into dir.
func forkedStore(t *testing.T) (*DataDir, *Store, string) {
	t.Helper()
	d := newTestDataDir(t, Options{})
	s := mustCreate(t, d, "test")
	mustWrite(t, s, "/shared.md", "one\n", apiActor)
	dir := filepath.Join(t.TempDir(), "fork")
	if err := s.Fork(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return d, s, dir
}

// openedFork forks s into a new folder and opens the fork there; the caller closes it.
func openedFork(t *testing.T, d *DataDir, s *Store) (f *Store, dir string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "fork")
	if err := s.Fork(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFork(s.ID(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// TestForkIntegrate: writes to a fork stay out of main; taken in, they are the versions they
// were in the fork (ids, actors), and main's writes made meanwhile stay.
func TestForkIntegrate(t *testing.T) {
	ctx := context.Background()
	d, s, dir := forkedStore(t)
	f, err := d.OpenFork(s.ID(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.CloseFork()
	proposer := Actor{Type: SessionActor, ID: "sesn_proposer"}
	res, err := f.Write(ctx, WriteInput{Path: "/idea.md", Content: "an idea\n", Actor: proposer})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.GetByPath(ctx, "/shared.md", true); err != nil || *got.Content != "one\n" {
		t.Errorf("the fork reads main's memory: %v %v", got.Content, err)
	}
	if _, err := s.GetByPath(ctx, "/idea.md", false); !IsKind(err, KindNotFound) {
		t.Errorf("the fork's write reached main: %v", err)
	}
	mustWrite(t, s, "/other.md", "meanwhile\n", apiActor)

	head, err := s.TakeBranch(ctx, dir, "refs/heads/proposals/p1")
	if err != nil {
		t.Fatal(err)
	}
	if head != f.Head() {
		t.Errorf("took %s, the fork's head is %s", head, f.Head())
	}
	if _, err := s.Integrate(ctx, "proposal p1", head); err != nil {
		t.Fatal(err)
	}
	v, err := s.Version(ctx, res.Version.ID, false)
	if err != nil {
		t.Fatalf("the fork's version is not in main: %v", err)
	}
	if v.CreatedBy.ID != proposer.ID || v.Path != "/idea.md" || v.MemoryID != res.Memory.ID {
		t.Errorf("version in main: %+v, want the fork's", v)
	}
	for _, p := range []string{"/shared.md", "/other.md", "/idea.md"} {
		if _, err := s.GetByPath(ctx, p, false); err != nil {
			t.Errorf("%s after the merge: %v", p, err)
		}
	}
}

// TestForkAfterCrash: a fork's main.lock and half-written pack files that a crash left are
// removed when the fork opens, and the fork takes writes.
func TestForkAfterCrash(t *testing.T) {
	d, s, dir := forkedStore(t)
	repo := filepath.Join(dir, "repo.git")
	left := []string{filepath.Join(repo, mainRef+".lock"), filepath.Join(repo, "objects", "pack", "tmp_pack_x")}
	for _, p := range left {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := d.OpenFork(s.ID(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.CloseFork()
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	mustWrite(t, f, "/idea.md", "an idea\n", apiActor)
}
