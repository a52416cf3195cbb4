package gitstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
	"github.com/gitmem/gitmem/internal/durable"
)

// Importing a store (gitmem import) is done in two steps around the caller's own work:
// PrepareImport makes an empty bare repository inside the data directory, the caller fetches
// a history into it (with the git CLI, from a bundle or any remote) and checks it (gitserve's
// rules), and ImportStore adopts it as a store. Until ImportStore renames it into place
// nothing is visible, and a repository left behind by a failure or a crash is removed at the
// next Open, like a store half created.

// PrepareImport creates an empty bare repository for ImportStore under a temporary name in
// the data directory (on the same file system as the stores, so that adopting it is a
// rename), with the configuration of a store's repository, and returns its path. Remove it
// if you do not adopt it (Open removes it otherwise).
func (d *DataDir) PrepareImport() (string, error) {
	dir := d.Layout().StoresTemp(".import-" + NewID("", d.opts.Clock()) + ".git")
	if err := odb.Init(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// ImportStore adopts the bare repository at repoDir, made by PrepareImport and holding the
// history of a store on main, as the store whose id .gitmem/store.json on main names: it
// checks that store.json, refuses (KindConflict) if a store with that id exists, builds the
// catalog from the whole history (telling progress how many commits are done), and renames
// repository and catalog into place. The history keeps its commits, so the memory and
// version ids that the catalog derives from them are the ones the source had. It does not
// check the files of the history: do that first (gitserve.CheckImport).
func (d *DataDir) ImportStore(ctx context.Context, repoDir string, progress Progress) (*Store, error) {
	if err := refuseTrial(ctx, "an import"); err != nil {
		return nil, err
	}
	if filepath.Dir(repoDir) != d.Layout().StoresDir() || !strings.HasPrefix(filepath.Base(repoDir), ".import-") {
		return nil, fmt.Errorf("import store: %s was not made by PrepareImport", repoDir)
	}
	info, err := importedInfo(repoDir)
	if err != nil {
		return nil, err
	}
	if err := d.refuseExisting(ctx, info.ID); err != nil {
		return nil, err
	}
	os.Remove(filepath.Join(repoDir, "FETCH_HEAD"))
	tmpCatalog := d.catalogPath(info.ID) + ".import"
	os.Remove(tmpCatalog)
	defer os.Remove(tmpCatalog)
	s, err := openStoreProgress(info.ID, repoDir, tmpCatalog, d.opts, progress)
	if err != nil {
		return nil, fmt.Errorf("import store %s: %w", info.ID, err)
	}
	if err := s.close(); err != nil {
		return nil, fmt.Errorf("import store %s: %w", info.ID, err)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrStoreClosed
	}
	// Checked again under the lock: a store of that id may have been made meanwhile.
	_, statErr := os.Stat(d.repoPath(info.ID))
	if statErr == nil {
		d.mu.Unlock()
		return nil, d.refuseExisting(ctx, info.ID)
	}
	err = os.Rename(tmpCatalog, d.catalogPath(info.ID))
	if err == nil {
		err = os.Rename(repoDir, d.repoPath(info.ID))
	}
	d.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("import store %s: %w", info.ID, err)
	}
	if err := durable.SyncDir(d.Layout().StoresDir()); err != nil {
		return nil, err
	}
	if err := durable.SyncDir(d.Layout().CatalogDir()); err != nil {
		return nil, err
	}
	d.storesMoved.notify()
	return d.Store(ctx, info.ID)
}

// refuseExisting returns a KindConflict error if a store with this id exists.
func (d *DataDir) refuseExisting(ctx context.Context, id string) error {
	if _, err := os.Stat(d.repoPath(id)); os.IsNotExist(err) {
		return nil
	}
	name := "?"
	if s, err := d.Store(ctx, id); err == nil {
		if info, err := s.Info(ctx); err == nil {
			name = info.Name
		}
	}
	return &Error{Kind: KindConflict, Message: fmt.Sprintf("store %s already exists (name %q); delete it first", id, name), Err: ErrStoreExists}
}

// importedInfo reads and checks .gitmem/store.json on main of a repository to import.
func importedInfo(repoDir string) (StoreInfo, error) {
	if _, err := os.Stat(filepath.Join(repoDir, "shallow")); err == nil {
		return StoreInfo{}, invalidf("the history is shallow (cloned with --depth): a store needs all of it")
	}
	r, err := openRepo(repoDir)
	if err != nil {
		return StoreInfo{}, err
	}
	defer r.Close()
	head, err := r.ReadRef()
	if err != nil {
		return StoreInfo{}, err
	}
	if head.IsZero() {
		return StoreInfo{}, invalidf("the repository has no main branch: a memory store keeps its memories on main")
	}
	c, err := r.commit(head)
	if err != nil {
		return StoreInfo{}, err
	}
	e, found, _, err := entryAt(r, c.TreeHash, treePath("/"+storeFile))
	if err != nil {
		return StoreInfo{}, err
	}
	if !found {
		return StoreInfo{}, invalidf("/%s is missing on main: this is not the history of a gitmem store", storeFile)
	}
	raw, err := r.Blob(e.Hash)
	if err != nil {
		return StoreInfo{}, err
	}
	info, err := ParseStoreFile(raw)
	if err != nil {
		return StoreInfo{}, err
	}
	if !validID(StorePrefix, info.ID) {
		return StoreInfo{}, invalidf("/%s on main has the id %q, which is not a memory store id", storeFile, info.ID)
	}
	if err := ValidateStoreInfo(info); err != nil {
		return StoreInfo{}, err
	}
	return info, nil
}
