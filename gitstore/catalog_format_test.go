package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/gitmem/gitmem/internal/testlog"
)

// TestCatalogOfOlderFormat: a catalog of another format (here with its records in JSON, as
// format 3 kept them, and its format's mark) is rebuilt at open; the store reads as it did,
// versions and ids included, and what history does not hold (a push's key, a read's time)
// is kept.
func TestCatalogOfOlderFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDir(t, dir)
	s := mustCreate(t, d, "old")
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
	head, _ := parseHash(s.Head())
	if err := s.ReceivePush(ctx, []string{head.String()}, "apikey_PUSHER"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, m.Memory.ID, false); err != nil { // a read time, written at close
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Make it what format 3 wrote: JSON records, and the format's mark.
	editCatalog(t, dir, id, func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bMem, bVer} {
			b := tx.Bucket(name)
			recs := map[string][]byte{}
			err := b.ForEach(func(k, v []byte) error {
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
			if err != nil {
				return err
			}
			for k, v := range recs {
				if err := b.Put([]byte(k), v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bMeta).Put(kFormat, []byte("3"))
	})

	d = openDir(t, dir)
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
	err = s.readCatalog(func(ct catTx) error {
		if k := ct.pushKey(head); k != "apikey_PUSHER" {
			t.Errorf("push key %q after the rebuild, want apikey_PUSHER", k)
		}
		if ct.readTime(m.Memory.ID) == 0 {
			t.Error("read time lost in the rebuild")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range after.Versions {
		if after.Versions[i].ID != before.Versions[i].ID {
			t.Fatalf("version %d: id %s after the rebuild, %s before", i, after.Versions[i].ID, before.Versions[i].ID)
		}
	}
}

// TestCatalogOfFormat4: a catalog of format 4, which had no sesver or keyver, gets them from
// its versions at open, without a rebuild; the versions listed by session and by API key
// are then those a scan finds, and the writes after list theirs too.
func TestCatalogOfFormat4(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	s := mustCreate(t, d, "four")
	id := s.ID()
	ses := Actor{Type: SessionActor, ID: "sesn_01FORMATFOUR", APIKeyID: apiActor.ID}
	m := mustWrite(t, s, "/a.md", "one", apiActor)
	mustWrite(t, s, "/a.md", "two", ses)
	mustWrite(t, s, "/b.md", "one", Actor{Type: SessionActor, ID: "sesn_01OTHER"})
	mustDelete(t, s, m.Memory.ID, ses)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Make it what format 4 wrote: no sesver or keyver, and the format's mark.
	editCatalog(t, dir, id, func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bSesVer, bKeyVer} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Put(kFormat, []byte("4"))
	})

	s, logs := reopenLogged(t, dir, id)
	if l := logs.String(); !strings.Contains(l, "format 4") || strings.Contains(l, "rebuilding") {
		t.Fatalf("the catalog of format 4 was not filled in place:\n%s", l)
	}
	checkVersionIndexes(t, s, "after the upgrade")
	mustWrite(t, s, "/c.md", "one", ses)
	checkVersionIndexes(t, s, "after a write")
	checkFormat(t, s)
}

// TestCatalogOfFormat5: a catalog of format 5, which wrote sesver and keyver with every
// version, is marked as listing them all at open, without a rebuild or a pass over them.
func TestCatalogOfFormat5(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	s := mustCreate(t, d, "five")
	id := s.ID()
	ses := Actor{Type: SessionActor, ID: "sesn_01FORMATFIVE", APIKeyID: apiActor.ID}
	mustWrite(t, s, "/a.md", "one", apiActor)
	mustWrite(t, s, "/a.md", "two", ses)
	indexSeeded(t, s)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// What format 5 wrote: every version in sesver and keyver, and no mark.
	editCatalog(t, dir, id, func(tx *bolt.Tx) error {
		ct := catTx{tx}
		if ct.indexedUpTo() != ct.versionCount() {
			return fmt.Errorf("closed with the index at %d of %d", ct.indexedUpTo(), ct.versionCount())
		}
		if err := tx.Bucket(bMeta).Delete(kIndexed); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(kFormat, []byte("5"))
	})
	s, logs := reopenLogged(t, dir, id)
	if l := logs.String(); strings.Contains(l, "rebuilding") {
		t.Fatalf("the catalog of format 5 was rebuilt:\n%s", l)
	}
	checkFormat(t, s)
	if lag := indexLag(t, s); lag != 0 {
		t.Errorf("%d version numbers past the index's mark after the upgrade", lag)
	}
	checkVersionIndexes(t, s, "after the upgrade")
}

// reopenLogged opens the data directory dir, its logs kept, and in it store id.
func reopenLogged(t *testing.T, dir, id string) (*Store, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	d, err := Open(context.Background(), dir, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := d.Store(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s, logs
}

// checkFormat checks that the catalog of s is of catalogFormat.
func checkFormat(t *testing.T, s *Store) {
	t.Helper()
	err := s.readCatalog(func(ct catTx) error {
		if f := string(ct.tx.Bucket(bMeta).Get(kFormat)); f != catalogFormat {
			t.Errorf("format %q after the upgrade, want %q", f, catalogFormat)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// editCatalog changes the catalog of store id in the data directory dir, closed, with fn.
func editCatalog(t *testing.T, dir, id string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, "catalog", id+".db"), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
