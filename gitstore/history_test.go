package gitstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	sessionActor = Actor{Type: SessionActor, ID: "sesn_01HISTORYSESSION00000000", APIKeyID: "apikey_01SESSKEY"}
	bobActor     = UserActorFor("Bob Builder", "bob@example.com")
)

func mustWrite(t testing.TB, s *Store, path, content string, a Actor) WriteResult {
	t.Helper()
	res, err := s.Write(context.Background(), WriteInput{Path: path, Content: content, Actor: a})
	if err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return res
}

func mustUpdate(t *testing.T, s *Store, in UpdateInput) WriteResult {
	t.Helper()
	res, err := s.UpdateMemory(context.Background(), in)
	if err != nil {
		t.Fatalf("update %s: %v", in.ID, err)
	}
	return res
}

func contentOf(t *testing.T, s *Store, id string) string {
	t.Helper()
	m, err := s.Get(context.Background(), id, true)
	if err != nil {
		t.Fatal(err)
	}
	return *m.Content
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	v1 := mustWrite(t, s, "/notes/a.md", "one\ntwo\n", apiActor)
	id := v1.Memory.ID
	mustWrite(t, s, "/notes/a.md", "one\nTWO\n", sessionActor)

	// Restore the first version: a new modified version with its content.
	res, err := s.Restore(ctx, RestoreInput{VersionID: v1.Version.ID, Actor: bobActor})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version == nil || res.Version.Operation != OpModified || res.Version.MemoryID != id || res.Memory.ID != id {
		t.Fatalf("restore made %+v", res)
	}
	if res.Version.CreatedBy.ID != bobActor.ID || res.Memory.ContentSHA256 != v1.Memory.ContentSHA256 {
		t.Errorf("restore version %+v, memory %+v", res.Version, res.Memory)
	}
	if got := contentOf(t, s, id); got != "one\ntwo\n" {
		t.Errorf("content after restore %q", got)
	}
	if msg := gitIn(t, s.RepoPath(), "log", "-1", "--format=%B"); !strings.Contains(msg, "Gitmem-Restored-From: "+v1.Version.ID) ||
		!strings.HasPrefix(msg, "restore /notes/a.md to version "+v1.Version.ID) {
		t.Errorf("restore commit message:\n%s", msg)
	}
	// Restoring the state the memory is in changes nothing.
	again, err := s.Restore(ctx, RestoreInput{VersionID: v1.Version.ID, Actor: bobActor})
	if err != nil || again.Version != nil {
		t.Errorf("second restore: %+v, %v", again, err)
	}

	// A rename, then a restore of the old version: path and content come back.
	renamed := mustUpdate(t, s, UpdateInput{ID: id, Path: ptr("/notes/b.md"), Content: ptr("three\n"), Actor: apiActor})
	res, err = s.Restore(ctx, RestoreInput{VersionID: v1.Version.ID, MemoryID: id, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if res.Memory.Path != "/notes/a.md" || res.Memory.ID != id {
		t.Errorf("restore after rename: %+v", res.Memory)
	}
	if _, err := s.GetByPath(ctx, "/notes/b.md", false); !IsKind(err, KindNotFound) {
		t.Errorf("the renamed path is still there: %v", err)
	}

	// Delete, then restore: the memory comes back with its id and creation time.
	del, err := s.Delete(ctx, DeleteInput{ID: id, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.Restore(ctx, RestoreInput{VersionID: renamed.Version.ID, Actor: sessionActor})
	if err != nil {
		t.Fatal(err)
	}
	if res.Memory.ID != id || res.Memory.Path != "/notes/b.md" || res.Version.Operation != OpModified ||
		!res.Memory.CreatedAt.Equal(v1.Memory.CreatedAt) {
		t.Errorf("restore of a deleted memory: %+v %+v", res.Memory, res.Version)
	}
	if res.Version.CreatedBy.SessionID() != sessionActor.ID {
		t.Errorf("restore by a session: %+v", res.Version.CreatedBy)
	}
	if got := contentOf(t, s, id); got != "three\n" {
		t.Errorf("content after restoring a deleted memory %q", got)
	}

	// Refusals, each changing nothing.
	head := s.Head()
	_, err = s.Restore(ctx, RestoreInput{VersionID: del.ID, Actor: apiActor})
	if !IsKind(err, KindInvalid) || !strings.Contains(err.Error(), "deletion") {
		t.Errorf("restore of a deleted version: %v", err)
	}
	if s.Head() != head {
		t.Errorf("a refused restore moved main")
	}
	other := mustWrite(t, s, "/notes/a.md", "someone else\n", apiActor)
	head = s.Head()
	_, err = s.Restore(ctx, RestoreInput{VersionID: v1.Version.ID, Actor: apiActor})
	var ge *Error
	if !errors.As(err, &ge) || ge.Kind != KindPathConflict || ge.ConflictingMemoryID != other.Memory.ID ||
		!strings.Contains(ge.Message, other.Memory.ID) {
		t.Errorf("restore onto a taken path: %v", err)
	}
	_, err = s.Restore(ctx, RestoreInput{VersionID: v1.Version.ID, MemoryID: other.Memory.ID, Actor: apiActor})
	if !IsKind(err, KindPreconditionFailed) || !strings.Contains(err.Error(), id) {
		t.Errorf("restore of another memory's version: %v", err)
	}
	_, err = s.Restore(ctx, RestoreInput{VersionID: "memver_01NOSUCHVERSION0000000000", Actor: apiActor})
	if !IsKind(err, KindNotFound) {
		t.Errorf("restore of an unknown version: %v", err)
	}
	if s.Head() != head {
		t.Errorf("a refused restore moved main")
	}

	// The catalog that history rebuilds is the same.
	before := historyOf(t, s)
	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	if after := historyOf(t, s); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("history after a rebuild:\n%s\nvs\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	fsck(t, s)
}

// gitDiffHunks runs git diff on two blobs or files and returns its output from the first
// hunk on, without the function names that git puts after a hunk's "@@".
func gitDiffHunks(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.quotepath=off", "diff", "--no-color", "--no-ext-diff"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("git diff %v: %v", args, err)
	}
	return hunksOnly(string(out))
}

var funcName = regexp.MustCompile(`(?m)^(@@ -\S+ \+\S+ @@).*$`)

func hunksOnly(d string) string {
	if i := strings.Index(d, "\n@@ "); i >= 0 {
		d = d[i+1:]
	} else if !strings.HasPrefix(d, "@@ ") {
		return ""
	}
	return funcName.ReplaceAllString(d, "$1")
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	return b.String()
}

// TestDiffAgainstGit diffs two versions of a memory and compares the hunks with what git
// diff shows for the same two blobs of the store's repository.
func TestDiffAgainstGit(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	twenty := numbered(1, 20)
	cases := []struct{ name, a, b string }{
		{"added lines", "alpha\nbeta\ngamma\n", "alpha\nbeta\nnew one\nnew two\ngamma\n"},
		{"removed lines", numbered(1, 10), strings.Replace(numbered(1, 10), "line 4\nline 5\n", "", 1)},
		{"change at the start", twenty, "first!\n" + strings.TrimPrefix(twenty, "line 1\n")},
		{"change at the end", twenty, strings.TrimSuffix(twenty, "line 20\n") + "last!\n"},
		{"no trailing newline before", "a\nb\nc", "a\nb\nc\nd\n"},
		{"no trailing newline after", "a\nb\nc\n", "a\nb\nC"},
		{"no trailing newline on either", "a\nb\nc", "a\nb\nd"},
		{"two hunks", numbered(1, 30), strings.NewReplacer("line 3\n", "three\n", "line 25\n", "twenty-five\n").Replace(numbered(1, 30))},
		{"merged hunk (6 lines apart)", numbered(1, 30), strings.NewReplacer("line 10\n", "ten\n", "line 17\n", "seventeen\n").Replace(numbered(1, 30))},
		{"split hunks (7 lines apart)", numbered(1, 30), strings.NewReplacer("line 10\n", "ten\n", "line 18\n", "eighteen\n").Replace(numbered(1, 30))},
		{"from empty", "", "now\nsomething\n"},
		{"to empty", "was\nsomething\n", ""},
		{"everything changed", "a\nb\n", "c\nd\ne\n"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := "/diff/case" + strconv.Itoa(i) + ".md"
			v1 := mustWrite(t, s, path, c.a, apiActor)
			v2 := mustWrite(t, s, path, c.b, sessionActor)
			got, err := diffVersions(ctx, s, v1.Version.ID, v2.Version.ID)
			if err != nil {
				t.Fatal(err)
			}
			rel := strings.TrimPrefix(path, "/")
			want := gitDiffHunks(t, s.RepoPath(), v1.Version.Commit+":"+rel, v2.Version.Commit+":"+rel)
			header := "--- a" + path + "\n+++ b" + path + "\n"
			if !strings.HasPrefix(got, header) || hunksOnly(got) != want {
				t.Errorf("diff:\n%s\ngit diff:\n%s", got, want)
			}
			// To defaults to the head; the reverse diff is git's reverse diff.
			if head, err := diffVersions(ctx, s, v1.Version.ID, ""); err != nil || head != got {
				t.Errorf("diff to head: %q, %v", head, err)
			}
			back, err := diffVersions(ctx, s, v2.Version.ID, v1.Version.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := gitDiffHunks(t, s.RepoPath(), v2.Version.Commit+":"+rel, v1.Version.Commit+":"+rel); hunksOnly(back) != want {
				t.Errorf("reverse diff:\n%s\ngit diff:\n%s", back, want)
			}
		})
	}

	// Identical content (a restore of the first version): no diff, as git shows none.
	v1 := mustWrite(t, s, "/same.md", "x\ny\n", apiActor)
	mustWrite(t, s, "/same.md", "x\nz\n", apiActor)
	v3, err := s.Restore(ctx, RestoreInput{VersionID: v1.Version.ID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := diffVersions(ctx, s, v1.Version.ID, v3.Version.ID); err != nil || d != "" {
		t.Errorf("diff of identical content: %q, %v", d, err)
	}
	if want := gitDiffHunks(t, s.RepoPath(), v1.Version.Commit+":same.md", v3.Version.Commit+":same.md"); want != "" {
		t.Errorf("git diff of identical content: %q", want)
	}

	// A deleted version diffs as empty content, named /dev/null, as git diffs a removed file.
	del, err := s.Delete(ctx, DeleteInput{ID: v1.Memory.ID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	got, err := diffVersions(ctx, s, v3.Version.ID, del.ID)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "old"), "x\ny\n")
	writeFile(t, filepath.Join(dir, "empty"), "")
	want := gitDiffHunks(t, dir, "--no-index", "old", "empty")
	if !strings.HasPrefix(got, "--- a/same.md\n+++ /dev/null\n") || hunksOnly(got) != want {
		t.Errorf("diff to a deletion:\n%s\ngit diff:\n%s", got, want)
	}
	if d, err := s.DiffMemory(ctx, v1.Memory.ID, "", ""); err != nil || d.Diff != got || d.From.ID != v3.Version.ID || d.To.ID != del.ID {
		t.Errorf("diff of the last change: %+v, %v", d, err)
	}
	// The first version diffs against nothing.
	if d, err := s.DiffMemory(ctx, "", "", v1.Version.ID); err != nil || !strings.HasPrefix(d.Diff, "--- /dev/null\n+++ b/same.md\n@@ -0,0 +1,2 @@\n+x\n+y\n") {
		t.Errorf("diff of the first version: %+v, %v", d, err)
	}

	// Versions of two memories, and unknown versions, are refused.
	other := mustWrite(t, s, "/other.md", "o\n", apiActor)
	if _, err := diffVersions(ctx, s, v1.Version.ID, other.Version.ID); !IsKind(err, KindInvalid) {
		t.Errorf("diff across memories: %v", err)
	}
	if _, err := diffVersions(ctx, s, "memver_01NOSUCHVERSION0000000000", ""); !IsKind(err, KindNotFound) {
		t.Errorf("diff of an unknown version: %v", err)
	}
}

// diffVersions is the unified diff from version fromID to version toID of the same memory
// (toID "": its head version).
func diffVersions(ctx context.Context, s *Store, fromID, toID string) (string, error) {
	d, err := s.DiffMemory(ctx, "", fromID, toID)
	return d.Diff, err
}

type gitBlameLine struct{ commit, text string }

// gitBlame runs git blame --porcelain on path at main in the store's repository.
func gitBlame(t *testing.T, s *Store, path string) []gitBlameLine {
	t.Helper()
	out := gitIn(t, s.RepoPath(), "blame", "--porcelain", "main", "--", strings.TrimPrefix(path, "/"))
	var lines []gitBlameLine
	var commit string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && len(f[0]) == 40 && !strings.HasPrefix(l, "\t") {
			commit = f[0]
			continue
		}
		if strings.HasPrefix(l, "\t") {
			lines = append(lines, gitBlameLine{commit, l[1:]})
		}
	}
	return lines
}

// TestBlameAgainstGit edits memories several times, by different actors, and checks that
// blame gives each line the version whose commit git blame names.
func TestBlameAgainstGit(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	carol := Actor{Type: SessionActor, ID: "sesn_01CAROLSESSION000000000000"}
	edits := []struct {
		content string
		actor   Actor
	}{
		{"# Prefs\nlikes tea\nworks late\nuses vim\n", apiActor},
		{"# Prefs\nlikes tea, green\nworks late\nuses vim\n", sessionActor},
		{"# Preferences\nlikes tea, green\nworks late\nuses vim\nwrites Go\n", bobActor},
		{"# Preferences\nlikes tea, green\nuses vim\nwrites Go\nreads at night\n", carol},
		{"intro line\n# Preferences\nlikes tea, green\nuses vim\nwrites Go and Rust\nreads at night", apiActor},
		{"intro line\n# Preferences\nlikes tea, green\nuses vim\nwrites Go and Rust\nreads at night\nlast\n", sessionActor},
	}
	var id string
	for i, e := range edits {
		res := mustWrite(t, s, "/prefs.md", e.content, e.actor)
		id = res.Memory.ID
		// Other memories change in between, in their own commits.
		mustWrite(t, s, "/other.md", strconv.Itoa(i)+"\n", apiActor)
	}
	// A memory with many lines and scattered edits.
	big := numbered(1, 60)
	bigID := mustWrite(t, s, "/big.md", big, apiActor).Memory.ID
	big = strings.NewReplacer("line 5\n", "five\n", "line 40\n", "forty\nforty-one\n").Replace(big)
	mustWrite(t, s, "/big.md", big, carol)
	big = strings.Replace(big, "line 20\nline 21\n", "", 1) + "line 61\n"
	mustWrite(t, s, "/big.md", big, bobActor)

	for _, c := range []struct{ id, path string }{{id, "/prefs.md"}, {bigID, "/big.md"}} {
		page, err := s.Versions(ctx, VersionFilter{MemoryID: c.id, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		byCommit := map[string]Version{}
		for _, v := range page.Versions {
			byCommit[v.Commit] = v
		}
		got, err := s.Blame(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		want := gitBlame(t, s, c.path)
		if len(got) != len(want) {
			t.Fatalf("%s: blame has %d lines, git blame %d", c.path, len(got), len(want))
		}
		for i, g := range got {
			w := byCommit[want[i].commit]
			if g.Line != i+1 || g.Text != want[i].text || g.Version.ID != w.ID || g.Version.Commit != want[i].commit ||
				g.Version.CreatedBy != w.CreatedBy || !g.Version.CreatedAt.Equal(w.CreatedAt) {
				t.Errorf("%s line %d: blame %d %q %s by %s; git blame %q %s (version %s by %s)", c.path, i+1, g.Line, g.Text,
					g.Version.ID, g.Version.CreatedBy.ID, want[i].text, want[i].commit, w.ID, w.CreatedBy.ID)
			}
		}
	}
	// The session is on the lines that a session wrote.
	got, _ := s.Blame(ctx, id)
	if got[len(got)-1].Text != "last" || got[len(got)-1].Version.CreatedBy.SessionID() != sessionActor.ID {
		t.Errorf("last line: %+v", got[len(got)-1])
	}
}

// TestBlameRenameAndRestore follows a memory through renames, a deletion and a restore.
func TestBlameRenameAndRestore(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	v1 := mustWrite(t, s, "/a.md", "one\ntwo\nthree\n", apiActor)
	id := v1.Memory.ID
	v2 := mustUpdate(t, s, UpdateInput{ID: id, Path: ptr("/dir/b.md"), Content: ptr("one\nTWO\nthree\n"), Actor: sessionActor})
	v3 := mustUpdate(t, s, UpdateInput{ID: id, Content: ptr("one\nTWO\nthree\nfour\n"), Actor: bobActor})
	mustUpdate(t, s, UpdateInput{ID: id, Path: ptr("/c.md"), Actor: apiActor}) // a rename only
	blameIDs := func() []string {
		t.Helper()
		lines, err := s.Blame(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range lines {
			out = append(out, l.Text+" "+l.Version.ID)
		}
		return out
	}
	want := []string{"one " + v1.Version.ID, "TWO " + v2.Version.ID, "three " + v1.Version.ID, "four " + v3.Version.ID}
	if got := blameIDs(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("blame after renames:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Restoring v1 changes line 2 back and drops line 4; the other lines keep their origin.
	r1, err := s.Restore(ctx, RestoreInput{VersionID: v1.Version.ID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"one " + v1.Version.ID, "two " + r1.Version.ID, "three " + v1.Version.ID}
	if got := blameIDs(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("blame after a restore:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// After a deletion the memory has no lines; restored, every line is the restore's, as
	// git blame gives a file that was removed and added again to the commit that added it.
	if _, err := s.Delete(ctx, DeleteInput{ID: id, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Blame(ctx, id); !IsKind(err, KindNotFound) {
		t.Errorf("blame of a deleted memory: %v", err)
	}
	r2, err := s.Restore(ctx, RestoreInput{VersionID: v3.Version.ID, Actor: bobActor})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := s.Blame(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Version.ID != r2.Version.ID {
			t.Errorf("line %d of a restored memory from %s, want %s", l.Line, l.Version.ID, r2.Version.ID)
		}
	}
	for i, g := range gitBlame(t, s, "/dir/b.md") {
		if g.commit != r2.Version.Commit || g.text != lines[i].Text {
			t.Errorf("git blame line %d: %+v", i+1, g)
		}
	}

	// An empty memory has no lines.
	empty := mustWrite(t, s, "/empty.md", "", apiActor)
	if lines, err := s.Blame(ctx, empty.Memory.ID); err != nil || len(lines) != 0 {
		t.Errorf("blame of an empty memory: %v, %v", lines, err)
	}
}
