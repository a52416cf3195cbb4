//go:build !linux

package odb

import "syscall"

// syncFS makes durable everything written to the file systems (sync(2): no syncfs here).
func syncFS(dir string) error {
	syscall.Sync()
	return nil
}
