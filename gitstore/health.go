package gitstore

import (
	"context"
	"fmt"
	"os"
)

// What readiness (the health package's /readyz) asks of the data directory.

// OpenAll opens every store, and returns how many there are; a store that cannot be opened
// (its repository or catalog is damaged) fails it, named.
func (d *DataDir) OpenAll(ctx context.Context) (int, error) {
	ids, err := d.Layout().StoreIDs()
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if _, err := d.Store(ctx, id); err != nil {
			return 0, fmt.Errorf("store %s: %w", id, err)
		}
	}
	return len(ids), nil
}

// CatchUpAll has the catalog of every open store reflect its main: one that a push or a
// commit made with git moved ahead is caught up now. It returns how many were behind; a
// catalog that cannot be read or caught up fails it, named.
func (d *DataDir) CatchUpAll(ctx context.Context) (int, error) {
	behind := 0
	for _, s := range d.openStores() {
		b, err := s.behind()
		if err != nil {
			return behind, fmt.Errorf("store %s: read main and the catalog: %w", s.id, err)
		}
		if !b {
			continue
		}
		behind++
		if err := s.Refresh(ctx); err != nil {
			return behind, fmt.Errorf("store %s: catch the catalog up: %w", s.id, err)
		}
	}
	return behind, nil
}

// CheckWritable writes a small file in the data directory, syncs it and removes it: a
// disk that is full, read-only or failing fails it.
func (d *DataDir) CheckWritable() error {
	p := d.Layout().ReadyProbeFile()
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("the data directory is not writable: %w", err)
	}
	_, err = f.WriteString("gitmem readiness probe\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	os.Remove(p)
	if err != nil {
		return fmt.Errorf("the data directory is not writable: %w", err)
	}
	return nil
}

// CatalogsBehind answers how many open stores have a catalog that does not reflect main
// (a push or git moved main, and no read or write has caught it up yet).
func (d *DataDir) CatalogsBehind() int {
	n := 0
	for _, s := range d.openStores() {
		if b, _ := s.behind(); b {
			n++
		}
	}
	return n
}

// StoreStats is what a store holds and how its repository is packed.
type StoreStats struct {
	ID    string
	Usage Usage
	Packs int
}

// Stats answers the usage and pack count of every open store.
func (d *DataDir) Stats() []StoreStats {
	var out []StoreStats
	for _, s := range d.openStores() {
		st := StoreStats{ID: s.id, Packs: s.repo.Packs()}
		s.readCatalog(func(ct catTx) error { st.Usage = ct.usage(); return nil })
		out = append(out, st)
	}
	return out
}

func (d *DataDir) openStores() []*Store {
	d.mu.Lock()
	defer d.mu.Unlock()
	stores := make([]*Store, 0, len(d.stores))
	for _, s := range d.stores {
		stores = append(stores, s)
	}
	return stores
}
