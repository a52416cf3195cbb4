package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func TestFolders(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	ids := map[string]string{}
	for _, p := range []string{"/a/x.md", "/a/b/y.md", "/a/b/z.md", "/ab.md"} {
		res, err := s.Write(ctx, WriteInput{Path: p, Content: "content of " + p, Actor: apiActor})
		if err != nil {
			t.Fatal(err)
		}
		ids[p] = res.Memory.ID
	}
	head := s.Head()

	// Refusals change nothing.
	for _, tc := range []struct {
		name string
		err  error
		kind Kind
		msg  string
	}{
		{"move a missing folder", moveErr(s, "/nope", "/q"), KindNotFound, "no memory or folder at /nope"},
		{"move onto a memory", moveErr(s, "/a", "/ab.md"), KindPathConflict, "path /ab.md is already taken by memory " + ids["/ab.md"]},
		{"move onto a folder", moveErr(s, "/ab.md", "/a/b"), KindPathConflict, "path /a/b is a directory that holds memory " + ids["/a/b/y.md"] + " at /a/b/y.md: a directory cannot also be a memory"},
		{"move below a memory", moveErr(s, "/a", "/ab.md/a"), KindPathConflict, "path /ab.md/a is below memory " + ids["/ab.md"] + " at /ab.md: a memory cannot also be a directory"},
		{"move into itself", moveErr(s, "/a", "/a/b/c"), KindInvalid, "cannot move the folder /a into itself (/a/b/c)"},
		{"move too deep", moveErr(s, "/a", strings.Repeat("/d", 19)), KindInvalid,
			"moving /a/b/y.md to " + strings.Repeat("/d", 19) + "/b/y.md: path \"" + strings.Repeat("/d", 19) + "/b/y.md\" has 21 segments; the limit is 20"},
		{"delete a missing folder", deleteErr(s, "/a/c"), KindNotFound, "no memory or folder at /a/c"},
		{"delete a bad path", deleteErr(s, "/a/"), KindInvalid, `path "/a/" has an empty segment (a doubled or trailing /)`},
	} {
		if !IsKind(tc.err, tc.kind) || tc.err.Error() != tc.msg {
			t.Errorf("%s: got %v, want %s %q", tc.name, tc.err, tc.kind, tc.msg)
		}
	}
	if s.Head() != head {
		t.Fatal("a refused change moved main")
	}

	moved, err := s.MovePath(ctx, MovePathInput{From: "/a", To: "/c/a", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range moved {
		paths = append(paths, m.Memory.Path)
		if old := "/a" + strings.TrimPrefix(m.Memory.Path, "/c/a"); ids[old] != m.Memory.ID || m.Version == nil || m.Version.Operation != OpModified {
			t.Errorf("moved %s: id %s (was %s), version %+v", m.Memory.Path, m.Memory.ID, ids[old], m.Version)
		}
	}
	if got, want := strings.Join(paths, " "), "/c/a/b/y.md /c/a/b/z.md /c/a/x.md"; got != want {
		t.Errorf("moved %q, want %q", got, want)
	}
	// A memory may move below its own old path.
	if _, err := s.MovePath(ctx, MovePathInput{From: "/ab.md", To: "/ab.md/inner.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	deleted, err := s.DeletePath(ctx, DeletePathInput{Path: "/c", Actor: apiActor})
	if err != nil || len(deleted) != 3 {
		t.Fatalf("delete /c: %v, %+v", err, deleted)
	}
	page, err := s.List(ctx, ListOptions{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Memory.Path != "/ab.md/inner.md" {
		t.Fatalf("left: %+v, %v", page.Items, err)
	}
	// Each memory changed got its own commit: 4 creates, 3 moves, 1 move, 3 deletes.
	out, err := exec.Command("git", "--git-dir", s.RepoPath(), "log", "--format=%s").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "\n"); got != 1+4+3+1+3 {
		t.Errorf("%d commits:\n%s", got, out)
	}
	if out, err := exec.Command("git", "--git-dir", s.RepoPath(), "fsck", "--full", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

func moveErr(s *Store, from, to string) error {
	_, err := s.MovePath(context.Background(), MovePathInput{From: from, To: to, Actor: apiActor})
	return err
}

func deleteErr(s *Store, path string) error {
	_, err := s.DeletePath(context.Background(), DeletePathInput{Path: path, Actor: apiActor})
	return err
}

// TestEncodeTreeAsGoGit: the tree encoder gives the bytes and hash that go-git's does, for
// every kind of entry.
func TestEncodeTreeAsGoGit(t *testing.T) {
	var entries []object.TreeEntry
	for i, m := range []filemode.FileMode{filemode.Regular, filemode.Dir, filemode.Executable, filemode.Symlink, filemode.Submodule} {
		for j := range 300 {
			var h plumbing.Hash
			h[0], h[1], h[19] = byte(i), byte(j), byte(j>>8)
			entries = append(entries, object.TreeEntry{Name: fmt.Sprintf("e%d-%03d.md", i, j), Mode: m, Hash: h})
		}
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int {
		if gitLess(a, b) {
			return -1
		}
		return 1
	})
	for _, n := range []int{0, 1, len(entries)} {
		got, err := encodeTree(entries[:n])
		if err != nil {
			t.Fatal(err)
		}
		want := &plumbing.MemoryObject{}
		if err := (&object.Tree{Entries: entries[:n]}).Encode(want); err != nil {
			t.Fatal(err)
		}
		if got.Hash() != want.Hash() || got.Size() != want.Size() || got.Type() != plumbing.TreeObject {
			t.Fatalf("%d entries: %s (%d bytes), go-git %s (%d bytes)", n, got.Hash(), got.Size(), want.Hash(), want.Size())
		}
	}
}
