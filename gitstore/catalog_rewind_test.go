package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/internal/testlog"
)

// TestCatalogSetBack: a proposal's fork of a branch at an older commit of main starts with a
// copy of the store's catalog, at main; set back to the branch's commit and caught up, it
// holds what a catalog rebuilt from the fork's history holds, record for record, also after
// the fork's own writes. Histories are random: creations, updates, renames, deletions,
// changes of store.json, proposal steps, and merges of forks, before and after the branch's
// commit, and redactions before it.
func TestCatalogSetBack(t *testing.T) {
	setBack := 0
	const seeds = 16
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if testCatalogSetBack(t, uint64(seed)) {
				setBack++
			}
		})
	}
	// Merges of gitmem's may have set a state that no version gives, to a memory concerned:
	// then the catalog is rebuilt, rightly; but most histories here are set back.
	t.Logf("%d histories of %d set back", setBack, seeds)
	if setBack < seeds*3/4/2 {
		t.Errorf("%d histories of %d were set back, the others rebuilt", setBack, seeds)
	}
}

// testCatalogSetBack runs one history and tells whether the fork's catalog was set back
// (rather than rebuilt).
func testCatalogSetBack(t *testing.T, seed uint64) bool {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	logs := &testlog.Buffer{}
	d := newTestDataDir(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	s := mustCreate(t, d, "rewind")
	randomHistory(t, rng, d, s, 30)
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	if seed%3 == 1 {
		plainCommits(t, rng, s, wt, 3, false) // made with git, pushed
	}
	if seed%2 == 0 {
		redactOne(t, rng, s)
		randomHistory(t, rng, d, s, 5)
	}
	base := s.Head()
	// Since the branch's commit, one line (with merges, the catalog is rebuilt), but for a
	// few histories, which are rebuilt and must come out the same.
	since := d
	if seed%4 != 3 {
		since = nil
	}
	randomHistory(t, rng, since, s, 1+rng.IntN(30))
	if seed%3 == 1 {
		plainCommits(t, rng, s, wt, 2, false)
	}

	ref := "refs/heads/proposals/t"
	if err := s.SetBranch(ctx, ref, base); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fork")
	if _, err := s.ForkBranch(ctx, dir, ref); err != nil {
		t.Fatal(err)
	}
	f, err := d.OpenFork(s.ID(), dir)
	if err != nil {
		t.Fatal(err)
	}
	setBack := strings.Contains(logs.String(), "catalog set back")
	if f.Head() != base {
		t.Fatalf("the fork is at %s, want %s", f.Head(), base)
	}
	compareWithRebuild := func(f *Store) *Store {
		t.Helper()
		got := dumpCatalog(t, f)
		if err := f.CloseFork(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, "catalog.db")); err != nil {
			t.Fatal(err)
		}
		rebuilt, err := d.OpenFork(s.ID(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := dumpCatalog(t, rebuilt); got != want {
			t.Fatalf("set back %v; the catalog differs from one rebuilt from history:\n%s", setBack, linesApart(got, want))
		}
		return rebuilt
	}
	f = compareWithRebuild(f)
	randomHistory(t, rng, nil, f, 10)
	f = compareWithRebuild(f)
	// The fork opened again, of the branch moved to another commit of main: its catalog,
	// caught up and written to, is set back again.
	randomHistory(t, rng, nil, f, 5)
	if err := f.CloseFork(); err != nil {
		t.Fatal(err)
	}
	commits := strings.Fields(gitIn(t, s.RepoPath(), "rev-list", "--first-parent", "main"))
	if err := s.SetBranch(ctx, ref, commits[rng.IntN(len(commits))]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForkBranch(ctx, dir, ref); err != nil {
		t.Fatal(err)
	}
	if f, err = d.OpenFork(s.ID(), dir); err != nil {
		t.Fatal(err)
	}
	f = compareWithRebuild(f)
	if err := f.CloseFork(); err != nil {
		t.Fatal(err)
	}
	return setBack
}

// randomHistory makes n random changes to s (errors, such as a rename onto a taken path, are
// part of it); with d, some are merges of a fork of s.
func randomHistory(t *testing.T, rng *rand.Rand, d *DataDir, s *Store, n int) {
	t.Helper()
	ctx := context.Background()
	paths := []string{"/a.md", "/b.md", "/d/c.md", "/d/e.md", "/f.md", "/g/h.md"}
	path := func() string { return paths[rng.IntN(len(paths))] }
	actor := Actor{Type: SessionActor, ID: fmt.Sprintf("sesn_%d", rng.IntN(3))}
	for range n {
		switch k := rng.IntN(20); {
		case k < 8:
			s.Write(ctx, WriteInput{Path: path(), Content: fmt.Sprintf("content %d\n", rng.IntN(5)), Actor: actor})
		case k < 11:
			s.MovePath(ctx, MovePathInput{From: path(), To: path(), Actor: actor})
		case k < 14:
			s.DeletePath(ctx, DeletePathInput{Path: path(), Actor: actor})
		case k < 16:
			desc := fmt.Sprintf("described %d", rng.IntN(4))
			if _, err := s.UpdateInfo(ctx, StorePatch{Description: &desc, Actor: actor}); err != nil {
				t.Fatal(err)
			}
		case k < 18:
			if err := s.RecordProposal(ctx, fmt.Sprintf("prop_%d", rng.IntN(100)), "opened", "a title", actor); err != nil {
				t.Fatal(err)
			}
		case d != nil:
			forkAndMerge(t, rng, d, s, paths)
		}
	}
}

// redactOne redacts a version of s, taken at random.
func redactOne(t *testing.T, rng *rand.Rand, s *Store) {
	t.Helper()
	p, err := s.Versions(context.Background(), VersionFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var live []Version
	for _, v := range p.Versions {
		// Not a version that a merge made: its redaction scrubs the path from the merge's
		// Gitmem-Merge-Live trailer, and a rebuild of the catalog then fails (a fault of its
		// own, not of setting back).
		if c, err := s.repo.commit(plumbing.NewHash(v.Commit)); err != nil {
			t.Fatal(err)
		} else if v.Operation != OpDeleted && v.RedactedAt == nil && len(c.ParentHashes) == 1 {
			live = append(live, v)
		}
	}
	if len(live) == 0 {
		return
	}
	v := live[rng.IntN(len(live))]
	if _, err := s.Redact(context.Background(), RedactInput{VersionID: v.ID, Actor: apiActor}); err != nil && !strings.Contains(err.Error(), "is the current version") {
		t.Fatalf("redact %s: %v", v.ID, err)
	}
}

// forkAndMerge forks s, changes the fork and s, and merges the fork into s as approval does.
func forkAndMerge(t *testing.T, rng *rand.Rand, d *DataDir, s *Store, paths []string) {
	t.Helper()
	ctx := context.Background()
	f, dir := openedFork(t, d, s)
	randomHistory(t, rng, nil, f, 1+rng.IntN(4))
	if err := f.CloseFork(); err != nil {
		t.Fatal(err)
	}
	randomHistory(t, rng, nil, s, rng.IntN(3))
	head, err := s.TakeBranch(ctx, dir, "refs/heads/side")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Integrate(ctx, "side", head); err != nil {
		t.Fatal(err)
	}
}

// dumpCatalog writes out every record that the catalog derives from history, without the
// numbers that order them (a rebuild numbers them afresh). sesver and keyver must list the
// versions as a scan of ver does (versionIndexApart).
func dumpCatalog(t *testing.T, s *Store) string {
	t.Helper()
	var b strings.Builder
	err := s.readCatalog(func(ct catTx) error {
		if diff := versionIndexApart(t, ct); diff != "" {
			return fmt.Errorf("the versions listed by session and API key differ from a scan:\n%s", diff)
		}
		fmt.Fprintf(&b, "applied %s\nusage %+v\n", ct.applied(), ct.usage())
		info, err := ct.storeInfo()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "store %s %s\n", info.Name, info.Description)
		for _, name := range [][]byte{bMem, bPath} {
			if err := ct.tx.Bucket(name).ForEach(func(k, v []byte) error {
				if bytes.Equal(name, bMem) {
					r, err := decodeMemory(string(k), v)
					fmt.Fprintf(&b, "mem %s %+v\n", k, r)
					return err
				}
				fmt.Fprintf(&b, "path %s %s\n", k, v)
				return nil
			}); err != nil {
				return err
			}
		}
		// In any order: a merge's sides are applied in the order they came (the catalog's),
		// or first parent first (a rebuild's).
		var records []string
		for v, err := range ct.versionsFrom(0) {
			if err != nil {
				return err
			}
			v.seq = 0
			var redacted redaction
			if v.Redacted != nil {
				redacted = *v.Redacted
			}
			v.Redacted = nil
			records = append(records, fmt.Sprintf("ver %+v redacted %+v", v, redacted))
		}
		for ch, err := range ct.storeChangesFrom(0) {
			if err != nil {
				return err
			}
			ch.seq = 0
			records = append(records, fmt.Sprintf("storechg %+v", ch))
		}
		// verid names a version of that id (the newest, where history holds one twice: a
		// commit that reuses another's trailers), told by what it is, not its number.
		if err := ct.tx.Bucket(bVerID).ForEach(func(k, n []byte) error {
			v, err := ct.versionBySeq(n)
			if err != nil {
				return err
			}
			if v.ID != string(k) {
				return fmt.Errorf("verid of %s names version %s", k, v.ID)
			}
			records = append(records, fmt.Sprintf("verid %s %s %s %s", k, v.Commit, v.Memory, v.Path))
			return nil
		}); err != nil {
			return err
		}
		slices.Sort(records)
		b.WriteString(strings.Join(records, "\n") + "\n")
		mems := map[string]int{}
		if err := ct.tx.Bucket(bMemVer).ForEach(func(k, _ []byte) error {
			mems[string(k[:len(k)-8])]++
			return nil
		}); err != nil {
			return err
		}
		fmt.Fprintf(&b, "memver %v\n", mems)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// linesApart shows the lines of got and want that the other lacks (as many times as it
// lacks them).
func linesApart(got, want string) string {
	count := map[string]int{}
	for _, l := range strings.Split(got, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(want, "\n") {
		count[l]--
	}
	var out strings.Builder
	for _, side := range []struct {
		name, text string
		sign       int
	}{{"got ", got, 1}, {"want", want, -1}} {
		for _, l := range strings.Split(side.text, "\n") {
			if count[l]*side.sign > 0 {
				count[l] -= side.sign
				fmt.Fprintf(&out, " %s %s\n", side.name, l)
			}
		}
	}
	return out.String()
}
