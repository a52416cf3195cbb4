package odb

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/internal/durable"
)

// ErrRefMoved is CASRef's error when main was not at the commit a write built on.
var ErrRefMoved = errors.New("refs/heads/main moved")

// ErrRefLocked is LockRef's (and CASRef's) error, tested with errors.Is, when main.lock is
// held by another git process for longer than LockRef waits.
var ErrRefLocked = errors.New("main.lock is held by another git process")

// lockedError is ErrRefLocked, saying which lock file exists, with the cause.
type lockedError struct {
	msg string
	err error
}

func (e *lockedError) Error() string   { return e.msg }
func (e *lockedError) Unwrap() []error { return []error{ErrRefLocked, e.err} }

// ReadRef returns the commit main points at, or the zero hash if main does not exist yet.
// It reads the loose ref first and then packed-refs, as git does.
func (r *Repo) ReadRef() (plumbing.Hash, error) {
	b, err := readFile(r.mainRef)
	if err == nil {
		h, ok := ParseHash(strings.TrimSpace(string(b)))
		if !ok {
			return plumbing.ZeroHash, fmt.Errorf("read %s of %s: not a commit hash: %q", MainRef, r.path, b)
		}
		return h, nil
	}
	if !os.IsNotExist(err) {
		return plumbing.ZeroHash, fmt.Errorf("read %s of %s: %w", MainRef, r.path, err)
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
		if ok && name == MainRef {
			if h, ok := ParseHash(hash); ok {
				return h, nil
			}
		}
	}
	return plumbing.ZeroHash, nil
}

// readFile is os.ReadFile for a small file, opened with openFile: the writer reads main at
// every group.
func readFile(path string) ([]byte, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// CASRef moves main from old to new, durably, the way git does: it takes main.lock (which
// also excludes a git process updating the ref), checks the current value, writes and
// fsyncs the lock file, renames it over the ref and fsyncs the directory.
func (r *Repo) CASRef(old, new plumbing.Hash) error {
	l, err := r.LockRef()
	if err != nil {
		return err
	}
	defer l.Release()
	cur, err := r.ReadRef()
	if err != nil {
		return err
	}
	if cur != old {
		return ErrRefMoved
	}
	return l.Commit(new)
}

// RefLock is main.lock held: main cannot move, not even by a git process, until it is
// committed or released.
type RefLock struct {
	f                 *os.File
	lockPath, refPath string
	closed, committed bool
}

// LockRef takes main.lock, waiting a little for a git process that holds it. If the lock
// is still held after about a second, its error is ErrRefLocked.
func (r *Repo) LockRef() (*RefLock, error) { return r.lockRef(createExclusive) }

func createExclusive(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
}

// lockRef is LockRef, creating the lock file with create.
func (r *Repo) lockRef(create func(string) (*os.File, error)) (*RefLock, error) {
	refPath := r.mainRef
	lockPath := refPath + ".lock"
	r.dropLeftLock()
	for wait, made := time.Millisecond, false; ; wait *= 2 {
		f, err := create(lockPath)
		if err == nil {
			return &RefLock{f: f, lockPath: lockPath, refPath: refPath}, nil
		}
		if errors.Is(err, fs.ErrNotExist) && !made {
			// refs/heads is gone (git keeps refs in packed-refs, and a hand may remove the
			// folder): made again, once, rather than looked for at every write.
			if err := os.MkdirAll(filepath.Dir(refPath), 0o755); err != nil {
				return nil, fmt.Errorf("update %s: %w", MainRef, err)
			}
			made, wait = true, wait/2
			continue
		}
		if !os.IsExist(err) || wait > time.Second {
			return nil, &lockedError{msg: fmt.Sprintf("%s is locked by another git process (%s exists)", MainRef, lockPath), err: err}
		}
		time.Sleep(wait)
	}
}

// Commit moves main to new durably: it writes and fsyncs the lock file, renames it over the
// ref and fsyncs the directory.
func (l *RefLock) Commit(new plumbing.Hash) error {
	if err := l.write(new); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.lockPath, err)
	}
	if err := l.rename(); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(l.refPath))
}

// write puts new in the lock file.
func (l *RefLock) write(new plumbing.Hash) error {
	if _, err := l.f.WriteString(new.String() + "\n"); err != nil {
		return fmt.Errorf("write %s: %w", l.lockPath, err)
	}
	return nil
}

// rename closes the lock file and renames it over the ref: main moves.
func (l *RefLock) rename() error {
	if err := l.close(); err != nil {
		return err
	}
	if err := os.Rename(l.lockPath, l.refPath); err != nil {
		return fmt.Errorf("rename %s: %w", l.lockPath, err)
	}
	l.committed = true
	return nil
}

// close closes the lock file, once.
func (l *RefLock) close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.lockPath, err)
	}
	return nil
}

// Release gives the lock up without moving main, unless it was committed.
func (l *RefLock) Release() {
	if !l.committed {
		l.close()
		os.Remove(l.lockPath)
	}
}
