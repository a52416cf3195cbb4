package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// TestSyncCarriesRedaction: a redaction on one replica reaches the remote and the other
// replica through sync. The remote still holding the history from before the redaction is
// force-pushed over (without fetching the old history back); the other replica, which wrote
// on top of the old history meanwhile, takes the redaction as it was made, so that the two
// histories join again, and its own write stays. Afterwards no object of either replica,
// and none reachable in the remote, holds the redacted content.
func TestSyncCarriesRedaction(t *testing.T) {
	ctx := context.Background()
	const canary = "the launch phrase is purple-walrus-0451\n"
	remote, a, id := serverWithRemote(t)
	first, err := a.write(id, "/launch.md", canary)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.write(id, "/launch.md", "moved to the vault\n"); err != nil {
		t.Fatal(err)
	}
	sa, ra := syncOnce(t, a, id, remote)
	b := startServer(t, "b", importFrom(t, remote))
	rb, err := Add(b.dir, id, "team", "origin", remote, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sb := b.store(t, id)

	redactor := gitstore.UserActorFor("Ann", "ann@example.com")
	red, err := sa.Redact(ctx, gitstore.RedactInput{VersionID: first.version, Actor: redactor})
	if err != nil {
		t.Fatal(err)
	}
	// b writes on top of the history from before the redaction.
	own, err := b.write(id, "/b.md", "b's own note\n")
	if err != nil {
		t.Fatal(err)
	}

	res, err := a.y.Sync(ctx, sa, ra)
	if err != nil || !res.Replaced || !res.Pushed {
		t.Fatalf("sync after the redaction: %+v %v", res, err)
	}
	if got := strings.TrimSpace(git(t, remote, "rev-parse", "main")); got != red.NewHead {
		t.Fatalf("remote main %s, want the redacted history %s", got, red.NewHead)
	}
	res, err = b.y.Sync(ctx, sb, rb)
	if err != nil || len(res.Redacted) != 1 || res.Redacted[0] != first.version || !res.Pushed {
		t.Fatalf("b's sync: %+v %v", res, err)
	}
	if !strings.Contains(res.Summary(), "redacted 1 version as the remote did") {
		t.Fatalf("summary: %s", res.Summary())
	}
	if res, err := a.y.Sync(ctx, sa, ra); err != nil || res.Outcome != gitstore.FastForward {
		t.Fatalf("a's last sync: %+v %v", res, err)
	}
	if sa.Head() != sb.Head() {
		t.Fatalf("mains differ: a %s, b %s", sa.Head(), sb.Head())
	}
	// b's own write stays, with its ids; the redaction is the same on both replicas.
	m, err := sa.GetByPath(ctx, "/b.md", false)
	if err != nil || m.ID != own.memory {
		t.Fatalf("b's memory on a: %+v %v", m, err)
	}
	for _, s := range []*gitstore.Store{sa, sb} {
		v, err := s.Version(ctx, first.version, true)
		if err != nil || v.RedactedAt == nil || v.Content != nil || v.RedactedBy == nil || v.RedactedBy.ID != redactor.ID {
			t.Fatalf("redacted version on %s: %+v %v", s.RepoPath(), v, err)
		}
	}
	for _, repo := range []string{sa.RepoPath(), sb.RepoPath()} {
		if all := git(t, repo, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(all, "purple-walrus") {
			t.Fatalf("an object of %s still holds the redacted content", repo)
		}
	}
	// Every blob of the remote's history shows in the patch of the commit that brought it.
	if strings.Contains(git(t, remote, "log", "-p", "main"), "purple-walrus") {
		t.Fatal("the remote's main still reaches the redacted content")
	}
}

// TestSyncRefusesWorkOnRedactedHistory: when someone pushed to the remote on top of the
// history from before a redaction here, sync neither merges that history back in nor
// force-pushes over their commit: it refuses, says why, and main stays.
func TestSyncRefusesWorkOnRedactedHistory(t *testing.T) {
	ctx := context.Background()
	remote, a, id := serverWithRemote(t)
	first, err := a.write(id, "/launch.md", "the launch phrase is purple-walrus-0451\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.write(id, "/launch.md", "moved to the vault\n"); err != nil {
		t.Fatal(err)
	}
	sa, ra := syncOnce(t, a, id, remote)
	if _, err := sa.Redact(ctx, gitstore.RedactInput{VersionID: first.version, Actor: gitstore.UserActorFor("Ann", "ann@example.com")}); err != nil {
		t.Fatal(err)
	}
	// Bob pushes on top of the old history, with plain git.
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(clone), "clone", "-q", remote, clone)
	if err := os.WriteFile(filepath.Join(clone, "bob.md"), []byte("bob's note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, clone, "add", "bob.md")
	git(t, clone, "commit", "-q", "-m", "bob's note")
	git(t, clone, "push", "-q", "origin", "main")
	bobs := strings.TrimSpace(git(t, remote, "rev-parse", "main"))
	before := sa.Head()

	_, err = a.y.Sync(ctx, sa, ra)
	if err == nil || !strings.Contains(err.Error(), "which a redaction here rewrote") || !strings.Contains(err.Error(), "nothing was merged") {
		t.Fatalf("sync over work on the old history: %v", err)
	}
	if sa.Head() != before {
		t.Fatalf("main moved from %s to %s", before, sa.Head())
	}
	if got := strings.TrimSpace(git(t, remote, "rev-parse", "main")); got != bobs {
		t.Fatalf("the remote's main moved from bob's commit %s to %s", bobs, got)
	}
}
