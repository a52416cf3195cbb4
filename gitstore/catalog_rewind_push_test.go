package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/internal/testlog"
)

// setBackAndCompare forces main of s back to commit base (a forced push), lets the catalog
// catch up, and compares it with one rebuilt from history. It tells whether the catalog was
// set back rather than rebuilt.
func setBackAndCompare(t *testing.T, s *Store, logs *testlog.Buffer, wt, base string) bool {
	t.Helper()
	ctx := context.Background()
	before := strings.Count(logs.String(), "catalog set back")
	gitIn(t, wt, "push", "-qf", "origin", base+":main")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Head() != base {
		t.Fatalf("the catalog is at %s, want %s", s.Head(), base)
	}
	setBack := strings.Count(logs.String(), "catalog set back") > before
	if diff := apartFromRebuilt(t, s); diff != "" {
		t.Fatalf("set back %v; the catalog differs from one rebuilt from history:\n%s", setBack, diff)
	}
	return setBack
}

func newLoggedStore(t *testing.T) (*Store, *testlog.Buffer) {
	logs := &testlog.Buffer{}
	d := newTestDataDir(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return mustCreate(t, d, "rewind"), logs
}

// A commit pushed with a gitmem commit's trailers (git commit -C, a cherry-pick whose
// conflict was resolved) names a memory other than the one that lives at its path: the
// catalog records the version (its id a second time) and the path names that memory. Set
// back past that commit, the catalog must hold what a rebuild does: the path names the
// memory that lives there, and the version id its first record.
func TestCatalogSetBackReusedTrailers(t *testing.T) {
	ctx := context.Background()
	s, logs := newLoggedStore(t)
	first, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "one\n", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeletePath(ctx, DeletePathInput{Path: "/a.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "two\n", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	base := s.Head()
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	writeFile(t, filepath.Join(wt, "a.md"), "three\n")
	gitIn(t, wt, "commit", "-qa", "-C", first.Version.Commit)
	gitIn(t, wt, "push", "-q", "origin", "main")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !setBackAndCompare(t, s, logs, wt, base) {
		t.Log("rebuilt, not set back")
	}
}

// A commit made with git removed store.json; the writer writes it again (a change of the
// store's description). Set back to the commit without store.json, the catalog must keep
// the metadata that a rebuild keeps: the store.json before, not the one set back past.
func TestCatalogSetBackNoStoreFile(t *testing.T) {
	ctx := context.Background()
	s, logs := newLoggedStore(t)
	if _, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "one\n", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	gitIn(t, wt, "rm", "-q", ".gitmem/store.json")
	gitIn(t, wt, "commit", "-qm", "no store.json")
	gitIn(t, wt, "push", "-q", "origin", "main")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	base := s.Head()
	desc := "described"
	if _, err := s.UpdateInfo(ctx, StorePatch{Description: &desc, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/b.md", Content: "two\n", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	gitIn(t, wt, "fetch", "-q")
	setBackAndCompare(t, s, logs, wt, base)
}

// TestCatalogSetBackPushed: a store's main is forced back with git to one of its earlier
// commits, now and then with commits made with git on top (a push that rewrote main), in
// histories of gitmem's writes, commits made with plain git (renames, several changes in a
// commit, store.json changed or removed), commits that reuse a gitmem commit's trailers,
// merges of forks and redactions. After each, the catalog holds what a catalog rebuilt
// from the same history holds, record for record; set back several times over.
func TestCatalogSetBackPushed(t *testing.T) {
	setBack, rounds := 0, 0
	for seed := range 8 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			b, r := testCatalogSetBackPushed(t, uint64(seed))
			setBack, rounds = setBack+b, rounds+r
		})
	}
	t.Logf("%d of %d forced pushes set the catalog back", setBack, rounds)
	if setBack < rounds/3 {
		t.Errorf("only %d of %d forced pushes set the catalog back", setBack, rounds)
	}
}

func testCatalogSetBackPushed(t *testing.T, seed uint64) (setBack, rounds int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	logs := &testlog.Buffer{}
	d := newTestDataDir(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s := mustCreate(t, d, "pushed")
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	var md *DataDir
	if seed%3 == 2 {
		md = d // merges of forks too
	}
	mixed := func(n int) {
		for range n {
			switch k := rng.IntN(10); {
			case k < 4:
				randomHistory(t, rng, md, s, 1+rng.IntN(3))
			case k < 8:
				plainCommits(t, rng, s, wt, 1+rng.IntN(2), seed%2 == 1)
			case k < 9 && seed%4 == 0:
				redactNotBeforePlainRename(t, rng, s)
			}
		}
	}
	mixed(15)
	for range 4 {
		firstParents := strings.Fields(gitIn(t, s.RepoPath(), "rev-list", "--first-parent", "main"))
		base := firstParents[1+rng.IntN(min(len(firstParents)-1, 12))]
		gitIn(t, wt, "fetch", "-q")
		gitIn(t, wt, "reset", "-q", "--hard", base)
		if rng.IntN(3) == 0 {
			// A push that rewrote main: commits on top of an older one.
			for range 1 + rng.IntN(3) {
				plainChange(t, rng, wt, seed%2 == 1)
			}
			base = strings.TrimSpace(gitIn(t, wt, "rev-parse", "HEAD"))
		}
		rounds++
		if setBackAndCompare(t, s, logs, wt, base) {
			setBack++
		}
		mixed(1 + rng.IntN(10))
	}
	return setBack, rounds
}

// plainCommits makes n commits with git in the clone wt of s, on top of s's main, and
// pushes them.
func plainCommits(t *testing.T, rng *rand.Rand, s *Store, wt string, n int, reuse bool) {
	t.Helper()
	gitIn(t, wt, "fetch", "-q")
	gitIn(t, wt, "reset", "-q", "--hard", "origin/main")
	for range n {
		plainChange(t, rng, wt, reuse)
	}
	gitIn(t, wt, "push", "-q", "origin", "HEAD:main")
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// plainChange commits a random change in wt with git: files written, moved (git mv, the
// same content), removed, store.json changed or removed; with reuse, now and then with the
// message (and trailers) of an earlier gitmem commit, as git commit -C does.
func plainChange(t *testing.T, rng *rand.Rand, wt string, reuse bool) {
	t.Helper()
	paths := []string{"a.md", "b.md", "d/c.md", "d/e.md", "f.md", "g/h.md"}
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(wt, p)); return err == nil }
	for range 1 + rng.IntN(3) {
		p := paths[rng.IntN(len(paths))]
		switch k := rng.IntN(12); {
		case k < 5:
			writeFile(t, filepath.Join(wt, p), fmt.Sprintf("content %d\n", rng.IntN(5)))
		case k < 8:
			to := paths[rng.IntN(len(paths))]
			if exists(p) && !exists(to) {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(wt, to)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(wt, p), filepath.Join(wt, to)); err != nil {
					t.Fatal(err)
				}
			}
		case k < 10:
			if exists(p) {
				if err := os.Remove(filepath.Join(wt, p)); err != nil {
					t.Fatal(err)
				}
			}
		case k < 11:
			var info map[string]any
			raw := gitIn(t, wt, "show", strings.TrimSpace(gitIn(t, wt, "rev-list", "--max-parents=0", "HEAD"))+":.gitmem/store.json")
			if err := json.Unmarshal([]byte(raw), &info); err != nil {
				t.Fatal(err)
			}
			info["description"] = fmt.Sprintf("from git %d", rng.IntN(3))
			out, err := json.Marshal(info)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(wt, ".gitmem/store.json"), string(out)+"\n")
		default:
			if exists(".gitmem/store.json") && rng.IntN(2) == 0 {
				if err := os.Remove(filepath.Join(wt, ".gitmem/store.json")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	gitIn(t, wt, "add", "-A")
	args := []string{"commit", "-q", "--allow-empty", "-m", "with git"}
	if reuse && rng.IntN(3) == 0 {
		var gitmem []string
		for _, line := range strings.Split(gitIn(t, wt, "log", "--format=%H %(trailers:key=Gitmem-Version,valueonly,separator=)"), "\n") {
			if h, v, _ := strings.Cut(line, " "); v != "" {
				gitmem = append(gitmem, h)
			}
		}
		if len(gitmem) > 0 {
			args = []string{"commit", "-q", "--allow-empty", "-C", gitmem[rng.IntN(len(gitmem))]}
		}
	}
	gitIn(t, wt, args...)
}

// redactNotBeforePlainRename is redactOne, but not of a version that is a rename made with
// plain git, or whose next version is (TestRedactBeforePlainRename: a rebuild reads that
// history otherwise than the catalog does, set back or not).
func redactNotBeforePlainRename(t *testing.T, rng *rand.Rand, s *Store) {
	t.Helper()
	var ids []string
	err := s.readCatalog(func(ct catTx) error {
		for v, err := range ct.versionsDown(everyVersion) {
			if err != nil {
				return err
			}
			c, err := s.repo.commit(plumbing.NewHash(v.Commit))
			if err != nil {
				return err
			}
			if v.Op == OpDeleted || v.Redacted != nil || len(c.ParentHashes) != 1 {
				continue
			}
			vs, err := ct.memoryVersions(v.Memory)
			if err != nil {
				return err
			}
			_, _, gitmem := parseTrailers(c.Message).version()
			for i, w := range vs {
				if w.seq != v.seq || i+1 == len(vs) || i > 0 && vs[i-1].Path != v.Path && !gitmem {
					continue // not a plain rename either
				}
				next := vs[i+1]
				nc, err := s.repo.commit(plumbing.NewHash(next.Commit))
				if err != nil {
					return err
				}
				if _, _, gitmem := parseTrailers(nc.Message).version(); next.Path == v.Path || gitmem || len(nc.ParentHashes) > 1 {
					ids = append(ids, v.ID)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		return
	}
	id := ids[rng.IntN(len(ids))]
	if _, err := s.Redact(context.Background(), RedactInput{VersionID: id, Actor: apiActor}); err != nil && !strings.Contains(err.Error(), "is the current version") {
		t.Fatalf("redact %s: %v", id, err)
	}
}

// A merge leaves a memory live in the catalog without a path (a memory that the side made
// at the path that main moved its memory away from: the merge frees the path and merges
// the side's content into the moved memory). A write of that memory by its id then gives it
// its path back. Set back past that write, the catalog must not give the path back: a
// rebuild does not.
func TestCatalogSetBackPathless(t *testing.T) {
	ctx := context.Background()
	logs := &testlog.Buffer{}
	d := newTestDataDir(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s := mustCreate(t, d, "rewind")
	mustWrite(t, s, "/b.md", "one\ntwo\nthree\n", apiActor)
	f, dir := openedFork(t, d, s)
	if _, err := f.DeletePath(ctx, DeletePathInput{Path: "/b.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	made := mustWrite(t, f, "/b.md", "one\ntwo\nthree\nfour\n", apiActor)
	if err := f.CloseFork(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MovePath(ctx, MovePathInput{From: "/b.md", To: "/f.md", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	head, err := s.TakeBranch(ctx, dir, "refs/heads/side")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Integrate(ctx, "side", head); err != nil {
		t.Fatal(err)
	}
	base := s.Head()
	content := "written by id\n"
	if _, err := s.UpdateMemory(ctx, UpdateInput{ID: made.Memory.ID, Content: &content, Actor: apiActor}); err != nil {
		t.Logf("write the pathless memory by id: %v", err)
		return
	}
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	setBackAndCompare(t, s, logs, wt, base)
}

// Two commits made with git that derive their ids from one hash (Gitmem-Derived-From: a
// cherry-pick of an approved or a redacted commit keeps its trailer and author date) make
// one version id at one path, for two memories. Set back past the second, the version id
// names the first's record, as a rebuild has it.
func TestCatalogSetBackReusedDerivedIDs(t *testing.T) {
	ctx := context.Background()
	s, logs := newLoggedStore(t)
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	commit := func(msg string) {
		cmd := exec.Command("git", "commit", "-qam", msg)
		cmd.Dir = wt
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=Ann Editor", "GIT_AUTHOR_EMAIL=ann@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
			"GIT_COMMITTER_NAME=Ann Editor", "GIT_COMMITTER_EMAIL=ann@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git commit: %v\n%s", err, out)
		}
	}
	const msg = "approved\n\nGitmem-Derived-From: 1111111111111111111111111111111111111111\n"
	writeFile(t, filepath.Join(wt, "a.md"), "first\n")
	gitIn(t, wt, "add", "a.md")
	commit(msg)
	gitIn(t, wt, "rm", "-q", "a.md")
	gitIn(t, wt, "commit", "-qm", "removed")
	gitIn(t, wt, "push", "-q", "origin", "main")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, "/a.md", "second\n", apiActor)
	base := s.Head()
	gitIn(t, wt, "pull", "-q")
	writeFile(t, filepath.Join(wt, "a.md"), "third\n")
	commit(msg)
	gitIn(t, wt, "push", "-q", "origin", "main")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !setBackAndCompare(t, s, logs, wt, base) {
		t.Error("rebuilt, not set back")
	}
}
