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

// TestSyncKeepsIdsOfRedactedPlainHistory: memories that a person made with plain git keep
// their ids through a redaction of that history and merges over it. Bob pushes plain
// commits to the remote; a redacts the first version of one of his files (so his commits
// are rewritten, and their ids are derived from the hashes they had before); then Bob (with
// plain git again), a and b change and delete his memories and sync, which merges. The ids
// are the same before and after, on both replicas, and after a rebuild of each catalog
// from history.
func TestSyncKeepsIdsOfRedactedPlainHistory(t *testing.T) {
	ctx := context.Background()
	remote, a, id := serverWithRemote(t)
	sa, ra := syncOnce(t, a, id, remote)

	clone, put := cloneToPut(t, remote)
	put("notes.md", "one\ntwo\nthree\nfour\nfive\n")
	put("todo.md", "buy milk\n")
	put("launch.md", "the launch phrase is purple-walrus-0451\n")
	git(t, clone, "commit", "-q", "-m", "bob's notes")
	put("launch.md", "moved to the vault\nline two\nline three\nline four\n")
	git(t, clone, "commit", "-q", "-m", "bob moves the phrase")
	git(t, clone, "push", "-q", "origin", "main")

	if res, err := a.y.Sync(ctx, sa, ra); err != nil || res.Outcome != gitstore.FastForward {
		t.Fatalf("a's sync of bob's commits: %+v %v", res, err)
	}
	b := startServer(t, "b", importFrom(t, remote))
	rb, err := Add(b.dir, id, "team", "origin", remote, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sb := b.store(t, id)
	paths := []string{"/notes.md", "/todo.md", "/launch.md"}
	want := map[string]string{}
	for _, p := range paths {
		m, err := sa.GetByPath(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		want[p] = m.ID
	}
	vs, err := sa.Versions(ctx, gitstore.VersionFilter{MemoryID: want["/launch.md"], Limit: 10})
	if err != nil || len(vs.Versions) != 2 {
		t.Fatalf("versions of launch.md: %+v %v", vs, err)
	}
	first := vs.Versions[len(vs.Versions)-1]
	if _, err := sa.Redact(ctx, gitstore.RedactInput{VersionID: first.ID, Actor: gitstore.UserActorFor("Ann", "ann@example.com")}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.y.Sync(ctx, sa, ra); err != nil || !res.Replaced {
		t.Fatalf("a's sync after the redaction: %+v %v", res, err)
	}
	if res, err := b.y.Sync(ctx, sb, rb); err != nil || len(res.Redacted) != 1 {
		t.Fatalf("b's sync after the redaction: %+v %v", res, err)
	}

	// Bob takes the new history and changes his notes again, with plain git.
	git(t, clone, "fetch", "-q", "origin")
	git(t, clone, "reset", "-q", "--hard", "origin/main")
	put("notes.md", "one\ntwo\nthree\nfour\nfive, by bob\n")
	put("todo.md", "buy milk\nand bread\n")
	put("launch.md", "moved to the vault\nline two\nline three\nline four, by bob\n")
	git(t, clone, "commit", "-q", "-m", "bob again")
	git(t, clone, "push", "-q", "origin", "main")
	// a changes notes.md elsewhere and deletes todo.md; b changes launch.md elsewhere.
	if _, err := a.write(id, "/notes.md", "one, on a\ntwo\nthree\nfour\nfive\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Delete(ctx, gitstore.DeleteInput{ID: want["/todo.md"], Actor: gitstore.UserActorFor("Ann", "ann@example.com")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.write(id, "/launch.md", "moved to the vault, on b\nline two\nline three\nline four\n"); err != nil {
		t.Fatal(err)
	}
	res, err := a.y.Sync(ctx, sa, ra)
	if err != nil || res.Outcome != gitstore.Merged || len(res.Conflicts) != 0 || len(res.TextMerged) != 1 || len(res.Kept) != 1 {
		t.Errorf("a's merge of bob's commit: %+v %v", res, err)
	}
	res, err = b.y.Sync(ctx, sb, rb)
	if err != nil || res.Outcome != gitstore.Merged || len(res.Conflicts) != 0 || len(res.TextMerged) != 1 {
		t.Errorf("b's merge: %+v %v", res, err)
	}
	if res, err := a.y.Sync(ctx, sa, ra); err != nil || res.Outcome != gitstore.FastForward {
		t.Fatalf("a's last sync: %+v %v", res, err)
	}
	check := func(when string) {
		t.Helper()
		for _, s := range []*gitstore.Store{sa, sb} {
			for _, p := range paths {
				m, err := s.GetByPath(ctx, p, false)
				if err != nil || m.ID != want[p] {
					t.Errorf("%s: %s on %s: %+v %v, want id %s", when, p, s.RepoPath(), m, err, want[p])
				}
			}
		}
		if sa, sb := catalogState(t, sa), catalogState(t, sb); sa != sb {
			t.Errorf("%s: catalogs differ:\n%s", when, lineDiff(sa, sb))
		}
	}
	check("after the merges")
	for _, srv := range []*server{a, b} {
		if err := srv.data.Reindex(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("after reindex")
}

// TestSyncTakesRedactionsInOrder: two redactions made on one replica, of consecutive
// versions made with plain git (an edit, and a git mv), reach the other replica through
// sync, which takes them as they were made: its rewritten history is the same commits, with
// no merge. git log lists the newer version's commit first; redacted in that order, the
// rewritten commits got their trailers in another order (Gitmem-Redacted before
// Gitmem-Derived-From), the histories did not join, and the rename's merge made a conflict
// copy.
func TestSyncTakesRedactionsInOrder(t *testing.T) {
	for _, mode := range []string{"edits", "rename"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			remote, a, id := serverWithRemote(t)
			sa, ra := syncOnce(t, a, id, remote)
			clone, put := cloneToPut(t, remote)
			put("launch.md", "secret one\n")
			git(t, clone, "commit", "-q", "-m", "one")
			cur := "launch.md"
			if mode == "rename" {
				git(t, clone, "mv", "launch.md", "moved.md")
				cur = "moved.md"
			} else {
				put("launch.md", "secret two\n")
			}
			git(t, clone, "commit", "-q", "-m", "two")
			put(cur, "fine\n")
			git(t, clone, "commit", "-q", "-m", "three")
			git(t, clone, "push", "-q", "origin", "main")
			if res, err := a.y.Sync(ctx, sa, ra); err != nil || res.Outcome != gitstore.FastForward {
				t.Fatalf("a's sync: %+v %v", res, err)
			}
			b := startServer(t, "b", importFrom(t, remote))
			rb, err := Add(b.dir, id, "team", "origin", remote, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			sb := b.store(t, id)
			m, err := sa.GetByPath(ctx, "/"+cur, false)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := sa.Versions(ctx, gitstore.VersionFilter{MemoryID: m.ID, Limit: 10})
			if err != nil || len(vs.Versions) != 3 {
				t.Fatalf("versions: %+v %v", vs, err)
			}
			ann := gitstore.UserActorFor("Ann", "ann@example.com")
			for _, v := range []gitstore.Version{vs.Versions[2], vs.Versions[1]} { // oldest first
				if _, err := sa.Redact(ctx, gitstore.RedactInput{VersionID: v.ID, Actor: ann}); err != nil {
					t.Fatal(err)
				}
			}
			if res, err := a.y.Sync(ctx, sa, ra); err != nil || !res.Replaced {
				t.Fatalf("a's sync after the redactions: %+v %v", res, err)
			}
			res, err := b.y.Sync(ctx, sb, rb)
			if err != nil || len(res.Redacted) != 2 || res.Outcome == gitstore.Merged {
				t.Fatalf("b's sync, want the 2 redactions taken and no merge: %+v %v", res, err)
			}
			if sa.Head() != sb.Head() {
				t.Fatalf("after b took the redactions, mains differ: a %s, b %s (%+v)\na:\n%s\nb:\n%s", sa.Head(), sb.Head(), res,
					git(t, sa.RepoPath(), "log", "--format=%H %P%n%B", "main"), git(t, sb.RepoPath(), "log", "--format=%H %P%n%B", "main"))
			}
		})
	}
}

// cloneToPut clones remote, and returns the clone and a function that writes a file in it
// and adds it to git's index.
func cloneToPut(t *testing.T, remote string) (string, func(name, content string)) {
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(clone), "clone", "-q", remote, clone)
	return clone, func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(clone, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, clone, "add", name)
	}
}
