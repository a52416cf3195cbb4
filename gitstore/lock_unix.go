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
			le := parseLock(dir, string(holder))
			return nil, &Error{Kind: KindUnavailable, Message: le.Error(), Err: le}
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, lockHolder+"\n", os.Getpid(), strings.Join(os.Args, " "))
	}
	return f, nil
}

// The lock file's first line says who holds the directory (lockHolder's form); a serving
// process adds a line "serving URL" once it listens, so that the CLI can talk to it.
const (
	lockHolder  = "gitmem (pid %d: %s)"
	lockServing = "serving "
)

// parseLock reads the contents of a held lock file.
func parseLock(dir, content string) *LockedError {
	le := &LockedError{Dir: dir}
	for i, line := range strings.Split(strings.TrimSpace(content), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case i == 0:
			le.Holder = line
			var pid int
			if _, err := fmt.Sscanf(line, "gitmem (pid %d:", &pid); err == nil {
				le.PID = pid
			}
		case strings.HasPrefix(line, lockServing):
			le.URL = strings.TrimPrefix(line, lockServing)
		}
	}
	return le
}

// SetServing records in the data directory's lock that this process serves it at url (a
// running gitmem serve), so that CLI commands find the server instead of failing on the lock.
func (d *DataDir) SetServing(url string) error {
	if _, err := d.lock.Seek(0, 0); err != nil {
		return err
	}
	if err := d.lock.Truncate(0); err != nil {
		return err
	}
	_, err := fmt.Fprintf(d.lock, lockHolder+"\n"+lockServing+"%s\n", os.Getpid(), strings.Join(os.Args, " "), url)
	return err
}

func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close() // closing the file releases the lock
}
