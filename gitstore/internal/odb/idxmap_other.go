//go:build !unix

package odb

// mapFile maps nothing here: indexes are read into the heap.
func mapFile(path string, least int64) ([]byte, error) { return nil, errNotMapped }

func unmapFile(data []byte) {}

func dropPages(data []byte) {}
