package odb

import (
	"os"

	"golang.org/x/sys/unix"
)

// fsTopDirFlag is FS_TOPDIR_FL of linux/fs.h, which x/sys/unix does not name.
const fsTopDirFlag = 0x00020000

// markTopDir gives dir ext4's top-directory flag (chattr +T), with which ext4 spreads dir's
// subdirectories over its block groups, as it does the directories at the top of the file
// system, instead of keeping them in dir's group (spares.go says why). Best effort: file
// systems without the flag refuse it, and nothing else changes.
func markTopDir(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil || flags&fsTopDirFlag != 0 {
		return
	}
	unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsTopDirFlag))
}
