//go:build !unix

package mmap

// Map maps nothing here: callers read the file instead.
func Map(path string, least int64) ([]byte, error) { return nil, ErrNotMapped }

// Unmap has nothing to undo here.
func Unmap(data []byte) {}
