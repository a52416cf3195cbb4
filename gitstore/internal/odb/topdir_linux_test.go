package odb

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMarkTopDir: Open gives SpareDir the top-directory flag where the file system has it.
func TestMarkTopDir(t *testing.T) {
	r := openTestRepo(t)
	f, err := os.Open(filepath.Join(r.Path(), SpareDir))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Skipf("no inode flags on this file system: %v", err)
	}
	if flags&fsTopDirFlag != 0 {
		return
	}
	// Not set: only right if the file system refuses the flag.
	err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags|fsTopDirFlag))
	if err == nil {
		t.Fatal("SpareDir lacks the top-directory flag, which its file system takes")
	}
	t.Skipf("the file system refuses the top-directory flag: %v", err)
}
