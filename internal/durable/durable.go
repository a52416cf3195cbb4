// Package durable writes files so that a crash leaves either the old file or the new one,
// complete: a temporary file beside the target is written, fsynced and renamed over it, and
// the directory is fsynced so that the new name is on disk too (restic's local backend and
// git's lock files do the same).
package durable

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TempPrefix begins the name of every temporary file this package makes. One left in a
// directory is from a write that a crash interrupted, and may be removed.
const TempPrefix = ".tmp-"

// WriteFile replaces path with data, atomically and durably, with the mode perm. On error
// path is as it was and no temporary file is left.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if err := Replace(path, data, perm); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Replace is WriteFile but for the fsync of the directory, for files written in a group:
// call SyncDir after the last of them.
func Replace(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Discard()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// File is a file being written in place of a path: a temporary file beside it until Commit.
type File struct {
	f    *os.File
	path string
	done bool
}

// Create starts a file that will replace path, with the mode perm.
func Create(path string, perm fs.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{f: f, path: path}, nil
}

// Use is Create with f, an empty temporary file beside path made ahead of time (nil: make
// one now): the file to write and rename over path.
func Use(f *os.File, path string, perm fs.FileMode) (*File, error) {
	if f == nil {
		return Create(path, perm)
	}
	if err := f.Chmod(perm); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{f: f, path: path}, nil
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	if err != nil {
		err = fmt.Errorf("write %s: %w", f.path, err)
	}
	return n, err
}

// Commit fsyncs the file, closes it and renames it to its path. It does not fsync the
// directory: call SyncDir after the last rename of a group (WriteFile does).
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("write %s: already committed or discarded", f.path)
	}
	f.done = true
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.f.Name(), f.path)
	}
	if err != nil {
		os.Remove(f.f.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	return nil
}

// Discard removes the temporary file unless Commit ran; path is left as it was. Deferring
// it after Create is the way to leave nothing behind on error.
func (f *File) Discard() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	os.Remove(f.f.Name())
}

// SyncDir fsyncs a directory, so that the names created or renamed in it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
