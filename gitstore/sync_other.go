//go:build !linux

package gitstore

// syncFiles makes the given files under root durable, one fsync each.
func syncFiles(root string, paths []string) error {
	return syncFileList(paths)
}
