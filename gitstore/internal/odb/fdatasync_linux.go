package odb

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data, and its metadata only where reading the data needs it.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
