package gitstore

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The catalog is a bbolt file per store that answers reads without walking history: the
// memories, their paths and their versions, derived from the history of main (and rebuilt
// from it at will), beside a few records that history does not hold. Its buckets and
// records are in catalog_schema.go; this file opens it and holds the meta bucket, and
// catalog_apply.go reads commits into it.

// openCatalog opens the catalog at path. One of another format is emptied of what history
// says, so that the store's catch-up rebuilds it (about a minute for 100,000 memories here):
// log says so, as the store's first open then takes that long. One of format 4 or 5 is
// brought up to date instead: its sesver and keyver are made, or marked full.
func openCatalog(path string, log *slog.Logger) (*catalogDB, error) {
	if err := restoreSynced(path, log); err != nil {
		return nil, err
	}
	// The freelist is rebuilt at open instead of written at every commit, where its cost
	// would grow with the size of the catalog (as etcd runs bbolt).
	opts := &bolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
		InitialMmapSize: catalogMap}
	db, err := bolt.Open(path, 0o644, opts)
	skipFsyncs := err == nil
	if err != nil && !damagedCatalog(err) && !errors.Is(err, berrors.ErrTimeout) {
		// The address space may be limited (ulimit -v): mapped as the file grows, the
		// catalog fsyncs every commit (catalog_sync.go).
		log.Warn("cannot map the catalog whole; its commits will be fsynced one by one", "path", path, "err", err)
		opts.InitialMmapSize = 0
		db, err = bolt.Open(path, 0o644, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		format := catalogFormat // a new catalog's
		if m := tx.Bucket(bMeta); m != nil {
			format = string(m.Get(kFormat))
		}
		switch format {
		case catalogFormat:
		case "4":
			// Format 4 lacks only sesver and keyver, which its versions give: the store's
			// open fills them (Store.indexActors; 0.4 s at 100,000 versions) instead of a
			// rebuild.
			log.Info("the catalog is of format 4; listing its versions by session and API key",
				"path", path, "now", catalogFormat)
			if err := ensureBuckets(tx); err != nil {
				return err
			}
			return catTx{tx}.setIndexedUpTo(0)
		case "5":
			// Format 5 wrote sesver and keyver with every version: they list them all.
			if err := ensureBuckets(tx); err != nil {
				return err
			}
			c := catTx{tx}
			return c.setIndexedUpTo(c.versionCount())
		default:
			log.Warn("the catalog is of another format; rebuilding it from history",
				"path", path, "format", format, "now", catalogFormat)
			return writeTx(tx).reset()
		}
		return ensureBuckets(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	c := &catalogDB{DB: db, path: path}
	start := c.startSync
	if !skipFsyncs {
		start = c.lockedSyncEach
	}
	if err := start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	return c, nil
}

// damagedCatalog tells whether bbolt refused to open a catalog for what its file holds: then
// it is set aside and rebuilt from history (openStoreProgress).
func damagedCatalog(err error) bool {
	return errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) || errors.Is(err, berrors.ErrVersionMismatch)
}

func ensureBuckets(tx *bolt.Tx) error {
	for _, b := range append(append([][]byte{}, derivedBuckets...), keptBuckets...) {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return tx.Bucket(bMeta).Put(kFormat, []byte(catalogFormat))
}

// catTx reads and writes the catalog inside one bbolt transaction.
type catTx struct{ tx *bolt.Tx }

// reset empties the catalog, for a rebuild from the first commit. It keeps the kept
// buckets (catalog_schema.go: push keys, read times, rewrites, objects to prune), which
// history does not hold.
func (c catTx) reset() error {
	for _, b := range derivedBuckets {
		if c.tx.Bucket(b) != nil {
			if err := c.tx.DeleteBucket(b); err != nil {
				return err
			}
		}
	}
	if err := ensureBuckets(c.tx); err != nil {
		return err
	}
	setFill(c.tx) // the buckets made again are new handles, at bbolt's default
	return nil
}

func (c catTx) applied() plumbing.Hash {
	h, _ := decodeHash(c.tx.Bucket(bMeta).Get(kApplied))
	return h
}

func (c catTx) setApplied(h plumbing.Hash) error {
	return c.tx.Bucket(bMeta).Put(kApplied, hashKey(h))
}

func (c catTx) storeInfo() (StoreInfo, error) {
	raw := c.tx.Bucket(bMeta).Get(kStore)
	if raw == nil {
		return StoreInfo{}, fmt.Errorf("catalog has no store metadata")
	}
	return decodeStoreInfo(raw)
}

// putStoreFile records raw, the content of .gitmem/store.json, as the store's metadata.
func (c catTx) putStoreFile(raw []byte) error {
	return c.tx.Bucket(bMeta).Put(kStore, raw)
}

// versionCount is the number of the newest version: the versions that later commits make
// are numbered after it.
func (c catTx) versionCount() uint64 {
	if raw := c.tx.Bucket(bMeta).Get(kSeq); len(raw) == 8 {
		return seqOf(raw)
	}
	return 0
}

// usage is what the store holds as of the applied commit, kept by record as versions are
// applied, so that quotas are checked without walking the store.
func (c catTx) usage() Usage {
	return decodeUsage(c.tx.Bucket(bMeta).Get(kUsage))
}

func (c catTx) addUsage(memories int, bytes int64) error {
	if memories == 0 && bytes == 0 {
		return nil
	}
	u := c.usage()
	return c.tx.Bucket(bMeta).Put(kUsage, encodeUsage(Usage{Memories: u.Memories + memories, Bytes: u.Bytes + bytes}))
}

// Cursors are opaque to callers: "page_" and the base64 of where the next page starts.
func encodeCursor(kind byte, key []byte) string {
	return "page_" + base64.RawURLEncoding.EncodeToString(append([]byte{kind}, key...))
}

func decodeCursor(kind byte, cursor string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(cursor, "page_"))
	if err != nil || !strings.HasPrefix(cursor, "page_") || len(raw) < 1 || raw[0] != kind {
		return nil, invalidf("page %q is not a cursor that this listing returned", cursor)
	}
	return raw[1:], nil
}

// readCatalog runs fn in a read transaction of the catalog, as it is (view, in
// memories.go, first catches it up with main).
func (s *Store) readCatalog(fn func(ct catTx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(catTx{tx}) })
}

// updateCatalog runs fn in a write transaction of the catalog of its own, and syncs the
// catalog: for catching up and for what history does not hold (catalog_kept.go). The writer's
// groups open theirs in writer.go, and sync now and then (afterGroup).
func (s *Store) updateCatalog(fn func(ct catTx) error) error {
	if err := s.db.Update(func(tx *bolt.Tx) error { return fn(writeTx(tx)) }); err != nil {
		s.db.commitFailed(err)
		return err
	}
	return s.db.sync() // durable before it is answered (catalog_sync.go)
}

// appendFill is how full bbolt packs a page that it splits in a bucket whose keys mostly grow
// (version numbers, and ids, which are minted in time order; those of commits made with
// plain git carry their author date, which can be older): its default, half, suits random
// keys and left such buckets half empty, which doubled both the catalog's file and the pages
// of it that a process maps (at 100,000 memories, 57 MB of leaves for 28 MB of records in
// mem). mem's records are rewritten by updates, so its pages keep some room.
var appendFill = map[string]float64{string(bMem): 0.9, string(bVer): 1, string(bVerID): 1, string(bStore): 1}

// writeTx is catTx for a write transaction: bbolt keeps a bucket's handle for the whole
// transaction, so its fill setting holds for every write in it.
func writeTx(tx *bolt.Tx) catTx {
	setFill(tx)
	return catTx{tx}
}

func setFill(tx *bolt.Tx) {
	for name, fill := range appendFill {
		if b := tx.Bucket([]byte(name)); b != nil {
			b.FillPercent = fill
		}
	}
}

// copyCatalog writes a consistent copy of the catalog to path, as of one moment: its head
// is a commit of main then.
func (s *Store) copyCatalog(path string) error {
	return s.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(path, 0o600) })
}
