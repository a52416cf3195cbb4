package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestPacking writes enough to pack loose objects many times and checks that the packs are
// merged, no loose objects pile up, every memory still reads, and git fsck is clean.
func TestPacking(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{MaxPacks: 4})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "packs", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/p%d/n%d.md", i%7, i)
		if _, err := s.Write(ctx, WriteInput{Path: p, Content: fmt.Sprint("note ", i%50), Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	// A loose object such as a push leaves behind is packed too.
	blob := strings.TrimSpace(gitIn(t, s.RepoPath(), "hash-object", "-w", "--stdin", "--path", "x"))
	if err := s.runTask(ctx, func() error { s.packAndMerge(idlePacks); return nil }); err != nil {
		t.Fatal(err)
	}
	packs, err := filepath.Glob(filepath.Join(s.RepoPath(), "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	if len(packs) > idlePacks {
		t.Errorf("%d packs after %d writes; want at most %d", len(packs), n, idlePacks)
	}
	if _, err := s.repo.Blob(plumbing.NewHash(blob)); err != nil {
		t.Errorf("the packed loose object: %v", err)
	}
	st, err := s.repo.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.LooseObjects != 0 {
		t.Errorf("%d loose objects left after maintenance", st.LooseObjects)
	}
	for i := 0; i < n; i++ {
		m, err := s.GetByPath(ctx, fmt.Sprintf("/p%d/n%d.md", i%7, i), true)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := *m.Content, fmt.Sprint("note ", i%50); got != want {
			t.Fatalf("content of memory %d: got %q, want %q", i, got, want)
		}
	}
	fsck(t, s)
}

// TestMergeDeltaPack merges a pack that git wrote with deltas (as a push or git gc leaves
// them): deltas are resolved and written whole, and everything still reads.
func TestMergeDeltaPack(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	long := strings.Repeat("a line that repeats, so that git stores deltas\n", 50)
	for i := 0; i < 40; i++ {
		if _, err := s.Write(ctx, WriteInput{Path: "/notes/n.md", Content: long + fmt.Sprint(i), Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.runTask(ctx, func() error {
		gitIn(t, s.RepoPath(), "repack", "-a", "-d", "-f", "-q")
		s.repo.Reload()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if out := gitIn(t, s.RepoPath(), "verify-pack", "-v", mustGlob(t, s.RepoPath()+"/objects/pack/*.idx")); !strings.Contains(out, "chain length") {
		t.Fatalf("git repack wrote no deltas:\n%s", out)
	}
	for i := 40; i < 45; i++ {
		s.Write(ctx, WriteInput{Path: "/notes/n.md", Content: long + fmt.Sprint(i), Actor: apiActor})
	}
	if err := s.runTask(ctx, func() error { _, err := s.repo.MergePacks(1); return err }); err != nil {
		t.Fatal(err)
	}
	if n := len(mustGlobAll(t, s.RepoPath()+"/objects/pack/*.pack")); n != 1 {
		t.Fatalf("%d packs after merging down to one", n)
	}
	page, err := s.Versions(ctx, VersionFilter{Limit: 100, WithContent: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Versions) != 45 {
		t.Fatalf("%d versions", len(page.Versions))
	}
	for _, v := range page.Versions {
		if sha256Hex(*v.Content) != v.ContentSHA256 {
			t.Fatalf("version %s reads back wrong", v.ID)
		}
	}
	fsck(t, s)
}

func mustGlobAll(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustGlob(t *testing.T, pattern string) string {
	t.Helper()
	m := mustGlobAll(t, pattern)
	if len(m) != 1 {
		t.Fatalf("%s matches %d files", pattern, len(m))
	}
	return m[0]
}

// TestWriteRefLocked: a write while a git process holds main.lock fails with the store's
// error (its kind and a message that names the lock file), and changes nothing.
func TestWriteRefLocked(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	mustWrite(t, s, "/a.md", "one", apiActor)
	head := s.Head()
	lock := filepath.Join(s.RepoPath(), mainRef+".lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(lock)
	_, err := s.Write(ctx, WriteInput{Path: "/b.md", Content: "two", Actor: apiActor})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnavailable || !errors.Is(err, ErrRefLocked) {
		t.Fatalf("write with main.lock held: %v; want a %s error", err, KindUnavailable)
	}
	if want := mainRef + " is locked by another git process (" + lock + " exists); try again in a moment"; e.Message != want {
		t.Errorf("message %q; want %q", e.Message, want)
	}
	if got := s.Head(); got != head {
		t.Errorf("head moved from %s to %s", head, got)
	}
}

// TestMergesBesideWrites: with merges running beside the writer (a pack limit of 2 makes
// one after nearly every group), 16 writers and 4 readers go on for a while, with a gc in
// the middle; every answered write reads back, no read fails, and git fsck is clean.
func TestMergesBesideWrites(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{MaxPacks: 2})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "merges", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var reads atomic.Int64
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := s.List(ctx, ListOptions{Limit: 50, WithContent: true})
				if err != nil {
					t.Errorf("list during merges: %v", err)
					return
				}
				reads.Add(int64(len(p.Items)))
			}
		}()
	}
	var ww sync.WaitGroup
	for w := 0; w < writers; w++ {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := 0; i < each; i++ {
				p := fmt.Sprintf("/w%02d/n%03d.md", w, i)
				if _, err := s.Write(ctx, WriteInput{Path: p, Content: fmt.Sprintf("writer %d note %d", w, i), Actor: apiActor}); err != nil {
					t.Errorf("write %s: %v", p, err)
					return
				}
				if w == 0 && i%5 == 4 {
					if _, err := s.GC(ctx); err != nil && !errors.Is(err, ErrNoGit) {
						t.Errorf("gc during writes: %v", err)
					}
				}
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			m, err := s.GetByPath(ctx, fmt.Sprintf("/w%02d/n%03d.md", w, i), true)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("writer %d note %d", w, i); *m.Content != want {
				t.Fatalf("%s: %q, want %q", m.Path, *m.Content, want)
			}
		}
	}
	if reads.Load() == 0 {
		t.Error("the readers read nothing")
	}
	fsck(t, s)
}

// TestMaintenanceReportsWork: a maintenance run that finds nothing to merge or pack, as most
// of the writer's asks do while a merge runs, is not reported (the merges metric counted
// them); one that merges, or packs a loose object, is.
func TestMaintenanceReportsWork(t *testing.T) {
	ctx := context.Background()
	runs := &mergeTimer{}
	runs.start()
	d := newTestDataDir(t, Options{MaxPacks: 64, IdlePack: time.Hour, Observer: runs}) // no idle run beside
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "quiet", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.Write(ctx, WriteInput{Path: fmt.Sprintf("/n%d.md", i), Content: "note", Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	s.maintain(64)
	if n := runs.count(); n != 0 {
		t.Fatalf("%d runs reported with nothing to merge", n)
	}
	s.maintain(1)
	if n := runs.count(); n != 1 {
		t.Fatalf("%d runs reported after a merge; want 1", n)
	}
	gitIn(t, s.RepoPath(), "hash-object", "-w", "--stdin", "--path", "x")
	s.maintain(64)
	if n := runs.count(); n != 2 {
		t.Fatalf("%d runs reported after packing a loose object; want 2", n)
	}
}
