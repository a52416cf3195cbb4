package odb

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// placeDurably is whether Publish fsyncs each pack it places: not here, where syncFS makes
// all of them durable at once.
const placeDurably = false

// syncFS makes durable everything written to the file system that holds dir (syncfs(2)):
// one call, and one commit of the file system's journal, for all the packs and indexes
// placed since the last round, where an fsync of each would cost a commit apiece.
func syncFS(dir *os.File) error {
	if err := unix.Syncfs(int(dir.Fd())); err != nil {
		return fmt.Errorf("sync packs: syncfs: %w", err)
	}
	return nil
}
