// Package odb is how a store's bytes reach disk: the bare repository's object database
// (packs written durably by gitmem, loose objects left by git processes, pack merging and
// repacking) and its main ref (read, compare-and-swap and lock, as git does, through
// main.lock). gitstore builds commits and the catalog on top of it; odb knows nothing of
// memories, versions or the catalog.
//
// A Repo is safe for concurrent reads. Writes (WritePack, CASRef, RepackAll) are made by one
// goroutine at a time, the store's writer; maintenance (PackLoose, MergePacks) may run in
// other goroutines at the same time, and Reload in any: PackLoose, Reload, the pack swap of
// RepackAll and a merge's listing and swap of packs exclude each other (swap), so that packs
// listed before a merge never replace the set made after it, and merges may run beside each
// other on packs apart. RepackAll must not run beside maintenance (the store holds them
// apart).
package odb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/gitmem/gitmem/internal/durable"
)

// MainRef is the branch that holds the memories.
const MainRef = "refs/heads/main"

// Repo is one bare repository. Reads look in an immutable set of packs (objects.go),
// replaced whole under mu; objects are immutable, so reads share everything else.
type Repo struct {
	path    string
	mainRef string // path's MainRef, the file of main: named once, not at each write

	mu sync.Mutex // held to replace objs
	// placing is held (read) by placePack from its renames until its pack is in the set,
	// and (write) by MergePacks while it lists the packs.
	placing sync.RWMutex
	objs    atomic.Pointer[objectSet]
	gen     atomic.Uint64 // counts packs joining the set

	// swap is held by PackLoose, Reload and RepackAll's swap for the whole of their work,
	// from listing the packs to swapping the set made from them, and by MergePacks while it
	// takes its packs and while it swaps its merged pack in.
	swap sync.Mutex
	// merging names the packs that merges running now have taken, and the packs they are
	// writing, until the merge ends; merges counts those merges. Both are held under swap.
	merging map[string]bool
	merges  int

	packs atomic.Int64 // packs, as of the last count plus those written since

	spares *spares // empty files made ahead for packs and indexes (spares.go)
	// leftLock is main's old file, held open, when moveRef could not remove main.lock, which
	// names it (lockfile_linux.go).
	leftLock atomic.Pointer[os.File]

	// The journal (journal.go, publish.go): the writer goroutine's, as are standby,
	// checkpointAt and broken; the syncer fsyncs beside it. journal takes the records;
	// standby is the other file, empty or holding the records before journal's.
	journal      *journal
	standby      *journal
	syncer       *syncer
	checkpointAt int64
	broken       error
	packSums     packSums // the writer's last pack, for the next one's checksum
	// foreign is set when the packs were listed again for objects that a git process wrote:
	// the next group makes them durable before its record (Publish).
	foreign atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// Init creates a bare repository at path with main as its default branch and the
// configuration of repoConfig.
func Init(path string) error {
	_, err := git.PlainInitWithOptions(path, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.ReferenceName(MainRef)},
		Bare:        true,
	})
	if err != nil {
		return fmt.Errorf("init repository %s: %w", path, err)
	}
	return ensureConfig(path)
}

// repoConfig is the configuration of a store's repository. The core options are those that
// git init --bare writes: without core.repositoryformatversion, stock git ignores core.bare
// and does not take the repository for bare (git --git-dir R rev-parse
// --is-bare-repository answers false). git's automatic gc is off, so that the git CLI never
// repacks behind go-git's back. An option marked keep keeps a value the config has already.
var repoConfig = []struct {
	section, key, value string
	keep                bool
}{
	{"core", "repositoryformatversion", "0", true},
	{"core", "filemode", "true", true},
	{"core", "bare", "true", false},
	{"core", "logallrefupdates", "false", false},
	{"gc", "auto", "0", false},
	{"receive", "autogc", "false", false},
}

// ensureConfig gives the repository at path the options of repoConfig, keeping the rest of
// its config, and writes the config durably if that changed it: stores made before an
// option was added get it when they open. It is idempotent.
func ensureConfig(path string) error {
	file := filepath.Join(path, "config")
	raw, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read config of %s: %w", path, err)
	}
	cfg := gitconfig.New()
	if err := gitconfig.NewDecoder(bytes.NewReader(raw)).Decode(cfg); err != nil {
		return fmt.Errorf("read config of %s: %w", path, err)
	}
	changed := false
	for _, o := range repoConfig {
		sec := cfg.Section(o.section)
		if sec.HasOption(o.key) && (o.keep || sec.Option(o.key) == o.value) {
			continue
		}
		sec.SetOption(o.key, o.value)
		changed = true
	}
	if !changed {
		return nil
	}
	// In core, the options in git init's order, before any other.
	rank := func(key string) int {
		for i, o := range repoConfig[:3] {
			if strings.EqualFold(key, o.key) {
				return i
			}
		}
		return 3
	}
	core := cfg.Section("core")
	sort.SliceStable(core.Options, func(i, j int) bool { return rank(core.Options[i].Key) < rank(core.Options[j].Key) })
	var buf bytes.Buffer
	if err := gitconfig.NewEncoder(&buf).Encode(cfg); err != nil {
		return fmt.Errorf("write config of %s: %w", path, err)
	}
	return durable.WriteFile(file, buf.Bytes(), 0o644)
}

// Open opens the bare repository at path, giving its config the options of repoConfig.
func Open(path string) (*Repo, error) { return open(path, spareFiles) }

// OpenFewSpares is Open for a repository written now and then (a proposal's fork): it keeps
// no empty files ready for the writer, which creates each when it needs it, and so holds
// spareFiles fewer descriptors.
func OpenFewSpares(path string) (*Repo, error) { return open(path, 0) }

func open(path string, spares int) (*Repo, error) {
	if _, err := os.Stat(filepath.Join(path, "objects")); err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	if err := ensureConfig(path); err != nil {
		return nil, err
	}
	packDir := filepath.Join(path, "objects", "pack")
	makeDir := filepath.Join(path, SpareDir)
	if err := os.MkdirAll(makeDir, 0o755); err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	markTopDir(makeDir)
	removeSpares(packDir, makeDir)
	removeBrokenPacks(packDir)
	j, standby, recs, err := openJournals(path)
	if err != nil {
		return nil, err
	}
	r := &Repo{path: path, mainRef: filepath.Join(path, MainRef), spares: newSpares(packDir, makeDir, spares), journal: j, standby: standby, checkpointAt: checkpointBytes, merging: map[string]bool{}}
	r.objs.Store(&objectSet{cache: cache.NewObjectLRU(objectCacheSize)})
	err = r.reload()
	if err == nil {
		err = r.recover(recs)
	}
	if err == nil {
		err = errors.Join(j.wipe(), standby.wipe()) // the records are durable elsewhere now
	}
	if err != nil {
		j.close()
		standby.close()
		r.spares.close()
		return nil, err
	}
	if r.syncer, err = newSyncer(packDir, j.seq, syncPause); err != nil {
		j.close()
		standby.close()
		r.spares.close()
		return nil, err
	}
	r.packs.Store(int64(len(r.objs.Load().packs))) // listed by reload above: no index read again
	return r, nil
}

// objectCacheSize bounds the objects kept decoded in memory.
const objectCacheSize = 32 * cache.MiByte

// Close checkpoints the journal and removes the files made ahead that no pack used. The
// repository is not to be written after.
func (r *Repo) Close() error {
	r.closeOnce.Do(func() {
		r.syncer.stop()
		var err error
		if r.broken == nil {
			err = r.ForgetJournal() // a checkpoint, and zeros: the next open writes nothing
		}
		r.spares.close()
		if f := r.leftLock.Swap(nil); f != nil {
			f.Close() // its main.lock stays, for the next Open to remove
		}
		for _, p := range r.objs.Load().packs {
			p.f.Close()
		}
		r.closeErr = errors.Join(err, r.journal.close(), r.standby.close())
	})
	return r.closeErr
}

// Path returns the path of the repository.
func (r *Repo) Path() string { return r.path }

// Packs returns how many packs the repository has, as last counted or written; the writer
// goroutine's only.
func (r *Repo) Packs() int { return int(r.packs.Load()) }

// Object reads one object.
//
// A git process (a push, a fetch) may have added a pack that the set does not list yet.
// Every object asked for here was on disk before anyone could ask for it, so a miss lists
// the packs again before it is believed. Code that holds swap uses lookup instead.
//
// A read from a pack that a merge has just swapped out and closed fails too; it is tried
// again on the set that replaced it, for as long as the set keeps changing under it (a few
// times at most).
func (r *Repo) Object(h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, err := r.lookup(h); err == nil {
		return o, nil
	}
	// Not Reload: a miss is not a sign that a git process wrote, and Reload would make the
	// next group pay a syncfs for it. Callers that ran git call Reload themselves.
	if err := r.reload(); err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	o, err := r.findSettled(h, nil)
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	return o, nil
}

// findSettled reads h from the set of packs, through c or else the set's cache; a read that
// failed on a set that a merge has swapped since (closing the packs it merged) is tried again
// on the new one, a few times at most.
func (r *Repo) findSettled(h plumbing.Hash, c cache.Object) (plumbing.EncodedObject, error) {
	for tries := 1; ; tries++ {
		set := r.objs.Load()
		sc := c
		if sc == nil {
			sc = set.cache
		}
		o, err := r.find(set, sc, h, 0)
		if err == nil || tries == 3 || r.objs.Load() == set {
			return o, err
		}
	}
}

// lookup reads one object from the cache, the set of packs or a loose file.
func (r *Repo) lookup(h plumbing.Hash) (plumbing.EncodedObject, error) {
	set := r.objs.Load()
	return r.find(set, set.cache, h, 0)
}

// Blob returns the content of a blob.
func (r *Repo) Blob(h plumbing.Hash) ([]byte, error) {
	o, err := r.Object(h)
	if err != nil {
		return nil, err
	}
	return ReadEncoded(o)
}

// ReadEncoded returns the content of an object.
func ReadEncoded(o plumbing.EncodedObject) ([]byte, error) {
	rd, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", o.Hash(), err)
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", o.Hash(), err)
	}
	return b, nil
}

// Reload lists the packs again, so that packs added or removed by a git process are seen.
// Callers use it after a git process wrote into the repository (a push, a fetch): the next
// group also makes those objects durable (foreign).
func (r *Repo) Reload() {
	r.foreign.Store(true)
	if err := r.reload(); err != nil {
		slog.Warn("list packs", "repo", r.path, "err", err)
	}
}

// reload lists the packs again.
func (r *Repo) reload() error {
	r.swap.Lock()
	defer r.swap.Unlock()
	return r.relist(nil, false)
}

// relist makes the set the packs in the directory, less drop, with a new cache if fresh
// (objects may be gone); the caller holds swap. Only the indexes of packs new to the set are
// read.
func (r *Repo) relist(drop map[string]bool, fresh bool) error {
	since := r.gen.Load()
	listed, err := r.listPacks(r.objs.Load())
	if err != nil {
		return err
	}
	r.swapPacks(listed, since, drop, fresh)
	return nil
}

// warnPack reports a pack left out of the set.
func warnPack(base string, err error) {
	slog.Warn("pack left unread", "pack", base, "err", err)
}

func dedupe(hs []plumbing.Hash) []plumbing.Hash {
	seen := make(map[plumbing.Hash]bool, len(hs))
	out := make([]plumbing.Hash, 0, len(hs))
	for _, h := range hs {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// ParseHash parses a full hex object name.
func ParseHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 || !plumbing.IsHash(s) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(s), true
}
