package gitsync

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestForcePush: after main is rewritten (as redaction does), ForcePush replaces the remote's
// main, but only while the remote's main is the one last seen: over a main that another
// replica moved meanwhile it is refused.
func TestForcePush(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "remote.git")
	git(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)
	a := startServer(t, "a", nil)
	var st struct{ ID string }
	if err := a.post("/v1/memory_stores", map[string]string{"name": "team"}, &st); err != nil {
		t.Fatal(err)
	}
	if _, err := a.write(st.ID, "/secret.md", "a secret\n"); err != nil {
		t.Fatal(err)
	}
	r, err := Add(a.dir, st.ID, "team", "origin", remote, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := a.store(t, st.ID)
	if _, err := a.y.Sync(ctx, s, r); err != nil {
		t.Fatal(err)
	}
	// Rewrite main: the last commit again, with another message.
	repo := s.RepoPath()
	head := strings.TrimSpace(git(t, repo, "rev-parse", "main"))
	rewritten := strings.TrimSpace(git(t, repo, "commit-tree", head+"^{tree}", "-p", head+"^", "-m", "rewritten"))
	git(t, repo, "update-ref", "refs/heads/main", rewritten, head)
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}

	// Another replica moves the remote's main: the lease no longer holds.
	other := filepath.Join(t.TempDir(), "other")
	git(t, filepath.Dir(other), "clone", "-q", remote, other)
	git(t, other, "commit", "-q", "--allow-empty", "-m", "bob")
	git(t, other, "push", "-q", "origin", "main")
	moved := strings.TrimSpace(git(t, remote, "rev-parse", "main"))
	if _, err := a.y.ForcePush(ctx, s); err == nil || !strings.Contains(err.Error(), "stale info") {
		t.Fatalf("force-push over a moved remote: %v", err)
	}
	if got := strings.TrimSpace(git(t, remote, "rev-parse", "main")); got != moved {
		t.Fatalf("remote main moved to %s", got)
	}

	// Once the remote's main is the one last seen, the force-push replaces it.
	git(t, remote, "update-ref", "refs/heads/main", head, moved)
	pushed, err := a.y.ForcePush(ctx, s)
	if err != nil || len(pushed) != 1 || pushed[0] != "origin" {
		t.Fatalf("force-push: %v %v", pushed, err)
	}
	if got := strings.TrimSpace(git(t, remote, "rev-parse", "main")); got != rewritten {
		t.Fatalf("remote main %s, want %s", got, rewritten)
	}
	states, _ := States(a.dir, st.ID)
	if states["origin"].RemoteHead != rewritten || states["origin"].LastError != "" {
		t.Fatalf("state after force-push: %+v", states["origin"])
	}
}
