//go:build !linux

package mmap

// Drop does nothing here: mapped pages stay until the mapping is undone.
func Drop(addr uintptr, size int64) error { return nil }
