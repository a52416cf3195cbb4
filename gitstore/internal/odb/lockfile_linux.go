package odb

import (
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createLock creates path exclusively, as git creates a lock file. It renames a file made
// ahead (spares.go) into place with RENAME_NOREPLACE, which fails if path exists just as
// O_CREAT|O_EXCL does, so that the creation's cost is not on the write path. It takes main's
// previous file first, which moveRef keeps for this (oldRef).
func (r *Repo) createLock(path string) (*os.File, error) {
	if o := r.oldRef; o != nil {
		r.oldRef = nil
		err := renameNoReplace(o.name, path)
		if err == nil {
			return o.f, nil
		}
		if os.IsExist(err) { // a git process holds main.lock: kept for the next try
			r.oldRef = o
			return nil, err
		}
		o.f.Close()
		os.Remove(o.name)
	}
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
// names (RENAME_EXCHANGE), and then moves main.lock, which names main's old file after the
// exchange, aside (oldRefName), where the next write takes it as its lock (createLock). The
// old file is held open across both.
//
// Why: on this project's disk (ext4 without a journal), creating a file scans past every
// inode freed in the last minute or more (the kernel's recently_deleted), so a file's
// creation costs more the more files were removed lately: 30 µs a spare at 100 memories,
// about 270 µs after a fill of 100,000 (perf showed the scan). A write that neither creates
// nor frees the ref's file makes one creation and one removal fewer per group. And a rename
// over main would free the old file's inode on the writer's path, and ext4 starts writing
// the new file's data out before a rename that replaces a file (auto_da_alloc), which the
// journal makes needless: measured in BenchmarkWrite at 100 memories, 145-164 µs a rename
// over main, 33-35 µs an exchange and a removal.
//
// A git process that opened main before the exchange and reads it after the next write's
// lock is written reads that write's commit: a newer value of main, which it may read at any
// time anyway. Where main is not a file (packed into packed-refs by git), or the file system
// cannot exchange, it renames.
func (r *Repo) moveRef(l *RefLock) error {
	old, err := os.OpenFile(l.refPath, os.O_RDWR, 0)
	if err != nil {
		return l.rename()
	}
	st, err := old.Stat()
	if err != nil || !st.Mode().IsRegular() {
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
	if st.Size() == hashLine && r.keepOldRef(l.lockPath, old) {
		return nil
	}
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

// renameFile is renameNoReplace; a test makes it fail.
var renameFile = renameNoReplace

// hashLine is the size of a ref file: a hash and a newline. The next lock writes one over it
// whole, so that only a file of that size is kept.
const hashLine = 41

// keepOldRef moves main.lock, main's old file open as f, aside for the next lock, and tells
// whether it did. It stays in main's directory: a rename from one directory to another
// takes the file system's rename lock, which the spares goroutine's moves also take (65 µs
// a write into SpareDir, traced over 2,000 writes at 100,000 memories, and as much again to
// take it back).
func (r *Repo) keepOldRef(lockPath string, f *os.File) bool {
	r.dropOldRef() // one not taken: createLock found main.lock taken
	name := filepath.Join(filepath.Dir(lockPath), oldRefName)
	if err := renameFile(lockPath, name); err != nil {
		return false
	}
	r.oldRef = &oldRef{f: f, name: name}
	return true
}

// dropOldRef removes the file keepOldRef kept: at close, or when a git process's main.lock
// kept createLock from taking it.
func (r *Repo) dropOldRef() {
	if o := r.oldRef; o != nil {
		r.oldRef = nil
		o.f.Close()
		os.Remove(o.name)
	}
}

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
