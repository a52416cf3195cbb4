//go:build !linux

package odb

import "os"

// fdatasync is fsync where the system has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }

// startWriteback does nothing where there is no sync_file_range.
func startWriteback(f *os.File, off, n int64) {}
