package odb

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitmem/gitmem/internal/durable"
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

// RepackAll packs every reachable object, loose or packed, into one new pack (git repack
// -a, with extra options) and then removes the old packs, and with them the unreachable
// objects they held. git must not delete them itself (no -d): readers may be reading them;
// replacePacks does it once the set that reads look in no longer lists them. If main moved while git repacked (a push),
// the old packs may hold the pushed objects: they are kept, and moved is set.
func (r *Repo) RepackAll(ctx context.Context, extra ...string) (moved bool, err error) {
	head, err := r.ReadRef()
	if err != nil {
		return false, err
	}
	old, err := r.packFiles()
	if err != nil {
		return false, err
	}
	args := append([]string{"repack", "-a", "-q", "--no-write-bitmap-index"}, extra...)
	if err := r.Git(ctx, args...); err != nil {
		return false, err
	}
	after, err := r.ReadRef()
	if err != nil {
		return false, err
	}
	if after != head {
		r.foreign.Store(true)
		r.swap.Lock()
		defer r.swap.Unlock()
		return true, r.relist(nil, true) // objects may be gone: a new cache
	}
	return false, r.replacePacks(old)
}

// replacePacks removes the packs old (except any that git's repack wrote again under the
// same name) and makes the set the packs now in the directory. The set changes first.
func (r *Repo) replacePacks(old []packFile) error {
	r.swap.Lock()
	defer r.swap.Unlock()
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
	drop := map[string]bool{}
	for _, o := range old {
		drop[o.base] = !keep[o.base]
	}
	// Objects may be gone (a redaction repacks without them): the set gets a new cache.
	if err := r.relist(drop, true); err != nil {
		return err
	}
	dir := filepath.Join(r.path, "objects", "pack")
	for _, o := range old {
		if keep[o.base] {
			continue
		}
		for _, ext := range []string{".idx", ".pack", ".rev", ".bitmap", ".mtimes"} { // index first, as in MergePacks
			if err := os.Remove(o.base + ext); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("remove old pack: %w", err)
			}
		}
	}
	if err := durable.SyncDir(dir); err != nil {
		return err
	}
	return nil
}

// Stats measures the object database.
func (r *Repo) Stats() (ObjectStats, error) {
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

// CountPacks counts the repository's packs again, for Packs, after git processes (a
// repack, a prune) changed them.
func (r *Repo) CountPacks() error {
	packs, err := r.packFiles()
	if err != nil {
		return err
	}
	r.packs.Store(int64(len(packs)))
	return nil
}
