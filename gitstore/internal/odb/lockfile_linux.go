package odb

import (
	"os"

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
