//go:build unix

package odb

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the whole file at path, if it has least bytes or more, read-only and shared:
// its pages are the page cache's, outside the Go heap, and the kernel may take back those
// not in use.
func mapFile(path string, least int64) ([]byte, error) {
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
		return nil, errNotMapped
	}
	return unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(data []byte) { unix.Munmap(data) }

// dropPages takes a mapping's pages out of the process (madvise(2) MADV_DONTNEED): they stay
// in the page cache, and a read maps them again (a minor fault). Nothing is lost, as the
// mapping is read-only, and a reader may go on reading it.
func dropPages(data []byte) { unix.Madvise(data, unix.MADV_DONTNEED) }
