package odb

import (
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createLock creates path exclusively, as git creates a lock file. It renames a file made
// ahead (spares.go) into place with RENAME_NOREPLACE, which fails if path exists just as
// O_CREAT|O_EXCL does, so that the creation's cost is not on the write path.
func (r *Repo) createLock(path string) (*os.File, error) {
	f, err := r.spares.take()
	if err != nil {
		return nil, err
	}
	err = unix.Renameat2(unix.AT_FDCWD, f.Name(), unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if err == nil {
		err = f.Chmod(0o644)
		if err != nil {
			os.Remove(path)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		if err == unix.EINVAL || err == unix.ENOSYS || err == unix.EXDEV {
			return createExclusive(path) // a file system without it
		}
		return nil, err // EEXIST, as os.IsExist tells
	}
	return f, nil
}

// renameNoReplace renames old to new unless new exists (then an error that os.IsExist tells).
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return linkRename(old, new) // a file system without it
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
	}
	return nil
}

// moveRef moves main to the value in l's lock file, as l.rename does, by exchanging the two
// names (RENAME_EXCHANGE) and then removing main.lock, which names main's old file after the
// exchange. The old file is held open across both, so that the removal only drops its name,
// and the spares goroutine frees it when it closes it. A rename over main frees the old
// file's inode on the writer's path, and ext4 starts writing the new file's data out before a
// rename that replaces a file (auto_da_alloc), which the journal makes needless. Measured in
// BenchmarkWrite at 100 memories: 145-164 µs a rename over main, 33-35 µs this (of which the
// exchange 11-12 µs and the removal 5-6 µs). Where main is not a file (packed into
// packed-refs by git), or the file system cannot exchange, it renames.
func (r *Repo) moveRef(l *RefLock) error {
	old, err := openFile(l.refPath, os.O_RDONLY, 0)
	if err != nil {
		return l.rename()
	}
	if st, err := old.Stat(); err != nil || !st.Mode().IsRegular() {
		old.Close()
		return l.rename()
	}
	if err := l.close(); err != nil {
		old.Close()
		return err
	}
	err = unix.Renameat2(unix.AT_FDCWD, l.lockPath, unix.AT_FDCWD, l.refPath, unix.RENAME_EXCHANGE)
	if err != nil {
		old.Close()
		if err == unix.EINVAL || err == unix.ENOSYS || err == unix.ENOENT {
			return l.rename()
		}
		return &os.LinkError{Op: "exchange", Old: l.lockPath, New: l.refPath, Err: err}
	}
	l.committed = true
	fault("ref-exchanged")
	// main has moved, and is answered as moved: main.lock must go, or git could not lock main
	// again. A crash before this leaves it for recovery (removeStaleLock); a failed removal
	// is tried again before main is next locked (dropLeftLock).
	if err := removeFile(l.lockPath); err != nil && !os.IsNotExist(err) {
		slog.Error("remove main.lock after moving main; trying again at the next write", "repo", r.path, "err", err)
		r.leftLock.Store(old)
		return nil
	}
	r.spares.discard(old)
	return nil
}

// removeFile is os.Remove; a test makes it fail.
var removeFile = os.Remove

// dropLeftLock removes the main.lock that moveRef failed to remove, if it is still main's old
// file (and not a lock that a git process took since), and tells whether none is left.
func (r *Repo) dropLeftLock() bool {
	old := r.leftLock.Swap(nil)
	if old == nil {
		return true
	}
	lockPath := filepath.Join(r.path, MainRef+".lock")
	ours, err := old.Stat()
	if err != nil {
		r.spares.discard(old)
		return false
	}
	if cur, err := os.Lstat(lockPath); err == nil && os.SameFile(ours, cur) {
		if err := removeFile(lockPath); err != nil && !os.IsNotExist(err) {
			r.leftLock.Store(old)
			return false
		}
	}
	r.spares.discard(old)
	return true
}
