//go:build !linux

package fsmount

import "golang.org/x/sys/unix"

// detach unmounts dir even if programs use it (umount -f): without Linux's lazy unmount,
// forcing is the way to take back a dead FUSE server's mount point.
func detach(dir string) error { return unix.Unmount(dir, unix.MNT_FORCE) }
