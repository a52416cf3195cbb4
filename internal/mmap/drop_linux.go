package mmap

import "golang.org/x/sys/unix"

// Drop takes the pages of a read-only mapping, size bytes from addr, out of the process
// (madvise(2) MADV_DONTNEED): they stay in the page cache, and a read maps them again (a
// minor fault, which maps more than the page around it). Nothing is lost, and a reader may
// go on reading the mapping. It takes an address rather than a slice for mappings that are
// not this package's, such as bbolt's.
func Drop(addr uintptr, size int64) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, uintptr(size), unix.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}
