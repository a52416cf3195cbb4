package odb

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS makes durable everything written to the file system that holds dir (syncfs(2)):
// one call, and one commit of the file system's journal, for all the packs and indexes
// placed since the last round, where an fsync of each would cost a commit apiece.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync packs: %w", err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("sync packs: syncfs: %w", err)
	}
	return nil
}
