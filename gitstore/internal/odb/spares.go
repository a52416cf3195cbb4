package odb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Creating a file is the dearest file operation on the write path (on this project's disk,
// 0.23 ms, more than an fsync: TRAPS.md), and each group writes two, its pack and the pack's
// index. So a goroutine keeps a few empty files made ahead in objects/pack, and a group
// writes into those: the creation happens beside the writer, not in its way. The names are
// temporary ones (tmp_spare_*), renamed into place as any temporary pack or index is; a crash
// leaves at most a few empty ones, which Open removes. git prune (gc) removes tmp_ files
// older than its grace period (10 minutes): a spare older than spareMaxAge is not used.
//
// The goroutine creates each file in a directory of its own (SpareDir) and then moves it
// into objects/pack: a creation holds its directory's lock for as long as it takes, and every
// rename in that directory waits for it. Measured: a rename in a directory cost 85 µs while
// another goroutine created files there, 11 µs while it created them elsewhere.
//
// Within SpareDir, files are created in a subdirectory that is replaced every spareDirFiles
// files. ext4 without a journal (this project's disk) takes a new file's inode from its
// directory's block group, scanning past every inode of the group freed in the last minutes,
// and the writes free as many files as they create: once the group is full of them, each
// creation scanned all of it (up to a millisecond; 40% of the CPU of a run of writes, by
// perf). SpareDir has ext4's top-directory flag (markTopDir), with which ext4 places each
// subdirectory, and so its files, in a block group of its own, where few inodes were freed.
// Elsewhere the flag does not exist and the subdirectories cost a mkdir now and then.

// spareFiles is how many empty files are kept ready: a group takes three (its pack, its
// index, and main.lock: lockfile_linux.go). At 100,000 memories, where merges and the
// collector share the other core, the goroutine falls behind and the writer makes its own:
// with 8, 40 µs a write (a CPU profile of 2,000 writes); with 16, 462 of the 9,000 files
// that 3,000 writes took, against 54 with 48. Each waits open: a descriptor. A repository
// opened with OpenFewSpares (a proposal's fork, written now and then) keeps none.
const spareFiles = 48

// spareDirFiles is how many files are created in one subdirectory of SpareDir: about a
// second of writes on this disk. A creation scans past at most that many freed inodes.
const spareDirFiles = 1024

// trashFiles is how many files may wait for the goroutine to close them (discard).
const trashFiles = 64

// sparePrefix begins the name of a file made ahead.
const sparePrefix = "tmp_spare_"

// SpareDir is the directory, in the repository, where spares are created (git ignores it).
const SpareDir = "gitmem-spares"

// spareMaxAge is how long a spare may wait: well under git prune's grace in gc.go.
const spareMaxAge = 2 * time.Minute

type spare struct {
	f    *os.File
	made time.Time
}

type spares struct {
	dir     string // objects/pack, where spares wait
	makeDir string // SpareDir, in a subdirectory of which they are created
	sub     string // that subdirectory ("" until the first file); only fill uses it
	subLeft int    // how many files sub may still take
	session int64  // with n, names spares uniquely in dir
	n       atomic.Int64
	once    sync.Once // starts fill, or, at close, makes sure it never starts
	stopped sync.Once // closes quit: close may be called more than once
	ch      chan spare
	trash   chan *os.File // files to close (discard)
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

// newSpares keeps n files ready in dir (none if n is 0: take then creates each).
func newSpares(dir, makeDir string, n int) *spares {
	return &spares{dir: dir, makeDir: makeDir, session: time.Now().UnixNano(),
		ch: make(chan spare, n), trash: make(chan *os.File, trashFiles), wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
}

// make creates an empty file in a subdirectory of makeDir and moves it into dir.
func (s *spares) make() (*os.File, error) {
	if s.subLeft == 0 { // nextSub leaves it 0 when it fails
		if err := s.nextSub(); err != nil {
			return nil, err
		}
	}
	base := fmt.Sprintf("%s%x_%d", sparePrefix, s.session, s.n.Add(1)) // unique in dir and sub
	const flags = os.O_RDWR | os.O_CREATE | os.O_EXCL
	fd, err := openFD(filepath.Join(s.sub, base), flags, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // removed by hand since Open
		if err = s.nextSub(); err == nil {
			fd, err = openFD(filepath.Join(s.sub, base), flags, 0o600)
		}
	}
	if err != nil {
		return nil, err
	}
	s.subLeft--
	// Kept open under its new name, which placePack and createLock rename from.
	made, name := filepath.Join(s.sub, base), filepath.Join(s.dir, base)
	if err := renameNoReplace(made, name); err != nil {
		syscall.Close(int(fd))
		os.Remove(made)
		return nil, err
	}
	return os.NewFile(fd, name), nil
}

// nextSub replaces the subdirectory that files are created in by a new one, and removes the
// old one, empty once its files were moved (if not, Open removes it).
func (s *spares) nextSub() error {
	if s.sub != "" {
		os.Remove(s.sub)
		s.sub, s.subLeft = "", 0
	}
	sub, err := os.MkdirTemp(s.makeDir, "")
	if errors.Is(err, fs.ErrNotExist) { // makeDir removed by hand since Open
		// Only the directory itself: were the repository gone (a store deleted), nothing.
		if err = os.Mkdir(s.makeDir, 0o755); err == nil {
			markTopDir(s.makeDir)
			sub, err = os.MkdirTemp(s.makeDir, "")
		}
	}
	if err != nil {
		return err
	}
	s.sub, s.subLeft = sub, spareDirFiles
	return nil
}

// take returns an empty file to write a pack or an index into: one made ahead if there is
// one, else a new one.
func (s *spares) take() (*os.File, error) {
	s.once.Do(func() { go s.fill() })
	defer func() {
		if len(s.ch) > cap(s.ch)/2 {
			return // woken when half are gone: one round makes several
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}()
	for {
		select {
		case sp := <-s.ch:
			if time.Since(sp.made) < spareMaxAge {
				return sp.f, nil
			}
			sp.f.Close()
			os.Remove(sp.f.Name())
		default:
			return os.CreateTemp(s.dir, sparePrefix)
		}
	}
}

// discard has the goroutine close f, a file whose name is gone, beside the writer: the
// close frees its inode, which costs on this disk what creating a file does. It closes f now
// if too many wait.
func (s *spares) discard(f *os.File) {
	s.once.Do(func() { go s.fill() })
	select {
	case s.trash <- f:
	default:
		f.Close()
	}
}

// fill keeps ch full, and closes what discard queues, until close.
func (s *spares) fill() {
	defer close(s.done)
	for {
		for len(s.ch) < cap(s.ch) {
			f, err := s.make()
			if err != nil {
				break // the writer makes its own; tried again at the next wake
			}
			select {
			case s.ch <- spare{f, time.Now()}:
			default:
				f.Close()
				os.Remove(f.Name())
			}
		}
		select {
		case <-s.wake:
		case f := <-s.trash:
			f.Close()
		case <-time.After(spareMaxAge / 2): // old spares are replaced at the next take
		case <-s.quit:
			return
		}
	}
}

// close stops the goroutine, removes the files it made that nobody took and closes those
// still to discard. It may be called again.
func (s *spares) close() {
	s.once.Do(func() { close(s.done) }) // fill never started: and now never will
	s.stopped.Do(func() { close(s.quit) })
	<-s.done
	if s.sub != "" { // fill has returned: sub is ours
		os.Remove(s.sub)
		s.sub = ""
	}
	for {
		select {
		case sp := <-s.ch:
			sp.f.Close()
			os.Remove(sp.f.Name())
		case f := <-s.trash:
			f.Close()
		default:
			return
		}
	}
}

// removeSpares removes the files made ahead that a crash left in dir or in makeDir's
// subdirectories, and the indexes whose pack is missing: a pack is published index first, so
// a crash between the two renames leaves an index alone, which git fsck reports as a broken
// pack.
func removeSpares(dir, makeDir string) {
	made, _ := os.ReadDir(makeDir)
	for _, e := range made {
		os.RemoveAll(filepath.Join(makeDir, e.Name())) // a subdirectory and what it holds
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, sparePrefix) {
			os.Remove(filepath.Join(dir, name))
		}
		if base, ok := strings.CutSuffix(name, ".idx"); ok {
			if _, err := os.Stat(filepath.Join(dir, base+".pack")); os.IsNotExist(err) {
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
}

// linkRename renames old to new unless new exists, with a hard link and an unlink.
func linkRename(old, new string) error {
	if err := os.Link(old, new); err != nil {
		return err
	}
	return os.Remove(old)
}
