//go:build !linux

package gitstore

// dropMapped does nothing here: the catalog's mapped pages stay until bbolt maps the file
// again.
func dropMapped(data uintptr, size int64) error { return nil }
