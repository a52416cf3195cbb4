package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitmem/gitmem/internal/durable"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// ObjectStats is the size of a repository's object database.
type ObjectStats struct {
	LooseObjects int
	LooseBytes   int64
	Packs        int
	PackBytes    int64 // packs and their indexes
}

// Bytes is the size of all objects, loose and packed.
func (o ObjectStats) Bytes() int64 { return o.LooseBytes + o.PackBytes }

// GCResult is what GC did.
type GCResult struct {
	Before, After ObjectStats
	// KeptOldPacks is set when main moved while git repacked (a push): the old packs were
	// kept, as they may hold the pushed objects; running GC again removes them.
	KeptOldPacks bool
	Took         time.Duration
}

// needGit returns nil if git is installed, and otherwise an error of KindConflict that says
// what needs it and is gitexec.ErrNoGit.
func needGit(what string) error {
	if err := gitexec.Need(what); err != nil {
		return &Error{Kind: KindConflict, Message: err.Error(), Err: err}
	}
	return nil
}

// pruneGrace is how old an unreachable loose object must be for GC to delete it: objects
// that a push is adding are unreachable until its ref update, a moment later.
const pruneGrace = "10.minutes.ago"

// GC packs the repository's objects into one pack with fresh deltas (git repack -a -f)
// and deletes the old packs, the loose objects now packed and unreachable loose objects
// older than a few minutes. It runs in the store's writer, so no write happens meanwhile;
// readers keep reading throughout: the old packs are removed only when the storage that
// knows the new one replaces the old storage, under the storage lock. Without the git
// program its error is gitexec.ErrNoGit (of KindConflict).
func (s *Store) GC(ctx context.Context) (GCResult, error) {
	if err := needGit("gc"); err != nil {
		return GCResult{}, err
	}
	var res GCResult
	err := s.runTask(ctx, func() error {
		start := time.Now()
		r := s.repo
		var err error
		if res.Before, err = r.stats(); err != nil {
			return err
		}
		// -f: compute deltas afresh (git's default window and depth).
		if res.KeptOldPacks, err = r.repackAll(ctx, "-f"); err != nil {
			return err
		}
		if err := r.git(ctx, "prune-packed", "-q"); err != nil {
			return err
		}
		if err := r.git(ctx, "prune", "--expire="+pruneGrace); err != nil {
			return err
		}
		packs, err := r.packFiles()
		if err != nil {
			return err
		}
		r.packs = len(packs)
		if res.After, err = r.stats(); err != nil {
			return err
		}
		res.Took = time.Since(start)
		return nil
	})
	return res, err
}

// repackAll packs every reachable object, loose or packed, into one new pack (git repack
// -a, with extra options) and then removes the old packs, and with them the unreachable
// objects they held. git must not delete them itself (no -d): readers may be reading them;
// replacePacks does it under the storage lock. If main moved while git repacked (a push),
// the old packs may hold the pushed objects: they are kept, and moved is set.
func (r *repo) repackAll(ctx context.Context, extra ...string) (moved bool, err error) {
	head, err := r.readRef()
	if err != nil {
		return false, err
	}
	old, err := r.packFiles()
	if err != nil {
		return false, err
	}
	args := append([]string{"repack", "-a", "-q", "--no-write-bitmap-index"}, extra...)
	if err := r.git(ctx, args...); err != nil {
		return false, err
	}
	after, err := r.readRef()
	if err != nil {
		return false, err
	}
	if after != head {
		r.reload()
		return true, nil
	}
	return false, r.replacePacks(old)
}

// replacePacks removes the packs old (except any that git's repack wrote again under the
// same name) and replaces the storage with one that knows the packs now in the directory.
// The storage lock is held from the removal to the replacement, so that no reader looks
// for an object in a removed pack.
func (r *repo) replacePacks(old []packFile) error {
	now, err := r.packFiles()
	if err != nil {
		return err
	}
	var fresh []string
	keep := map[string]bool{}
	for _, p := range now {
		isOld := false
		for _, o := range old {
			isOld = isOld || o.base == p.base
		}
		if !isOld {
			fresh = append(fresh, p.base)
		}
	}
	if len(fresh) == 0 {
		// The new pack has an old pack's name: the objects were packed that way already.
		for _, p := range now {
			keep[p.base] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	dir := filepath.Join(r.path, "objects", "pack")
	for _, o := range old {
		if keep[o.base] {
			continue
		}
		for _, ext := range []string{".pack", ".idx", ".rev", ".bitmap", ".mtimes"} {
			if err := os.Remove(o.base + ext); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("remove old pack: %w", err)
			}
		}
	}
	if err := durable.SyncDir(dir); err != nil {
		return err
	}
	r.st = newStorage(r.path)
	clear(r.recent)
	r.recentBytes = 0
	return nil
}

// git runs a git command on the repository.
func (r *repo) git(ctx context.Context, args ...string) error {
	_, err := r.gitOutput(ctx, args...)
	return err
}

// gitOutput runs a git command on the repository and returns what it printed.
func (r *repo) gitOutput(ctx context.Context, args ...string) ([]byte, error) {
	cmd, stderr := r.gitCmd(ctx, args...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %v: %s", strings.Join(args, " "), r.path, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// gitCmd prepares a git command on the repository, with its error output in stderr.
func (r *repo) gitCmd(ctx context.Context, args ...string) (*gitexec.Cmd, *bytes.Buffer) {
	cmd := gitexec.Command(ctx, args...)
	cmd.Env = []string{"GIT_DIR=" + r.path}
	cmd.Dir = r.path
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// stats measures the object database.
func (r *repo) stats() (ObjectStats, error) {
	var st ObjectStats
	root := filepath.Join(r.path, "objects")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == "info" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		switch dir := filepath.Dir(rel); {
		case dir == "pack":
			if strings.HasSuffix(rel, ".pack") {
				st.Packs++
			}
			if strings.HasSuffix(rel, ".pack") || strings.HasSuffix(rel, ".idx") {
				st.PackBytes += info.Size()
			}
		case len(dir) == 2:
			st.LooseObjects++
			st.LooseBytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("measure objects of %s: %w", r.path, err)
	}
	return st, nil
}
