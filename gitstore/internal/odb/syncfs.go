package odb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5"
)

// syncPacksFS fsyncs every file written under objects/pack before it is closed, so that the
// pack writer's rename publishes only durable data.
type syncPacksFS struct{ billy.Filesystem }

func (fs syncPacksFS) TempFile(dir, prefix string) (billy.File, error) {
	return wrapSync(fs.Filesystem.TempFile(dir, prefix))
}

func (fs syncPacksFS) Create(name string) (billy.File, error) {
	return wrapSync(fs.Filesystem.Create(name))
}

func (fs syncPacksFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	f, err := fs.Filesystem.OpenFile(name, flag, perm)
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return f, err
	}
	return wrapSync(f, err)
}

func wrapSync(f billy.File, err error) (billy.File, error) {
	if err != nil || !strings.Contains(filepath.ToSlash(f.Name()), "objects/pack/") {
		return f, err
	}
	return syncOnClose{f}, nil
}

type syncOnClose struct{ billy.File }

func (f syncOnClose) Close() error {
	if s, ok := f.File.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			f.File.Close()
			return fmt.Errorf("sync %s: %w", f.Name(), err)
		}
	}
	return f.File.Close()
}
