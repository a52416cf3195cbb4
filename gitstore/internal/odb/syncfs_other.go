//go:build !linux

package odb

import (
	"fmt"
	"os"
)

// placeDurably is whether Publish fsyncs each pack it places: here, where there is no
// syncfs, it does (on macOS, File.Sync is F_FULLFSYNC), and syncFS only commits the
// directory.
const placeDurably = true

// syncFS makes the entries of dir durable.
func syncFS(dir *os.File) error {
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("sync packs: %w", err)
	}
	return nil
}
