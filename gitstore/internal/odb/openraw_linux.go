package odb

import (
	"os"

	"golang.org/x/sys/unix"
)

// openFile is os.OpenFile without offering the file to Go's poller, which a regular file
// cannot use: os.OpenFile's try costs four fcntl calls and a failing epoll_ctl a file, and
// the writer and its spares open about seven files a write (strace of BenchmarkWrite at 100
// memories: 50 of its 130 system calls a write).
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := openFD(path, flag, perm)
	if err != nil {
		return nil, err
	}
	return os.NewFile(fd, path), nil
}

// openFD is openFile's descriptor, for os.NewFile under another name (spares.make).
func openFD(path string, flag int, perm os.FileMode) (uintptr, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return uintptr(fd), nil
	}
}
