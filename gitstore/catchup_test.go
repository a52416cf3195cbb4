package gitstore

import (
	"context"
	"path/filepath"
	"testing"
)

// TestForcedRewriteRebuildsCatalog: main forced to a history that no longer holds the
// catalog's commit (a force push made with git) is read afresh: what only the old history
// had is gone, what the new one has is there.
func TestForcedRewriteRebuildsCatalog(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	mustWrite(t, s, "/keep.md", "kept\n", apiActor)
	mustWrite(t, s, "/gone.md", "only in the old history\n", apiActor)

	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	gitIn(t, wt, "reset", "-q", "--hard", "HEAD~1")
	writeFile(t, filepath.Join(wt, "new.md"), "only in the new history\n")
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "rewritten")
	gitIn(t, wt, "push", "-q", "-f", "origin", "main")

	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetByPath(ctx, "/gone.md", false); !IsKind(err, KindNotFound) {
		t.Errorf("/gone.md after the rewrite: %v", err)
	}
	for _, p := range []string{"/keep.md", "/new.md"} {
		if _, err := s.GetByPath(ctx, p, false); err != nil {
			t.Errorf("%s after the rewrite: %v", p, err)
		}
	}
}

// The catch-up reads trees through a treeReader: memoryAt must still reach git's log
// through it (touchFinder) rather than walk a long unchanged stretch commit by commit.
func TestTreeReaderFindsTouches(t *testing.T) {
	s := newTestStore(t)
	if _, ok := objectReader(newTreeReader(s.repo)).(touchFinder); !ok {
		t.Error("a treeReader over the repository is no touchFinder")
	}
}
