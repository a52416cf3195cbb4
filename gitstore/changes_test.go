package gitstore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// changeLines renders changes as "path id-or-gone content" lines, reading each blob.
func changeLines(t *testing.T, s *Store, cs []Change) []string {
	t.Helper()
	var out []string
	for _, c := range cs {
		if c.MemoryID == "" {
			out = append(out, c.Path+" gone")
			continue
		}
		content, err := s.Blob(context.Background(), c.Blob)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %q", c.Path, c.MemoryID, content))
	}
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// TestChanges checks the diff that derived views (search) read: creations, edits, renames
// and deletions between two commits, the union over several starting commits, the signal
// when main moves, and a commit made with the git CLI.
func TestChanges(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	write := func(path, content string) string {
		t.Helper()
		res, err := s.Write(ctx, WriteInput{Path: path, Content: content, Actor: apiActor})
		if err != nil {
			t.Fatal(err)
		}
		return res.Memory.ID
	}
	a := write("/a.md", "alpha")
	b := write("/dir/b.md", "beta")
	head, cs, err := s.Changes(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if head != s.Head() || head == "" {
		t.Fatalf("Changes head %q, Head %q", head, s.Head())
	}
	sameLines(t, "from the empty tree", changeLines(t, s, cs), []string{
		`/a.md ` + a + ` "alpha"`, `/dir/b.md ` + b + ` "beta"`})

	moved := s.Moved()
	select {
	case <-moved:
		t.Fatal("Moved is closed before main moved")
	default:
	}
	h1 := head
	c := write("/c.md", "gamma")
	waitClosed(t, moved, "Moved after a write")
	if _, err := s.UpdateMemory(ctx, UpdateInput{ID: a, Path: ptr("/z/a2.md"), Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, DeleteInput{Path: "/dir/b.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	h2, cs, err := s.Changes(ctx, h1)
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, "h1..h2", changeLines(t, s, cs), []string{
		`/a.md gone`, `/c.md ` + c + ` "gamma"`, `/dir/b.md gone`, `/z/a2.md ` + a + ` "alpha"`})

	// Unchanged heads give nothing; the union over two starting points names each path once.
	if _, cs, err := s.Changes(ctx, h2); err != nil || len(cs) != 0 {
		t.Fatalf("Changes(head) = %v, %v; want none", cs, err)
	}
	write("/c.md", "gamma 2")
	_, cs, err = s.Changes(ctx, h1, h2)
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, "h1 and h2 to head", changeLines(t, s, cs), []string{
		`/a.md gone`, `/c.md ` + c + ` "gamma 2"`, `/dir/b.md gone`, `/z/a2.md ` + a + ` "alpha"`})

	// A commit made with git and pushed: Changes catches up and Moved signals it.
	h3 := s.Head()
	moved = s.Moved()
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	writeFile(t, filepath.Join(wt, "people/ann.md"), "likes tea\n")
	gitIn(t, wt, "rm", "-q", "c.md")
	pushAll(t, wt, "by hand")
	latest, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(gitIn(t, wt, "rev-parse", "HEAD")); latest != want {
		t.Fatalf("Latest = %s, want the pushed commit %s", latest, want)
	}
	waitClosed(t, moved, "Moved after a push")
	_, cs, err = s.Changes(ctx, h3)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := s.GetByPath(ctx, "/people/ann.md", false)
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, "pushed commit", changeLines(t, s, cs), []string{`/c.md gone`, `/people/ann.md ` + ann.ID + ` "likes tea\n"`})

	// A commit the repository does not have is not found; a malformed one is invalid.
	if _, _, err := s.Changes(ctx, strings.Repeat("ab", 20)); !IsKind(err, KindNotFound) {
		t.Errorf("Changes(unknown commit) = %v, want not_found", err)
	}
	if _, _, err := s.Changes(ctx, "nope"); !IsKind(err, KindInvalid) {
		t.Errorf("Changes(nope) = %v, want invalid", err)
	}
	if _, err := s.Blob(ctx, strings.Repeat("cd", 20)); !IsKind(err, KindNotFound) {
		t.Errorf("Blob(unknown) = %v, want not_found", err)
	}
}

// waitClosed fails the test if ch is not closed within a bound far above any normal delay.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not signalled", what)
	}
}

func ptr[T any](v T) *T { return &v }
