package gitstore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestCatalogOfOlderFormat: a catalog written by an older gitmem (format 3, JSON records) is
// rebuilt at open, and the store reads as it did, versions and ids included.
func TestCatalogOfOlderFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "old", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	m, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "one", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "two", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Versions(ctx, VersionFilter{MemoryID: m.Memory.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Make it what format 3 wrote: JSON records, and the format's mark.
	db, err := bolt.Open(filepath.Join(dir, "catalog", id+".db"), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bMem, bVer} {
			b := tx.Bucket(name)
			recs := map[string][]byte{}
			b.ForEach(func(k, v []byte) error {
				var rec any
				if string(name) == string(bMem) {
					rec, err = readMemory(v)
				} else {
					rec, err = readVersion(v)
				}
				if err != nil {
					return err
				}
				raw, _ := json.Marshal(rec)
				recs[string(k)] = raw
				return nil
			})
			for k, v := range recs {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bMeta).Put(kFormat, []byte("3"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	d, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err = d.Store(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetByPath(ctx, "/a.md", true)
	if err != nil || got.Content == nil || *got.Content != "two" || got.ID != m.Memory.ID {
		t.Fatalf("after the rebuild: %+v, %v", got, err)
	}
	after, err := s.Versions(ctx, VersionFilter{MemoryID: m.Memory.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Versions) != 2 || len(before.Versions) != 2 {
		t.Fatalf("versions before %d, after %d", len(before.Versions), len(after.Versions))
	}
	for i := range after.Versions {
		if after.Versions[i].ID != before.Versions[i].ID {
			t.Fatalf("version %d: id %s after the rebuild, %s before", i, after.Versions[i].ID, before.Versions[i].ID)
		}
	}
}
