package odb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// commitObjects makes a commit of one file on top of parent, and returns its objects with
// the commit last.
func commitObjects(t *testing.T, parent plumbing.Hash, content string) []plumbing.EncodedObject {
	t.Helper()
	blob := &plumbing.MemoryObject{}
	blob.SetType(plumbing.BlobObject)
	blob.Write([]byte(content))
	tree := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: []object.TreeEntry{{Name: "a.md", Mode: 0o100644, Hash: blob.Hash()}}}).Encode(tree); err != nil {
		t.Fatal(err)
	}
	c := &object.Commit{TreeHash: tree.Hash(), Message: content,
		Author: object.Signature{Name: "t", Email: "t@t"}, Committer: object.Signature{Name: "t", Email: "t@t"}}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	co := &plumbing.MemoryObject{}
	if err := c.Encode(co); err != nil {
		t.Fatal(err)
	}
	return []plumbing.EncodedObject{blob, tree, co}
}

func head(objs []plumbing.EncodedObject) plumbing.Hash { return objs[len(objs)-1].Hash() }

// publishChain publishes commits (commitObjects), each on top of the one before, the first
// on a repository without main.
func publishChain(t *testing.T, r *Repo, commits ...[]plumbing.EncodedObject) {
	t.Helper()
	old := plumbing.ZeroHash
	for _, c := range commits {
		if _, err := r.Publish(c, old, head(c)); err != nil {
			t.Fatal(err)
		}
		old = head(c)
	}
}

// abandon stops r's goroutines and closes its journal without a checkpoint, as a crash
// leaves it.
func abandon(r *Repo) {
	r.syncer.stop()
	r.spares.close()
	r.journal.close()
	r.standby.close()
}

// TestRecoverRef: at open, main moves to the journal's last commit if it is behind it or
// unreadable, and stays if a push went past it or a forced push went elsewhere.
func TestRecoverRef(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(t *testing.T, r *Repo, c1, c2 plumbing.Hash) plumbing.Hash // main before reopening; returns main after
	}{
		{"behind", func(t *testing.T, r *Repo, c1, c2 plumbing.Hash) plumbing.Hash {
			setRef(t, r, c1)
			return c2
		}},
		{"pushed on top", func(t *testing.T, r *Repo, c1, c2 plumbing.Hash) plumbing.Hash {
			c3 := commitObjects(t, c2, "three")
			if err := r.WritePack(c3); err != nil {
				t.Fatal(err)
			}
			setRef(t, r, head(c3))
			return head(c3)
		}},
		{"forced elsewhere", func(t *testing.T, r *Repo, c1, c2 plumbing.Hash) plumbing.Hash {
			d := commitObjects(t, plumbing.ZeroHash, "other")
			if err := r.WritePack(d); err != nil {
				t.Fatal(err)
			}
			setRef(t, r, head(d))
			return head(d)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, r := uncheckpointed(t)
			c1 := commitObjects(t, plumbing.ZeroHash, "one")
			c2 := commitObjects(t, head(c1), "two")
			publishChain(t, r, c1, c2)
			want := tc.set(t, r, head(c1), head(c2))
			abandon(r)
			r = mustOpen(t, path)
			defer r.Close()
			if got, err := r.ReadRef(); err != nil || got != want {
				t.Fatalf("main after recovery: %v, %v; want %v", got, err, want)
			}
			if _, err := r.Object(head(c2)); err != nil {
				t.Fatalf("the journal's last commit after recovery: %v", err)
			}
			if r.journal.off != 0 {
				t.Errorf("the journal holds %d bytes after recovery; want none", r.journal.off)
			}
		})
	}
}

func setRef(t *testing.T, r *Repo, h plumbing.Hash) {
	t.Helper()
	l, err := r.LockRef()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Commit(h); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverAcrossSessions: records of an earlier session, left behind a checkpoint, never
// chain into the records of the next one, even when a new record ends exactly where an old
// one began (fast-forward records are all the same length).
func TestRecoverAcrossSessions(t *testing.T) {
	path := initTestRepo(t)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	c2 := commitObjects(t, head(c1), "two")
	c3 := commitObjects(t, head(c2), "three")
	for _, objs := range [][]plumbing.EncodedObject{c1, c2, c3} {
		if err := r.WritePack(objs); err != nil {
			t.Fatal(err)
		}
	}
	// Session 1: two fast-forwards, then a clean close.
	if _, err := r.Publish(nil, plumbing.ZeroHash, head(c1)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(nil, head(c1), head(c2)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// Session 2: one fast-forward, answered; then a power loss sets main back.
	if r, err = Open(path); err != nil {
		t.Fatal(err)
	}
	r.SetCheckpointBytes(1 << 40)
	if _, err := r.Publish(nil, head(c2), head(c3)); err != nil {
		t.Fatal(err)
	}
	abandon(r)
	setRefFile(t, path, head(c2))
	if r, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.ReadRef(); err != nil || got != head(c3) {
		t.Fatalf("main after recovery: %v, %v; want the answered %v", got, err, head(c3))
	}
}

// setRefFile writes main as a power loss may leave it: an older value, not through a lock.
func setRefFile(t *testing.T, repo string, h plumbing.Hash) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, MainRef), []byte(h.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRenameFails: when main cannot be renamed into place after the journal's record is
// synced, the write fails and its record is taken back, so that a reopening does not make
// the failed write appear.
func TestRenameFails(t *testing.T) {
	path := initTestRepo(t)
	ref := filepath.Join(path, MainRef)
	// Set before Open and cleared after the Repo's goroutines stopped, which read it.
	var armed atomic.Bool
	FaultHook = func(point, _ string) {
		if point != "journal-synced" || !armed.Load() {
			return
		}
		// A directory that is not empty where main is: the rename over it fails.
		if err := os.Rename(ref, ref+".away"); err != nil {
			t.Error(err)
		}
		if err := os.MkdirAll(filepath.Join(ref, "x"), 0o755); err != nil {
			t.Error(err)
		}
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	if _, err := r.Publish(c1, plumbing.ZeroHash, head(c1)); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	c2 := commitObjects(t, head(c1), "two")
	_, err = r.Publish(c2, head(c1), head(c2))
	armed.Store(false)
	if err == nil {
		t.Fatal("the write succeeded with main a directory")
	}
	if err := os.RemoveAll(ref); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ref+".away", ref); err != nil {
		t.Fatal(err)
	}
	abandon(r) // as a crash: the journal is read again at the next open
	FaultHook = nil
	failedWriteGone(t, path, head(c1))
}

// failedWriteGone reopens the repository at path, which a failed write left as a crash
// would, and checks that main is still at want, the commit before that write, and that
// writing goes on.
func failedWriteGone(t *testing.T, path string, want plumbing.Hash) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.ReadRef(); err != nil || got != want {
		t.Fatalf("main after reopening: %v, %v; want %v (the failed write's record came back)", got, err, want)
	}
	c := commitObjects(t, want, "after")
	if _, err := r.Publish(c, want, head(c)); err != nil {
		t.Fatalf("a write after the failed one: %v", err)
	}
}

// openWithOneWrite opens a new repository and publishes one commit in it, c1.
func openWithOneWrite(t *testing.T) (r *Repo, path string, c1 []plumbing.EncodedObject) {
	t.Helper()
	path = initTestRepo(t)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c1 = commitObjects(t, plumbing.ZeroHash, "one")
	if _, err := r.Publish(c1, plumbing.ZeroHash, head(c1)); err != nil {
		t.Fatal(err)
	}
	return r, path, c1
}

// TestPlaceFails: the pack is placed while the journal's record is synced; when it cannot be
// placed, the write fails although its record is durable, and the record is taken back, so
// that a reopening does not make the failed write appear.
func TestPlaceFails(t *testing.T) {
	r, path, c1 := openWithOneWrite(t)
	c2 := commitObjects(t, head(c1), "two")
	p, err := encodePack(c2)
	if err != nil {
		t.Fatal(err)
	}
	// A directory that is not empty where the pack's index goes: the rename over it fails.
	idx := p.base(filepath.Join(path, "objects", "pack")) + ".idx"
	p.release()
	if err := os.MkdirAll(filepath.Join(idx, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Publish(c2, head(c1), head(c2)); err == nil {
		t.Fatal("the write succeeded with its pack's index a directory")
	}
	if got, err := r.ReadRef(); err != nil || got != head(c1) {
		t.Fatalf("main after the failed write: %v, %v; want %v", got, err, head(c1))
	}
	if err := os.RemoveAll(idx); err != nil {
		t.Fatal(err)
	}
	abandon(r) // as a crash: the journal is read again at the next open
	failedWriteGone(t, path, head(c1))
}

// TestSyncFails: when the journal's fdatasync fails (after the pack was placed beside it),
// the write fails, but its record is in the file all the same, and may be on disk: it must
// be taken back, so that a reopening does not make the failed write appear.
func TestSyncFails(t *testing.T) {
	r, path, c1 := openWithOneWrite(t)
	// The journal is synced by the writer only (this goroutine), not by the syncer.
	var fail atomic.Bool
	syncJournal = func(f *os.File) error {
		if fail.CompareAndSwap(true, false) {
			return syscall.EIO
		}
		return fdatasync(f)
	}
	defer func() { syncJournal = fdatasync }()
	fail.Store(true)
	c2 := commitObjects(t, head(c1), "two")
	if _, err := r.Publish(c2, head(c1), head(c2)); err == nil {
		t.Fatal("the write succeeded with the journal's fdatasync failing")
	}
	if got, err := r.ReadRef(); err != nil || got != head(c1) {
		t.Fatalf("main after the failed write: %v, %v; want %v", got, err, head(c1))
	}
	abandon(r) // as a crash: the journal is read again at the next open
	failedWriteGone(t, path, head(c1))
}

// TestRecoverBothJournalFiles: while the syncer is behind, a checkpoint goes on in the other
// journal file instead of waiting; a crash then leaves records in both, and recovery replays
// them in order, whichever file holds the older ones.
func TestRecoverBothJournalFiles(t *testing.T) {
	path := initTestRepo(t)
	// The syncer's rounds wait while held is set, saying so on blocked: set before Open,
	// which starts the syncer, and cleared after it stopped.
	var held atomic.Bool
	release, blocked := make(chan struct{}, 100), make(chan struct{}, 100)
	FaultHook = func(point, _ string) {
		if point == "syncing" && held.Load() {
			blocked <- struct{}{}
			<-release
		}
	}
	defer func() { FaultHook = nil }()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r.SetCheckpointBytes(1) // every checkpoint is due
	first := r.journal
	second := filepath.Join(path, JournalName+".2")
	if _, err := os.Stat(second); !os.IsNotExist(err) {
		t.Fatalf("the second journal file exists before the writer needs it (%v)", err)
	}
	publish := func(parent plumbing.Hash, content string) plumbing.Hash {
		t.Helper()
		c := commitObjects(t, parent, content)
		if _, err := r.Publish(c, parent, head(c)); err != nil {
			t.Fatal(err)
		}
		return head(c)
	}
	checkpoint := func() {
		t.Helper()
		if err := r.Checkpoint(false); err != nil {
			t.Fatal(err)
		}
	}

	held.Store(true)
	c1 := publish(plumbing.ZeroHash, "one")
	// Its round waits in the hook. The syncer may not have started it yet (it can wait for
	// this goroutine to block): a round that started after held is cleared below would take
	// two's record too and leave the release for the round of three.
	<-blocked
	checkpoint() // the syncer is behind: on in the other file
	if r.journal == first || r.standby != first || first.off == 0 {
		t.Fatal("the checkpoint waited or dropped records instead of going on in the other file")
	}
	if _, err := os.Stat(second); err != nil {
		t.Fatalf("the writer went on in a second journal file that is not there: %v", err)
	}
	c2 := publish(c1, "two")
	// The syncer catches up: the first file's records go at the next checkpoint.
	held.Store(false)
	release <- struct{}{}
	if err := r.syncer.wait(r.journal.seq); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(path, "objects", "pack")
	before, _ := filepath.Glob(filepath.Join(packDir, "pack-*"))
	held.Store(true)
	c3 := publish(c2, "three")
	checkpoint() // drops the first file's records, and goes back to it
	if first.off != 0 || r.journal != first || r.standby.off == 0 {
		t.Fatalf("after the syncer caught up: first file at %d bytes, active %v", first.off, r.journal == first)
	}
	c4 := publish(c3, "four")
	// The second file holds two, three; the first four.
	held.Store(false)
	release <- struct{}{}
	abandon(r)
	// A power loss takes the packs placed since (never fsynced) and leaves main behind: only
	// the two files' records have three and four.
	after, _ := filepath.Glob(filepath.Join(packDir, "pack-*"))
	for _, f := range after {
		if !slices.Contains(before, f) {
			os.Remove(f)
		}
	}
	setRefFile(t, path, c2)

	r, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.ReadRef(); err != nil || got != c4 {
		t.Fatalf("main after recovery: %v, %v; want %v", got, err, c4)
	}
	for _, c := range []plumbing.Hash{c3, c4} {
		if _, err := r.Object(c); err != nil {
			t.Errorf("commit %v after recovery: %v", c, err)
		}
	}
	if r.journal.off != 0 || r.standby.off != 0 {
		t.Errorf("the journal files hold %d and %d bytes after recovery; want none", r.journal.off, r.standby.off)
	}
}

// TestRecoverRepeatedObjects: records that hold the same objects (content written again, as
// in one, two, one) are recovered into one pack that names each once; the repository opens,
// and opens again.
func TestRecoverRepeatedObjects(t *testing.T) {
	path, r := uncheckpointed(t)
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	c2 := commitObjects(t, head(c1), "two")
	c3 := commitObjects(t, head(c2), "one") // the blob and tree of c1 again
	publishChain(t, r, c1, c2, c3)
	abandon(r)
	for range 2 {
		r = mustOpen(t, path)
		if got, err := r.ReadRef(); err != nil || got != head(c3) {
			t.Fatalf("main after recovery: %s, %v; want %s", got, err, head(c3))
		}
		for _, o := range append(append(c1, c2...), c3...) {
			if _, err := r.Object(o.Hash()); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPackWithRepeatedNames: a pack whose index names an object twice, as recovery made them
// before it removed repeats, opens, reads, and is merged into one that names it once.
func TestPackWithRepeatedNames(t *testing.T) {
	path := initTestRepo(t)
	r := mustOpen(t, path)
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	c2 := commitObjects(t, head(c1), "two")
	repeated := append(append(slices.Clone(c1), c2...), c1...)
	if err := r.WritePack(repeated); err != nil {
		t.Fatal(err)
	}
	if err := r.CASRef(plumbing.ZeroHash, head(c2)); err != nil {
		t.Fatal(err)
	}
	packs, err := r.packFiles()
	if err != nil || len(packs) != 1 || int(packs[0].count) != len(repeated) {
		t.Fatalf("packs %v, %v: want one naming %d objects", packs, err, len(repeated))
	}
	r.Close()
	r = mustOpen(t, path)
	defer r.Close()
	objs := append(slices.Clone(c1), c2...)
	readsBack(t, path, objs)
	c3 := commitObjects(t, head(c2), "three")
	if err := r.WritePack(c3); err != nil {
		t.Fatal(err)
	}
	if err := r.CASRef(head(c2), head(c3)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	objs = append(objs, c3...)
	if packs, err = r.packFiles(); err != nil || len(packs) != 1 || int(packs[0].count) != len(objs) {
		t.Fatalf("after the merge: packs %v, %v; want one naming %d objects", packs, err, len(objs))
	}
	if err := r.Git(context.Background(), "fsck", "--strict"); err != nil {
		t.Fatal(err)
	}
	readsBack(t, path, objs)
}

// mustOpen opens the repository at path.
func mustOpen(t *testing.T, path string) *Repo {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// uncheckpointed opens a new repository whose journal is never checkpointed, so that its
// records stay for recovery.
func uncheckpointed(t *testing.T) (string, *Repo) {
	t.Helper()
	path := initTestRepo(t)
	r := mustOpen(t, path)
	r.SetCheckpointBytes(1 << 40)
	return path, r
}
