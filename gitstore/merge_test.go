package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// replicaPair is a store and a replica of it in another data directory, imported from its
// repository, as a second server gets a store that syncs with the first.
func replicaPair(t testing.TB) (a, b *Store) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	a = newTestStore(t)
	d := newTestDataDir(t, Options{})
	dir, err := d.PrepareImport()
	if err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "fetch", "-q", a.RepoPath(), "+refs/heads/main:refs/heads/main")
	b, err = d.ImportStore(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// pull fetches from's main into to's repository and integrates it, as sync does.
func pull(t testing.TB, to, from *Store) MergeResult {
	t.Helper()
	return integrate(t, to, fetch(t, to, from))
}

// fetch fetches from's main into to's repository, as sync does, and returns it.
func fetch(t testing.TB, to, from *Store) string {
	t.Helper()
	gitIn(t, to.RepoPath(), "fetch", "-q", from.RepoPath(), "+refs/heads/main:refs/remotes/peer/main")
	return strings.TrimSpace(gitIn(t, to.RepoPath(), "rev-parse", "refs/remotes/peer/main"))
}

func integrate(t testing.TB, to *Store, head string) MergeResult {
	t.Helper()
	res, err := to.Integrate(context.Background(), "peer", head)
	if err != nil {
		t.Fatalf("integrate: %v", err)
	}
	return res
}

// stateOf is every live memory of a store (id, path, current version, content) and every
// version id, as comparable lines.
func stateOf(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	var live Usage
	page, err := s.List(ctx, ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Items {
		if it.Memory == nil {
			continue
		}
		m, err := s.Get(ctx, it.Memory.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %s %s %q", m.Path, m.ID, m.VersionID, *m.Content))
		live.Memories++
		live.Bytes += int64(len(*m.Content))
	}
	// The usage that quotas check follows merges too.
	if u, err := s.Usage(ctx); err != nil || u != live {
		t.Errorf("usage of %s: %+v (%v), but it holds %+v", s.RepoPath(), u, err, live)
	}
	sort.Strings(lines)
	versions := historyOf(t, s)
	sort.Strings(versions)
	return strings.Join(lines, "\n") + "\n--\n" + strings.Join(versions, "\n")
}

// agreed returns the state of two replicas, which must be the same, and checks that it
// holds each of wants.
func agreed(t *testing.T, a, b *Store, wants ...string) string {
	t.Helper()
	sa, sb := stateOf(t, a), stateOf(t, b)
	if sa != sb {
		t.Fatalf("the replicas differ:\n%s\n\n%s", sa, sb)
	}
	for _, want := range wants {
		if !strings.Contains(sa, want) {
			t.Errorf("merged state lacks %s:\n%s", want, sa)
		}
	}
	return sa
}

func TestMergeRules(t *testing.T) {
	ctx := context.Background()
	a, b := replicaPair(t)
	text := "one\ntwo\nthree\nfour\nfive\nsix\n"
	mustWrite(t, a, "/shared/text.md", text, apiActor)
	mustWrite(t, a, "/shared/clash.md", "same start\n", apiActor)
	mustWrite(t, a, "/shared/gone.md", "to be deleted here\n", apiActor)
	mustWrite(t, a, "/shared/moved.md", "line 1\nline 2\nline 3\nline 4\n", apiActor)
	mustWrite(t, a, "/shared/both-deleted.md", "x\n", apiActor)
	if res := pull(t, b, a); res.Outcome != FastForward || res.Fetched != 5 {
		t.Fatalf("first pull: %+v", res)
	}
	if stateOf(t, a) != stateOf(t, b) {
		t.Fatalf("after a fast-forward the replicas differ:\n%s\n\n%s", stateOf(t, a), stateOf(t, b))
	}

	// Here (a) and there (b) change the store apart.
	mustWrite(t, a, "/a-only.md", "from a\n", apiActor)
	mustWrite(t, b, "/b-only.md", "from b\n", apiActor)
	mustWrite(t, a, "/shared/text.md", "ONE\ntwo\nthree\nfour\nfive\nsix\n", apiActor)
	mustWrite(t, b, "/shared/text.md", "one\ntwo\nthree\nfour\nfive\nSIX\n", apiActor)
	mustWrite(t, a, "/shared/clash.md", "a's ending\n", apiActor)
	mustWrite(t, b, "/shared/clash.md", "b's ending\n", apiActor)
	mustWrite(t, a, "/new/same.md", "created by a\n", apiActor)
	mustWrite(t, b, "/new/same.md", "created by b\n", apiActor)
	if _, err := a.Delete(ctx, DeleteInput{Path: "/shared/gone.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, b, "/shared/gone.md", "changed there\n", apiActor)
	newPath := "/shared/renamed.md"
	if _, err := a.UpdateMemory(ctx, UpdateInput{FromPath: "/shared/moved.md", Path: &newPath, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, b, "/shared/moved.md", "line 1\nline 2\nline 3\nline 4 changed there\n", apiActor)
	for _, s := range []*Store{a, b} {
		if _, err := s.Delete(ctx, DeleteInput{Path: "/shared/both-deleted.md", Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}

	// b pushes first (the remote is b's main); a merges it, and b takes the merge.
	res := pull(t, a, b)
	if res.Outcome != Merged {
		t.Fatalf("outcome %s", res.Outcome)
	}
	if got, want := strings.Join(res.TextMerged, ","), "/shared/renamed.md,/shared/text.md"; got != want {
		t.Errorf("text merged %s, want %s", got, want)
	}
	if got, want := strings.Join(res.Kept, ","), "/shared/gone.md"; got != want {
		t.Errorf("kept %s, want %s", got, want)
	}
	if len(res.Conflicts) != 2 {
		t.Fatalf("conflicts %+v", res.Conflicts)
	}
	short := res.Before[:7]
	for _, c := range res.Conflicts {
		if want := strings.TrimSuffix(c.Path, ".md") + ".conflict-" + short + ".md"; c.CopyPath != want {
			t.Errorf("conflict copy of %s at %s, want %s", c.Path, c.CopyPath, want)
		}
	}
	if r := pull(t, b, a); r.Outcome != FastForward {
		t.Fatalf("b takes the merge: %+v", r)
	}
	sa := agreed(t, a, b,
		`/a-only.md`, `/b-only.md`,
		`"ONE\ntwo\nthree\nfour\nfive\nSIX\n"`,
		`/shared/clash.md`, `"b's ending\n"`, `/shared/clash.conflict-`+short+`.md`, `"a's ending\n"`,
		`/new/same.md`, `"created by b\n"`, `/new/same.conflict-`+short+`.md`, `"created by a\n"`,
		`/shared/gone.md`, `"changed there\n"`,
		`/shared/renamed.md`, `"line 1\nline 2\nline 3\nline 4 changed there\n"`)
	for _, gone := range []string{"/shared/moved.md ", "/shared/both-deleted.md "} {
		if strings.Contains(strings.Split(sa, "--")[0], gone) {
			t.Errorf("%s should be gone:\n%s", gone, sa)
		}
	}
	// The conflict copies are searchable like any memory: they are in the listing with content.
	// The catalog rebuilt from history agrees with the one built while merging.
	for _, s := range []*Store{a, b} {
		if err := s.runTask(ctx, func() error { return s.rebuild(nil) }); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, s); got != sa {
			t.Fatalf("rebuilt catalog differs:\n%s\n\nwant\n%s", got, sa)
		}
	}
	msg := gitIn(t, a.RepoPath(), "log", "-1", "--format=%an <%ae>%n%P%n%B")
	for _, want := range []string{"gitmem <gitmem@gitmem>", "merge peer/main:", "2 conflicts",
		"Merged as text: /shared/text.md", "Conflict: /shared/clash.md", "Gitmem-Merge-Live: "} {
		if !strings.Contains(msg, want) {
			t.Errorf("merge commit message lacks %q:\n%s", want, msg)
		}
	}
	if parents := strings.Fields(strings.Split(msg, "\n")[1]); len(parents) != 2 || parents[0] != res.Before && parents[1] != res.Before {
		t.Errorf("parents %v", parents)
	}
	gitIn(t, a.RepoPath(), "fsck", "--strict")
	if r := pull(t, a, b); r.Outcome != UpToDate {
		t.Errorf("after both have the merge: %+v", r)
	}
}

func TestMergeUnrelated(t *testing.T) {
	a, _ := replicaPair(t)
	other := newTestStore(t)
	gitIn(t, a.RepoPath(), "fetch", "-q", other.RepoPath(), "+refs/heads/main:refs/remotes/x/main")
	head := strings.TrimSpace(gitIn(t, a.RepoPath(), "rev-parse", "refs/remotes/x/main"))
	before := a.Head()
	if _, err := a.Integrate(context.Background(), "x", head); err != ErrUnrelated {
		t.Fatalf("err %v, want ErrUnrelated", err)
	}
	if a.Head() != before {
		t.Fatal("main moved")
	}
}

// TestMergePlainCommits: commits made with plain git on one side (a rename, an edit, a new
// file) merge with the other side's API writes, and both replicas derive the same ids.
func TestMergePlainCommits(t *testing.T) {
	ctx := context.Background()
	a, b := replicaPair(t)
	mustWrite(t, a, "/notes/p.md", "first\nsecond\nthird\n", apiActor)
	mustWrite(t, a, "/notes/old.md", "moved by a person\n", apiActor)
	pull(t, b, a)

	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", b.RepoPath(), wt)
	writeFile(t, filepath.Join(wt, "notes/p.md"), "first\nsecond\nthird, edited with git\n")
	writeFile(t, filepath.Join(wt, "notes/q.md"), "new with git\n")
	gitIn(t, wt, "mv", "notes/old.md", "notes/new.md")
	pushAll(t, wt, "edit, add, move")
	mustWrite(t, a, "/notes/p.md", "FIRST\nsecond\nthird\n", apiActor)
	mustWrite(t, a, "/notes/old.md", "moved by a person, and changed by a\n", apiActor)

	res := pull(t, a, b)
	if res.Outcome != Merged || len(res.Conflicts) != 0 || len(res.TextMerged) != 2 {
		t.Fatalf("merge: %+v", res)
	}
	pull(t, b, a)
	sa := agreed(t, a, b, `/notes/p.md`, `"FIRST\nsecond\nthird, edited with git\n"`,
		`/notes/new.md`, `"moved by a person, and changed by a\n"`, `/notes/q.md`)
	for _, s := range []*Store{a, b} {
		if err := s.runTask(ctx, func() error { return s.rebuild(nil) }); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, s); got != sa {
			t.Fatalf("rebuilt catalog differs:\n%s\n\nwant\n%s", got, sa)
		}
	}
}

// BenchmarkMerge measures the merge of one change on each side into a store of n memories
// (fetched already; Integrate alone), against one write to the same store as the baseline.
//
//	go test ./gitstore -run '^$' -bench BenchmarkMerge -benchtime 20x
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			x, y := replicaPair(b)
			fill(b, x, n, benchPath)
			pull(b, y, x)
			b.Run("write", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					k := (i * 7919) % n
					if _, err := x.Write(context.Background(), WriteInput{Path: benchPath(k), Content: benchContent(k + i + 1), Actor: apiActor}); err != nil {
						b.Fatal(err)
					}
				}
			})
			pull(b, y, x)
			round := 0 // across the runs of the sub-benchmark, so that every write changes something
			b.Run("merge", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					round++
					mustWrite(b, x, fmt.Sprintf("/x/%d.md", round), "from x\n", apiActor)
					mustWrite(b, y, fmt.Sprintf("/y/%d.md", round), "from y\n", apiActor)
					head := fetch(b, x, y)
					b.StartTimer()
					if res := integrate(b, x, head); res.Outcome != Merged {
						b.Fatalf("outcome %s", res.Outcome)
					}
					b.StopTimer()
					pull(b, y, x)
					b.StartTimer()
				}
			})
		})
	}
}

// TestMergeFileFolderClash: where one side has a file and the other a folder at the same
// path, the remote's stays and ours goes to a conflict path: nothing is lost.
func TestMergeFileFolderClash(t *testing.T) {
	ctx := context.Background()
	a, b := replicaPair(t)
	mustWrite(t, a, "/k/f.md", "one\n", apiActor)
	pull(t, b, a)
	mustWrite(t, a, "/topic", "a file here\n", apiActor)
	mustWrite(t, b, "/topic/x.md", "a folder there\n", apiActor)
	mustWrite(t, a, "/k/f.md", "one, changed here\n", apiActor)
	if _, err := b.Delete(ctx, DeleteInput{Path: "/k/f.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, b, "/k/f.md/inner.md", "a folder where the file was\n", apiActor)
	res := pull(t, a, b)
	if len(res.Conflicts) != 2 {
		t.Fatalf("conflicts: %+v", res.Conflicts)
	}
	pull(t, b, a)
	short := res.Before[:7]
	agreed(t, a, b, `/topic/x.md`, `/topic.conflict-`+short+` `, `"a file here\n"`,
		`/k/f.md/inner.md`, `/k/f.conflict-`+short+`.md`, `"one, changed here\n"`)
}
