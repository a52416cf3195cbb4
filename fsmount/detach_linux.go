package fsmount

import "syscall"

// detach unmounts dir at once for new users, and for good once no program uses it
// (umount -l): a dead FUSE server's mount point, or one that a program still has open.
func detach(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }
