package gitstore

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFiles makes the given files under root durable. On Linux one syncfs(2) of root's
// file system does it for any number of files, which is what makes group commit cheap:
// fsyncing each loose object costs a journal commit per file.
func syncFiles(root string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	d, err := os.Open(root)
	if err != nil {
		return fmt.Errorf("sync %s: %w", root, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return syncFileList(paths)
	}
	return nil
}
