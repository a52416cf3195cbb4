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

// startWriteback asks the kernel to begin writing out n bytes of f from off, without waiting:
// an fdatasync after it finds the write under way. A hint; its failure changes nothing.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
