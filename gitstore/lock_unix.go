package gitstore

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// lockDir takes the exclusive lock of a data directory, and records who holds it.
func lockDir(dir string) (*os.File, error) {
	p := Layout{Root: dir}.LockFile()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			le := &LockedError{Dir: dir, Holder: strings.TrimSpace(string(holder))}
			return nil, &Error{Kind: KindUnavailable, Message: le.Error(), Err: le}
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "gitmem (pid %d: %s)\n", os.Getpid(), strings.Join(os.Args, " "))
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close() // closing the file releases the lock
}
