//go:build !linux

package odb

import "os"

// createLock creates path exclusively, as git creates a lock file.
func (r *Repo) createLock(path string) (*os.File, error) {
	return createExclusive(path)
}

// renameNoReplace renames old to new unless new exists (then an error that os.IsExist tells).
func renameNoReplace(old, new string) error { return linkRename(old, new) }

// moveRef moves main to the value in l's lock file.
func (r *Repo) moveRef(l *RefLock) error { return l.rename() }

// dropLeftLock has nothing to do: moveRef leaves no main.lock behind here.
func (r *Repo) dropLeftLock() bool { return true }
