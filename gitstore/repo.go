package gitstore

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/gitmem/gitmem/internal/durable"
)

// mainRef is the branch that holds the memories.
const mainRef = "refs/heads/main"

// errRefMoved means the ref was not at the commit a write built on.
var errRefMoved = errors.New("refs/heads/main moved")

// repo is one bare repository. go-git's storage is not safe for concurrent use, so mu
// serializes writes against reads; objects are immutable, so reads share it.
type repo struct {
	path string

	mu sync.RWMutex // guards st, recent and recentBytes: RLock to read, Lock to change
	st *filesystem.Storage
	// recent holds the objects of the packs written since st was made, which st does not
	// know: go-git can learn of a pack only by parsing it again or by reloading every index.
	// A reload (at the next merge, or when recent grows past maxRecentBytes) empties it.
	recent      map[plumbing.Hash]plumbing.EncodedObject
	recentBytes int64

	packs int // packs written since the last count; the writer goroutine's only
}

// initRepo creates a bare repository at path with main as its default branch and the
// configuration of repoConfig.
func initRepo(path string) error {
	_, err := git.PlainInitWithOptions(path, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.ReferenceName(mainRef)},
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

func openRepo(path string) (*repo, error) {
	if _, err := os.Stat(filepath.Join(path, "objects")); err != nil {
		return nil, fmt.Errorf("open repository %s: %w", path, err)
	}
	if err := ensureConfig(path); err != nil {
		return nil, err
	}
	r := &repo{path: path, st: newStorage(path), recent: map[plumbing.Hash]plumbing.EncodedObject{}}
	packs, err := r.packFiles()
	if err != nil {
		return nil, err
	}
	r.packs = len(packs)
	return r, nil
}

func newStorage(path string) *filesystem.Storage {
	fs := syncPacksFS{osfs.New(path)}
	st := filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(32*cache.MiByte), filesystem.Options{})
	// Load the pack indexes now, while no reader can see st: go-git loads them lazily on
	// the first lookup, and two readers doing that at once see a half-filled index.
	_ = st.HasEncodedObject(plumbing.ZeroHash)
	return st
}

// object reads one object.
func (r *repo) object(h plumbing.Hash) (plumbing.EncodedObject, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if o, ok := r.recent[h]; ok {
		return o, nil
	}
	o, err := r.st.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	return o, nil
}

// blob returns the content of a blob.
func (r *repo) blob(h plumbing.Hash) ([]byte, error) {
	o, err := r.object(h)
	if err != nil {
		return nil, err
	}
	return readEncoded(o)
}

func readEncoded(o plumbing.EncodedObject) ([]byte, error) {
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

// writePack writes objects as one new pack with its index, durably, and tells the storage
// about it. One pack per group of commits costs a few file operations whatever the group's
// size, where loose objects would cost a file each.
func (r *repo) writePack(objs []plumbing.EncodedObject) error {
	dir := filepath.Join(r.path, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	bw := bufio.NewWriterSize(tmp, 256<<10)
	cw := &countingWriter{w: bw, h: sha1.New()}
	var hdr [12]byte
	copy(hdr[:4], "PACK")
	binary.BigEndian.PutUint32(hdr[4:8], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)))
	if _, err := cw.Write(hdr[:]); err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	iw := new(idxfile.Writer)
	ww := newWholeWriter()
	var size int64
	for _, o := range objs {
		off := cw.off
		crc, err := ww.write(cw, o)
		if err != nil {
			return fmt.Errorf("write object %s: %w", o.Hash(), err)
		}
		iw.Add(o.Hash(), off, crc)
		size += o.Size()
	}
	var sum plumbing.Hash
	copy(sum[:], cw.h.Sum(nil))
	if _, err := bw.Write(sum[:]); err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	if err := iw.OnFooter(sum); err != nil {
		return err
	}
	idx, err := iw.Index()
	if err != nil {
		return err
	}
	if err := publishPack(tmp.Name(), idx, filepath.Join(dir, "pack-"+sum.String())); err != nil {
		return err
	}
	r.mu.Lock()
	for _, o := range objs {
		r.recent[o.Hash()] = o
	}
	r.recentBytes += size
	r.mu.Unlock()
	r.packs++
	if r.recentBytes > maxRecentBytes {
		r.reload()
	}
	return nil
}

// maxRecentBytes bounds the objects kept in memory until go-git's storage is reloaded.
const maxRecentBytes = 32 << 20

// publishPack makes a written and fsynced pack visible: its index first (written and fsynced
// through a temporary file), then the pack, then the directory fsynced.
func publishPack(tmpPack string, idx *idxfile.MemoryIndex, base string) error {
	if err := writeIdx(idx, base+".idx"); err != nil {
		return err
	}
	if err := os.Rename(tmpPack, base+".pack"); err != nil {
		return fmt.Errorf("publish pack: %w", err)
	}
	return durable.SyncDir(filepath.Dir(base))
}

func (r *repo) loosePath(h plumbing.Hash) string {
	s := h.String()
	return filepath.Join(r.path, "objects", s[:2], s[2:])
}

// listLoose finds the loose objects on disk.
func (r *repo) listLoose() ([]plumbing.Hash, error) {
	dirs, err := os.ReadDir(filepath.Join(r.path, "objects"))
	if err != nil {
		return nil, fmt.Errorf("list objects of %s: %w", r.path, err)
	}
	var hs []plumbing.Hash
	for _, d := range dirs {
		if len(d.Name()) != 2 || !d.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(r.path, "objects", d.Name()))
		if err != nil {
			return nil, fmt.Errorf("list objects of %s: %w", r.path, err)
		}
		for _, f := range files {
			if len(f.Name()) == 38 && !strings.HasPrefix(f.Name(), "tmp") {
				h, ok := parseHash(d.Name() + f.Name())
				if ok {
					hs = append(hs, h)
				}
			}
		}
	}
	return hs, nil
}

// readRef returns the commit main points at, or the zero hash if main does not exist yet.
// It reads the loose ref first and then packed-refs, as git does.
func (r *repo) readRef() (plumbing.Hash, error) {
	b, err := os.ReadFile(filepath.Join(r.path, mainRef))
	if err == nil {
		h, ok := parseHash(strings.TrimSpace(string(b)))
		if !ok {
			return plumbing.ZeroHash, fmt.Errorf("read %s of %s: not a commit hash: %q", mainRef, r.path, b)
		}
		return h, nil
	}
	if !os.IsNotExist(err) {
		return plumbing.ZeroHash, fmt.Errorf("read %s of %s: %w", mainRef, r.path, err)
	}
	packed, err := os.ReadFile(filepath.Join(r.path, "packed-refs"))
	if os.IsNotExist(err) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read packed-refs of %s: %w", r.path, err)
	}
	for _, line := range strings.Split(string(packed), "\n") {
		hash, name, ok := strings.Cut(line, " ")
		if ok && name == mainRef {
			if h, ok := parseHash(hash); ok {
				return h, nil
			}
		}
	}
	return plumbing.ZeroHash, nil
}

// casRef moves main from old to new, durably, the way git does: it takes main.lock (which
// also excludes a git process updating the ref), checks the current value, writes and
// fsyncs the lock file, renames it over the ref and fsyncs the directory.
func (r *repo) casRef(old, new plumbing.Hash) error {
	l, err := r.lockRef()
	if err != nil {
		return err
	}
	defer l.release()
	cur, err := r.readRef()
	if err != nil {
		return err
	}
	if cur != old {
		return errRefMoved
	}
	return l.commit(new)
}

// refLock is main.lock held: main cannot move, not even by a git process, until it is
// committed or released.
type refLock struct {
	f                 *os.File
	lockPath, refPath string
	committed         bool
}

// lockRef takes main.lock, waiting a little for a git process that holds it.
func (r *repo) lockRef() (*refLock, error) {
	refPath := filepath.Join(r.path, mainRef)
	lockPath := refPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(refPath), 0o755); err != nil {
		return nil, fmt.Errorf("update %s: %w", mainRef, err)
	}
	for wait := time.Millisecond; ; wait *= 2 {
		f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			return &refLock{f: f, lockPath: lockPath, refPath: refPath}, nil
		}
		if !os.IsExist(err) || wait > time.Second {
			return nil, &Error{Kind: KindConflict, Message: fmt.Sprintf("%s is locked by another git process (%s exists)", mainRef, lockPath), Err: err}
		}
		time.Sleep(wait)
	}
}

// commit moves main to new: it writes and fsyncs the lock file, renames it over the ref and
// fsyncs the directory.
func (l *refLock) commit(new plumbing.Hash) error {
	if _, err := l.f.WriteString(new.String() + "\n"); err != nil {
		return fmt.Errorf("write %s: %w", l.lockPath, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.lockPath, err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.lockPath, err)
	}
	if err := os.Rename(l.lockPath, l.refPath); err != nil {
		return fmt.Errorf("rename %s: %w", l.lockPath, err)
	}
	l.committed = true
	return durable.SyncDir(filepath.Dir(l.refPath))
}

// release gives the lock up without moving main, unless it was committed.
func (l *refLock) release() {
	if !l.committed {
		l.f.Close()
		os.Remove(l.lockPath)
	}
}

// packLoose moves loose objects (written by git processes, such as a push) into one pack: it writes and fsyncs the pack and its
// index, tells the storage about them, and only then removes the loose files.
func (r *repo) packLoose() error {
	loose, err := r.listLoose()
	if err != nil || len(loose) == 0 {
		return err
	}
	hs := dedupe(loose)
	var buf bytes.Buffer
	r.mu.RLock()
	_, err = packfile.NewEncoder(&buf, r.st, false).Encode(hs, 0)
	r.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("pack %d loose objects of %s: %w", len(hs), r.path, err)
	}
	if err := r.installPack(&buf); err != nil {
		return err
	}
	for _, h := range hs {
		if err := os.Remove(r.loosePath(h)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove packed loose object: %w", err)
		}
	}
	return nil
}

// installPack writes a pack and its index through the storage, which learns of them.
func (r *repo) installPack(pack io.Reader) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, err := r.st.PackfileWriter()
	if err != nil {
		return fmt.Errorf("write pack of %s: %w", r.path, err)
	}
	if _, err := io.Copy(w, pack); err != nil {
		w.Close()
		return fmt.Errorf("write pack of %s: %w", r.path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write pack of %s: %w", r.path, err)
	}
	return durable.SyncDir(filepath.Join(r.path, "objects", "pack"))
}

// reload replaces the storage, so that packs added or removed by a git process are seen.
func (r *repo) reload() {
	st := newStorage(r.path) // reads every index: outside the lock
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st = st
	clear(r.recent)
	r.recentBytes = 0
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

// commitObject reads and decodes a commit.
func (r *repo) commit(h plumbing.Hash) (*object.Commit, error) {
	return readCommit(r, h)
}

// syncPacksFS fsyncs every file written under objects/pack before it is closed, so that the
// pack writer's rename publishes only durable data.
type syncPacksFS struct{ billy.Filesystem }

func (fs syncPacksFS) TempFile(dir, prefix string) (billy.File, error) {
	return wrapSync(fs.Filesystem.TempFile(dir, prefix))
}

func (fs syncPacksFS) Create(name string) (billy.File, error) {
	return wrapSync(fs.Filesystem.Create(name))
}

func (fs syncPacksFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	f, err := fs.Filesystem.OpenFile(name, flag, perm)
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return f, err
	}
	return wrapSync(f, err)
}

func wrapSync(f billy.File, err error) (billy.File, error) {
	if err != nil || !strings.Contains(filepath.ToSlash(f.Name()), "objects/pack/") {
		return f, err
	}
	return syncOnClose{f}, nil
}

type syncOnClose struct{ billy.File }

func (f syncOnClose) Close() error {
	if s, ok := f.File.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			f.File.Close()
			return fmt.Errorf("sync %s: %w", f.Name(), err)
		}
	}
	return f.File.Close()
}

// parseHash parses a full hex object name.
func parseHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 || !plumbing.IsHash(s) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(s), true
}
