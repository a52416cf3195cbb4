//go:build unix

package mmap

import (
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the whole file at path, if it has least bytes or more, read-only and shared: its
// pages are the page cache's, outside the Go heap, and the kernel may take back those not
// in use. The file must never be cut short while mapped: a read past its end would crash
// the process.
func Map(path string, least int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < max(least, 1) || int64(int(fi.Size())) != fi.Size() {
		return nil, ErrNotMapped
	}
	return unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
}

// Unmap undoes Map. Nothing may read data after it.
func Unmap(data []byte) { unix.Munmap(data) }
