// Package fsmount serves a memory store as a directory, over FUSE (hanwen/go-fuse): its
// memories are files and its folders directories. A file written and closed (or fsynced)
// becomes one version by the mount's actor; rename, mkdir, rmdir and unlink map to the
// store's operations, a folder's rename to one group of versions. What the store refuses is
// refused with an errno and a line in the log, and nothing half-written is committed.
//
// Files that editors and tools keep beside the ones they edit (vim's swap and backup files,
// sed -i's temporary file, a temporary file renamed over its target) have scratch names
// (IsScratch): they live in the mount's memory only and never reach the store, and renaming
// one over a memory is one write of that memory.
package fsmount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gitmem/gitmem/gitstore"
)

// Store is what the mount needs of a store: *gitstore.Store, opened here, or a server's
// through package client.
type Store interface {
	gitstore.MemoryReader
	ID() string
	Write(ctx context.Context, in gitstore.WriteInput) (gitstore.WriteResult, error)
	UpdateMemory(ctx context.Context, in gitstore.UpdateInput) (gitstore.WriteResult, error)
	Delete(ctx context.Context, in gitstore.DeleteInput) (gitstore.Version, error)
	MovePath(ctx context.Context, in gitstore.MovePathInput) ([]gitstore.WriteResult, error)
}

// Options configure a mount.
type Options struct {
	Store Store
	// Reader answers reads: the store if nil, or a snapshot of its past (Store.ReaderAt),
	// which makes the mount read-only.
	Reader gitstore.MemoryReader
	// Actor is who the mount's writes are recorded as (a server records its key or the
	// session of its client instead).
	Actor    gitstore.Actor
	ReadOnly bool
	// CacheFor is how long a folder's listing is reused before the store is asked again,
	// and how long the kernel keeps names and attributes: the delay before other writers'
	// changes show. Default 500 ms.
	CacheFor time.Duration
	Log      *slog.Logger
}

// Mount is a store mounted at a directory.
type Mount struct {
	dir    string
	server *fuse.Server
	fs     *mountFS
	served chan struct{} // closed once the file system is unmounted, from here or outside
}

// New mounts the store at dir, an existing empty directory. A directory left mounted by a
// process that died (its FUSE connection gone) is unmounted first.
func New(dir string, opts Options) (*Mount, error) {
	if opts.Store == nil {
		return nil, errors.New("fsmount: no store")
	}
	if opts.Reader == nil {
		opts.Reader = opts.Store
	} else {
		opts.ReadOnly = true
	}
	opts.Store, opts.Reader = steadyStore{opts.Store}, steadyReader{opts.Reader}
	if opts.CacheFor <= 0 {
		opts.CacheFor = 500 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if err := recoverStale(dir); err != nil {
		return nil, err
	}
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: make the directory first (mkdir -p %s)", dir, dir)
	}
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	m := &mountFS{opts: opts, started: time.Now(), listings: map[string]listing{}, local: map[string]*localFile{},
		dirs: map[string]bool{}, away: map[string]string{}, open: map[*fileNode]bool{}, contents: newContentCache(32 << 20)}
	root := &dirNode{m: m}
	m.root = root
	timeout := opts.CacheFor
	fsName := "gitmem:" + opts.Store.ID()
	server, err := fs.Mount(dir, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName: fsName, Name: "gitmem", DirectMount: true,
			// Memories have no extended attributes: the kernel asks for none, and tools that
			// copy them (sed -i, cp -a) see a file system without them.
			DisableXAttrs: true,
			// Reads come from the store: the kernel does not keep pages across opens.
			MaxReadAhead: 128 << 10,
			// O_TRUNC comes with the open that asks for it, not as a truncate of no open
			// afterwards: the truncation is then the open's change, which a refusal of the
			// content it was part of fails.
			ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC,
		},
		EntryTimeout: &timeout, AttrTimeout: &timeout, NegativeTimeout: &timeout,
		UID: uint32(os.Getuid()), GID: uint32(os.Getgid()),
	})
	if err != nil {
		if errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "permission") {
			return nil, fmt.Errorf("mount %s: %w (FUSE needs /dev/fuse and root, or the fusermount3 program)", dir, err)
		}
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	mt := &Mount{dir: dir, server: server, fs: m, served: make(chan struct{})}
	go func() { server.Wait(); close(mt.served) }()
	return mt, nil
}

// Wait waits until the file system is unmounted.
func (m *Mount) Wait() { <-m.served }

// Unmount unmounts the directory; if programs still use it, it is detached (lazily
// unmounted) so that it is gone for new users at once. Then memories moved to a scratch
// name and left there are deleted, as the mount showed them gone.
func (m *Mount) Unmount(ctx context.Context) error {
	m.fs.warnOpen()
	var err error
	select {
	case <-m.served: // unmounted from outside (umount)
	default:
		if err = m.server.Unmount(); err != nil {
			if derr := detach(m.dir); derr == nil {
				err = nil
			}
		}
	}
	m.fs.settle(ctx)
	return err
}

// recoverStale unmounts dir if a dead FUSE server left it mounted ("transport endpoint is
// not connected").
func recoverStale(dir string) error {
	_, err := os.Stat(dir)
	if errors.Is(err, syscall.ENOTCONN) {
		if err := detach(dir); err != nil {
			return fmt.Errorf("%s was left mounted by a process that ended, and unmounting it failed: %w", dir, err)
		}
	}
	return nil
}

// mountFS is the state of a mount that the store does not hold.
type mountFS struct {
	opts    Options
	root    *dirNode
	started time.Time // folders' times: git keeps none

	mu       sync.Mutex
	listings map[string]listing    // a folder's entries (relative path, "" for the root)
	local    map[string]*localFile // files held here: scratch ones, and new ones not yet written
	dirs     map[string]bool       // folders made here or emptied here, which git cannot hold
	away     map[string]string     // a memory moved to a scratch name -> that name
	open     map[*fileNode]bool    // the files open now
	contents *contentCache
}

// localFile is a file the store does not hold (yet).
type localFile struct {
	data    []byte
	mtime   time.Time
	scratch bool
}

func (m *mountFS) log() *slog.Logger { return m.opts.Log }

// warnOpen logs each open file whose changes since its last close are not written: the
// process that serves the mount ends, and they with it.
func (m *mountFS) warnOpen() {
	m.mu.Lock()
	open := make([]*fileNode, 0, len(m.open))
	for f := range m.open {
		open = append(open, f)
	}
	m.mu.Unlock()
	for _, f := range open {
		f.mu.Lock()
		dirty := f.dirty
		f.mu.Unlock()
		if rel, ok := f.rel(); ok && dirty {
			m.log().Warn("mount: unmounted while a program has the file open: what it wrote since its last close or fsync is not written", "path", "/"+rel)
		}
	}
}

// settle deletes the memories that were moved to a scratch name and not written again.
func (m *mountFS) settle(ctx context.Context) {
	m.mu.Lock()
	away := m.away
	m.away = map[string]string{}
	m.mu.Unlock()
	for rel := range away {
		if _, err := m.opts.Store.Delete(ctx, gitstore.DeleteInput{Path: "/" + rel, Actor: m.opts.Actor}); err != nil && !gitstore.IsKind(err, gitstore.KindNotFound) {
			m.log().Warn("mount: delete a memory moved to a scratch name", "path", "/"+rel, "err", err)
		}
	}
}
