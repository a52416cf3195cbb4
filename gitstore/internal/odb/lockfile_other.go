//go:build !linux

package odb

import "os"

// createLock creates path exclusively, as git creates a lock file.
func (r *Repo) createLock(path string) (*os.File, error) {
	return createExclusive(path)
}
