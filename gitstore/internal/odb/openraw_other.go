//go:build !linux

package odb

import (
	"os"
	"syscall"
)

// openFile is os.OpenFile (openraw_linux.go says why Linux has its own).
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// openFD is openFile's descriptor, for os.NewFile under another name (spares.make).
func openFD(path string, flag int, perm os.FileMode) (uintptr, error) {
	fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return uintptr(fd), nil
}
