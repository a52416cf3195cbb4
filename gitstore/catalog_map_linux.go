package gitstore

import "golang.org/x/sys/unix"

// dropMapped drops the pages of bbolt's mapping of the file, size bytes from data, from the
// process: they stay in the page cache, and a read maps them again (a minor fault). The
// mapping is read-only and shared, so nothing is lost; the pages a process has touched count
// in its resident memory until then.
func dropMapped(data uintptr, size int64) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, data, uintptr(size), unix.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}
