package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestCatalogRestoredAfterCrash: the catalog's commits after its last sync are not fsynced,
// and a power loss may leave any of the pages they wrote zeroed or old, meta pages included.
// At open the catalog is set back to the sync: a valid bbolt file holding exactly what it
// held then.
func TestCatalogRestoredAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	var synced []byte // the file as the last sync made it durable
	catalogSynced = func(p string) {
		var err error
		if synced, err = os.ReadFile(p); err != nil {
			t.Error(err)
		}
	}
	defer func() { catalogSynced = nil }()
	c, err := openCatalog(path, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("mem_%06d", i)) }
	put := func(from, to int, drop int) {
		t.Helper()
		err := c.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bRead)
			for i := from; i < to; i++ {
				if err := b.Put(key(i), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
					return err
				}
			}
			if drop >= 0 {
				return b.Delete(key(drop))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2000; i += 100 {
		put(i, i+100, -1)
	}
	if err := c.sync(); err != nil {
		t.Fatal(err)
	}
	// Commits after the sync rewrite and free the pages that hold the synced keys: bbolt must
	// not write over them.
	for i := 0; i < 60; i++ {
		put(2000+50*i, 2050+50*i, 30*i)
	}
	if !c.NoSync {
		t.Fatal("the catalog fsyncs every commit")
	}
	// A crash: nothing more is synced, and the side file stays.
	c.pin.Rollback()
	c.closeFiles()
	if err := c.DB.Close(); err != nil {
		t.Fatal(err)
	}
	// The power loss: every page written since the sync is zeroed.
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	zeroed := 0
	for off := 0; off+page <= len(now); off += page {
		if off+page > len(synced) || !bytes.Equal(now[off:off+page], synced[off:off+page]) {
			clear(now[off : off+page])
			zeroed++
		}
	}
	if zeroed < 10 {
		t.Fatalf("only %d pages written since the sync", zeroed)
	}
	if err := os.WriteFile(path, now, 0o644); err != nil {
		t.Fatal(err)
	}

	c, err = openCatalog(path, slog.Default())
	if err != nil {
		t.Fatalf("open after the power loss: %v", err)
	}
	err = c.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("check: %v", err)
		}
		n := 0
		err := tx.Bucket(bRead).ForEach(func(k, v []byte) error {
			if !bytes.Equal(k, key(n)) || !bytes.Equal(v, bytes.Repeat([]byte{byte(n)}, 100)) {
				return fmt.Errorf("record %d: %q", n, k)
			}
			n++
			return nil
		})
		if err == nil && n != 2000 {
			err = fmt.Errorf("%d records, want the 2000 synced", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Closed cleanly, it leaves nothing to set back.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sidePath(path)); !os.IsNotExist(err) {
		t.Fatalf("side file after a clean close: %v", err)
	}
}

// TestCatalogSyncedWhenIdle: once the writer is idle, its last commits to the catalog are
// synced, so that a crash then has nothing to set back.
func TestCatalogSyncedWhenIdle(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{IdlePack: 50 * time.Millisecond})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "idle", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ { // closer together than syncEvery
		if _, err := s.Write(ctx, WriteInput{Path: fmt.Sprintf("/n%d.md", i), Content: "x", Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	// The catalog's last commit: the writer's groups', and those that the writer makes when
	// idle (the versions added to sesver and keyver), which the sync comes after.
	last := func() uint64 {
		var id uint64
		if err := s.db.View(func(tx *bolt.Tx) error { id = uint64(tx.ID()); return nil }); err != nil {
			t.Fatal(err)
		}
		return id
	}
	saved := func() uint64 {
		side, _ := os.ReadFile(sidePath(s.db.path))
		var best uint64
		for i := 0; i+slotSize <= len(side); i += slotSize {
			if txid, ok := metaTxid(side[i+8 : i+8+metaCopy]); ok && txid > best {
				best = txid
			}
		}
		return best
	}
	for deadline := time.Now().Add(10 * time.Second); saved() != last(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the side file saved transaction %d; the catalog is at %d", saved(), last())
		}
	}
}
