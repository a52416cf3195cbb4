package odb

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Creating a file is the dearest file operation on the write path (on this project's disk,
// 0.23 ms, more than an fsync: TRAPS.md), and each group writes two, its pack and the pack's
// index. So a goroutine keeps a few empty files made ahead in objects/pack, and a group
// writes into those: the creation happens beside the writer, not in its way. The names are
// temporary ones (tmp_spare_*), renamed into place as any temporary pack or index is; a crash
// leaves at most a few empty ones, which Open removes. git prune (gc) removes tmp_ files
// older than its grace period (10 minutes): a spare older than spareMaxAge is not used.

// spareFiles is how many empty files are kept ready: a group takes three (its pack, its
// index, and main.lock: lockfile_linux.go).
const spareFiles = 8

// sparePrefix begins the name of a file made ahead.
const sparePrefix = "tmp_spare_"

// spareMaxAge is how long a spare may wait: well under git prune's grace in gc.go.
const spareMaxAge = 2 * time.Minute

type spare struct {
	f    *os.File
	made time.Time
}

type spares struct {
	dir     string
	once    sync.Once // starts fill, or, at close, makes sure it never starts
	stopped sync.Once // closes quit: close may be called more than once
	ch      chan spare
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

func newSpares(dir string) *spares {
	return &spares{dir: dir, ch: make(chan spare, spareFiles), wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
}

// take returns an empty file to write a pack or an index into: one made ahead if there is
// one, else a new one.
func (s *spares) take() (*os.File, error) {
	s.once.Do(func() { go s.fill() })
	defer func() {
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

// fill keeps ch full until close.
func (s *spares) fill() {
	defer close(s.done)
	for {
		for len(s.ch) < cap(s.ch) {
			f, err := os.CreateTemp(s.dir, sparePrefix)
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
		case <-time.After(spareMaxAge / 2): // old spares are replaced at the next take
		case <-s.quit:
			return
		}
	}
}

// close stops the goroutine and removes the files it made that nobody took. It may be
// called again.
func (s *spares) close() {
	s.once.Do(func() { close(s.done) }) // fill never started: and now never will
	s.stopped.Do(func() { close(s.quit) })
	<-s.done
	for {
		select {
		case sp := <-s.ch:
			sp.f.Close()
			os.Remove(sp.f.Name())
		default:
			return
		}
	}
}

// removeSpares removes the files made ahead that a crash left in dir, and the indexes
// whose pack is missing: a pack is published index first, so a crash between the two
// renames leaves an index alone, which git fsck reports as a broken pack.
func removeSpares(dir string) {
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
