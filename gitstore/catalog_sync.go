package gitstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The writer's catalog commits are not fsynced one by one. bbolt fsyncs a commit twice (its
// pages, then its meta page), and those fsyncs were a third of a write at 100 memories, beside
// the journal's, which already makes the write durable: the catalog is derived from main and
// catches up with it at open. What the catalog must not be after a power loss is torn: a
// meta page on disk whose pages are not. So the catalog is synced now and then (syncCatalog:
// at most every syncEvery between groups, after each write of what history does not hold,
// and at close), and each sync
//
//  1. fsyncs the file, with commits held off (a write transaction is open),
//  2. saves a copy of the meta page that it made durable in a side file (<catalog>.synced,
//     two slots, written in turn and fsynced), and
//  3. keeps a read transaction open at that state, so that bbolt reuses none of its pages
//     until the next sync: they stay on disk as they were synced.
//
// At open, if the file's meta page is newer than the side file's (commits since the last sync,
// and a crash), the saved meta page is written back (restoreSynced): the file is as synced,
// whatever a power loss did to the pages written after, and the catalog catches up from
// main. Where the catalog's pages of the saved state might be reused anyway (a catalog near
// the size that bbolt maps), commits are fsynced one by one again and the side file removed.

// syncEvery is the longest the writer goes between catalog syncs while it writes.
const syncEvery = 20 * time.Millisecond

// catalogMap is the size of bbolt's mapping of the file. A read transaction blocks bbolt from
// mapping the file again as it grows, so the pinned one (step 3) needs a mapping that the
// file does not outgrow: past half of it, commits are synced instead.
const catalogMap = 1 << 30 << (^uint(0) >> 63 * 2) // 4 GiB; 1 GiB where int has 32 bits

// catalogDB is a store's catalog: its bbolt file and what keeps it consistent on disk.
type catalogDB struct {
	*bolt.DB
	path string

	mu       sync.Mutex // held by sync and Close
	side     *os.File   // nil: every commit is fsynced
	file     *os.File   // the catalog file, read for its meta page
	pin      *bolt.Tx   // a read transaction at the state that side saves
	slot     int        // the side file's slot written last
	lastSync time.Time
	lastDrop time.Time
}

// sidePath is the path of the side file of the catalog at path.
func sidePath(path string) string { return path + ".synced" }

// A slot of the side file: the catalog file's device and inode, then the first metaCopy
// bytes of its meta page (the page header and bbolt's meta record). Slots are a sector
// apart, so that a write torn by a power loss damages one.
const (
	metaCopy = 128
	slotSize = 512
)

// startSync makes the first sync and, if the catalog may skip the fsyncs of its commits,
// sets bbolt to.
func (c *catalogDB) startSync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, err := os.Stat(c.path); err != nil || st.Size() > catalogMap/2 {
		return c.syncEach()
	}
	file, err := os.Open(c.path)
	if err != nil {
		return fmt.Errorf("open catalog %s: %w", c.path, err)
	}
	// Emptied: the slots of an earlier session name states that this one's commits (fsynced
	// until the first sync below) may have written over.
	f, err := os.OpenFile(sidePath(c.path), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		file.Close()
		return fmt.Errorf("open %s: %w", sidePath(c.path), err)
	}
	c.side, c.file = f, file
	if err := c.syncLocked(); err != nil {
		return err
	}
	c.NoSync = true
	return nil
}

// syncEach goes back to fsyncing every commit and removes the side file, whose saved state
// bbolt may now overwrite. c.mu is held.
func (c *catalogDB) syncEach() error {
	tx, err := c.Begin(true) // no commit beside the change
	if err != nil {
		return err
	}
	defer tx.Rollback()
	c.NoSync = false
	if err := c.Sync(); err != nil {
		return fmt.Errorf("sync catalog %s: %w", c.path, err)
	}
	c.closeFiles()
	if c.pin != nil {
		c.pin.Rollback()
		c.pin = nil
	}
	if err := os.Remove(sidePath(c.path)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", sidePath(c.path), err)
	}
	return nil
}

// sync makes the catalog's commits so far durable (steps 1 to 3 above).
func (c *catalogDB) sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncLocked()
}

// maybeSync syncs if the last sync is older than syncEvery.
func (c *catalogDB) maybeSync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.lastSync) < syncEvery {
		return nil
	}
	return c.syncLocked()
}

// catalogSynced, when set (by the power-loss test only), is called with the catalog's path
// once its file is durable, before the side file says so.
var catalogSynced func(path string)

func (c *catalogDB) syncLocked() error {
	if c.side == nil {
		return nil // every commit is fsynced
	}
	st, err := os.Stat(c.path)
	if err != nil {
		return fmt.Errorf("sync catalog: %w", err)
	}
	if st.Size() > catalogMap/2 {
		return c.syncEach()
	}
	tx, err := c.Begin(true) // holds commits off; never committed
	if err != nil {
		return fmt.Errorf("sync catalog %s: %w", c.path, err)
	}
	defer tx.Rollback()
	if err := c.Sync(); err != nil {
		return fmt.Errorf("sync catalog %s: %w", c.path, err)
	}
	if catalogSynced != nil {
		catalogSynced(c.path)
	}
	// The last commit's meta page is in slot txid%2 of the file.
	txid := uint64(tx.ID() - 1)
	pageSize := int64(c.Info().PageSize)
	var slot [slotSize]byte
	if id, ok := fileID(st); ok {
		binary.LittleEndian.PutUint64(slot[0:], id.dev)
		binary.LittleEndian.PutUint64(slot[8:], id.ino)
	}
	if _, err := c.file.ReadAt(slot[16:16+metaCopy], int64(txid%2)*pageSize); err != nil {
		return fmt.Errorf("sync catalog %s: read its meta page: %w", c.path, err)
	}
	if got, ok := metaTxid(slot[16 : 16+metaCopy]); !ok || got != txid {
		return fmt.Errorf("sync catalog %s: its meta page is not that of transaction %d", c.path, txid)
	}
	c.slot = 1 - c.slot
	if _, err := c.side.WriteAt(slot[:], int64(c.slot*slotSize)); err != nil {
		return fmt.Errorf("write %s: %w", sidePath(c.path), err)
	}
	if err := c.side.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", sidePath(c.path), err)
	}
	pin, err := c.Begin(false)
	if err != nil {
		return fmt.Errorf("sync catalog %s: %w", c.path, err)
	}
	if c.pin != nil {
		c.pin.Rollback()
	}
	c.pin = pin
	c.lastSync = time.Now()
	if c.lastSync.Sub(c.lastDrop) >= dropEvery {
		// bbolt's mapping no longer grows with the file (catalogMap), which used to drop the
		// pages mapped so far each time it doubled.
		c.lastDrop = c.lastSync
		if err := dropMapped(c.Info().Data, st.Size()); err != nil {
			slog.Warn("drop the catalog's mapped pages", "path", c.path, "err", err)
		}
	}
	return nil
}

// dropEvery is how often a sync drops the catalog's mapped pages from the process.
const dropEvery = time.Second

// Close syncs the catalog, removes the side file, which the next open then does not need, and
// closes it.
func (c *catalogDB) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.syncLocked()
	if c.pin != nil {
		c.pin.Rollback()
		c.pin = nil
	}
	if c.side != nil && err == nil {
		// Synced whole: the next open has nothing to set back.
		err = os.Remove(sidePath(c.path))
	}
	c.closeFiles()
	return errors.Join(err, c.DB.Close())
}

func (c *catalogDB) closeFiles() {
	if c.side != nil {
		c.side.Close()
		c.file.Close()
		c.side, c.file = nil, nil
	}
}

// restoreSynced sets the catalog file at path back to the state that its side file saved, if
// commits came after it (see above), and tells whether it did.
func restoreSynced(path string, log *slog.Logger) (bool, error) {
	side, err := os.ReadFile(sidePath(path))
	if os.IsNotExist(err) {
		return false, nil // every commit was fsynced
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", sidePath(path), err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return false, os.Remove(sidePath(path)) // of a catalog since removed
	}
	if err != nil {
		return false, fmt.Errorf("open catalog %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	id, _ := fileID(st)
	var saved []byte
	var savedTx uint64
	for i := 0; i+slotSize <= len(side); i += slotSize {
		s := side[i : i+slotSize]
		if binary.LittleEndian.Uint64(s[0:]) != id.dev || binary.LittleEndian.Uint64(s[8:]) != id.ino {
			continue // of a catalog file since replaced
		}
		if txid, ok := metaTxid(s[16 : 16+metaCopy]); ok && (saved == nil || txid > savedTx) {
			saved, savedTx = s[16:16+metaCopy], txid
		}
	}
	if saved == nil {
		return false, nil // the first sync did not finish: commits were fsynced until then
	}
	pageSize := int64(binary.NativeEndian.Uint32(saved[24:]))
	var cur uint64
	for i := int64(0); i < 2; i++ {
		page := make([]byte, metaCopy)
		if _, err := f.ReadAt(page, i*pageSize); err == nil {
			if txid, ok := metaTxid(page); ok && txid > cur {
				cur = txid
			}
		}
	}
	if cur == savedTx {
		return false, nil
	}
	log.Warn("the catalog has commits after its last sync; setting it back to that sync, to catch up from history",
		"path", path, "synced", savedTx, "last", cur)
	for i := int64(0); i < 2; i++ {
		page := append([]byte(nil), saved...)
		binary.NativeEndian.PutUint64(page[0:], uint64(i)) // a meta page's id is its slot
		if _, err := f.WriteAt(page, i*pageSize); err != nil {
			return false, fmt.Errorf("restore catalog %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("restore catalog %s: %w", path, err)
	}
	return true, nil
}

// bbolt's meta page: a 16-byte page header, then magic, version, page size and flags (4
// bytes each), the root bucket (16), the freelist's page, the high-water mark and the
// transaction id (8 each), and an FNV-64a checksum of what precedes it in the record.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2
)

// metaTxid checks a copy of a meta page as bbolt does, and returns its transaction id.
func metaTxid(page []byte) (uint64, bool) {
	if len(page) < 80 {
		return 0, false
	}
	le := binary.NativeEndian // bbolt's records are in the machine's byte order
	if le.Uint32(page[16:]) != boltMagic || le.Uint32(page[20:]) != boltVersion {
		return 0, false
	}
	h := fnv.New64a()
	h.Write(page[16:72])
	if h.Sum64() != le.Uint64(page[72:]) {
		return 0, false
	}
	return le.Uint64(page[64:]), true
}

type fileIdent struct{ dev, ino uint64 }

func fileID(st os.FileInfo) (fileIdent, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdent{}, false
	}
	return fileIdent{dev: uint64(sys.Dev), ino: uint64(sys.Ino)}, true
}
