package gitstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gitmem/gitmem/internal/durable"
	"github.com/gitmem/gitmem/internal/mmap"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"golang.org/x/sys/unix"
)

// The writer's catalog commits are not fsynced one by one. bbolt fsyncs a commit twice (its
// pages, then its meta page), and those fsyncs were a third of a write at 100 memories, beside
// the journal's, which already makes the write durable: the catalog is derived from main and
// catches up with it at open. What the catalog must not be after a power loss is torn: a
// meta page on disk whose pages are not. So the catalog is synced now and then (sync and
// maybeSync: at most every syncEvery between groups, when the writer goes idle, after each
// write of what history does not hold, and at close), and each sync
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

// syncEvery is the longest the writer goes between catalog syncs while it writes. A sync
// writes every page changed since the one before and holds the writer meanwhile: at 100,000
// memories, where a commit changes more pages, syncs every 20 ms held it 110 µs a write,
// every 100 ms 28 µs. A power loss costs the catalog up to this much more to catch up.
const syncEvery = 100 * time.Millisecond

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

// A slot of the side file: the catalog file's inode (its device number can change across
// a reboot), then the first metaCopy bytes of its meta page (the page header and bbolt's meta
// record). Slots are a sector apart, so that a write torn by a power loss damages one.
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
	if err == nil {
		err = durable.SyncDir(filepath.Dir(c.path))
	}
	if err != nil {
		file.Close()
		return fmt.Errorf("open %s: %w", sidePath(c.path), err)
	}
	c.side, c.file = f, file
	if err := c.syncLocked(); err != nil {
		return err
	}
	c.NoSync = true
	// A commit that would outgrow the mapping fails rather than wait for the pin forever.
	c.MaxSize = catalogMap / 4 * 3
	return nil
}

// syncEach goes back to fsyncing every commit and removes the side file, whose saved state
// bbolt may now overwrite: its slots are zeroed first, so that a removal lost to a power
// loss leaves nothing to restore. Until the file is synced the side file stays. c.mu is held.
func (c *catalogDB) syncEach() error {
	tx, err := c.Begin(true) // no commit beside the change
	if err != nil {
		return err
	}
	defer tx.Rollback()
	c.NoSync = false
	c.MaxSize = 0
	if err := c.Sync(); err != nil {
		return fmt.Errorf("sync catalog %s: %w", c.path, err)
	}
	if c.pin != nil {
		c.pin.Rollback()
		c.pin = nil
	}
	if c.side == nil { // one left by a crash, when the catalog does not skip fsyncs now
		if f, err := os.OpenFile(sidePath(c.path), os.O_RDWR, 0); err == nil {
			c.side = f
		}
	}
	if c.side != nil {
		if _, err := c.side.WriteAt(make([]byte, 2*slotSize), 0); err != nil {
			return fmt.Errorf("clear %s: %w", sidePath(c.path), err)
		}
		if err := c.side.Sync(); err != nil {
			return fmt.Errorf("clear %s: %w", sidePath(c.path), err)
		}
	}
	c.closeFiles()
	if err := os.Remove(sidePath(c.path)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", sidePath(c.path), err)
	}
	return nil
}

// lockedSyncEach is syncEach, for a catalog that does not skip fsyncs from its open.
func (c *catalogDB) lockedSyncEach() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncEach()
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

// commitFailed goes back to fsyncing every commit when a commit failed for the mapping's
// size (MaxSize, above): a catalog that large no longer skips them.
func (c *catalogDB) commitFailed(err error) {
	if !errors.Is(err, berrors.ErrMaxSizeReached) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if serr := c.syncEach(); serr != nil {
		slog.Error("sync every catalog commit", "path", c.path, "err", serr)
	}
}

// catalogSynced, when set (by the power-loss test only), is called with the catalog's path
// once its file is durable, before the side file says so.
var catalogSynced func(path string)

func (c *catalogDB) syncLocked() error {
	if c.side == nil {
		return nil // every commit is fsynced
	}
	err := c.saveSynced()
	if err != nil {
		// The side file's last slot still names a state whose pages are kept (the pin did not
		// move); from here on every commit is fsynced.
		if serr := c.syncEach(); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return err
}

// saveSynced is steps 1 to 3 above.
func (c *catalogDB) saveSynced() error {
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
	binary.LittleEndian.PutUint64(slot[0:], inode(st))
	if _, err := c.file.ReadAt(slot[8:8+metaCopy], int64(txid%2)*pageSize); err != nil {
		return fmt.Errorf("sync catalog %s: read its meta page: %w", c.path, err)
	}
	if got, ok := metaTxid(slot[8 : 8+metaCopy]); !ok || got != txid {
		return fmt.Errorf("sync catalog %s: its meta page is not that of transaction %d", c.path, txid)
	}
	// The other slot than the last one written: that one stays whole if this write is torn.
	next := 1 - c.slot
	if _, err := c.side.WriteAt(slot[:], int64(next*slotSize)); err != nil {
		return fmt.Errorf("write %s: %w", sidePath(c.path), err)
	}
	if err := c.side.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", sidePath(c.path), err)
	}
	c.slot = next
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
		if err := mmap.Drop(c.Info().Data, st.Size()); err != nil {
			slog.Warn("drop the catalog's mapped pages", "path", c.path, "err", err)
		}
	}
	return nil
}

// dropEvery is how often a sync drops the catalog's mapped pages from the process.
const dropEvery = 250 * time.Millisecond

// Close goes back to fsyncing every commit, which syncs the catalog (a commit that waited
// for the close is then durable when it is answered) and removes the side file, which the
// next open does not need, and closes the catalog.
func (c *catalogDB) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var err error
	if c.side != nil {
		err = c.syncEach()
	}
	return errors.Join(err, c.DB.Close())
}

func (c *catalogDB) closeFiles() {
	for _, f := range []*os.File{c.side, c.file} {
		if f != nil {
			f.Close()
		}
	}
	c.side, c.file = nil, nil
}

// restoreSynced sets the catalog file at path back to the state that its side file saved, if
// commits came after it (see above). The side file of a catalog since removed goes too.
func restoreSynced(path string, log *slog.Logger) error {
	side, err := os.ReadFile(sidePath(path))
	if os.IsNotExist(err) {
		return nil // every commit was fsynced
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", sidePath(path), err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return os.Remove(sidePath(path)) // of a catalog since removed
	}
	if err != nil {
		return fmt.Errorf("open catalog %s: %w", path, err)
	}
	defer f.Close()
	// bbolt's own lock: a catalog open elsewhere is not set back under it (bbolt's open then
	// waits for it, and times out).
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var saved []byte
	var savedTx uint64
	for i := 0; i+slotSize <= len(side); i += slotSize {
		s := side[i : i+slotSize]
		if binary.LittleEndian.Uint64(s[0:]) != inode(st) {
			continue // of a catalog file since replaced
		}
		meta := s[8 : 8+metaCopy]
		if txid, ok := metaTxid(meta); ok && fits(f, st.Size(), meta) && (saved == nil || txid > savedTx) {
			saved, savedTx = meta, txid
		}
	}
	if saved == nil {
		return nil // the first sync did not finish: commits were fsynced until then
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
		return nil
	}
	log.Warn("the catalog has commits after its last sync; setting it back to that sync, to catch up from history",
		"path", path, "synced", savedTx, "last", cur)
	for i := int64(0); i < 2; i++ {
		page := append([]byte(nil), saved...)
		binary.NativeEndian.PutUint64(page[0:], uint64(i)) // a meta page's id is its slot
		if _, err := f.WriteAt(page, i*pageSize); err != nil {
			return fmt.Errorf("restore catalog %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("restore catalog %s: %w", path, err)
	}
	return nil
}

// fits tells whether a saved meta page can be the file's: the pages it counts are in the
// file, and its root bucket's page is a branch or a leaf that names itself.
func fits(f *os.File, size int64, meta []byte) bool {
	ne := binary.NativeEndian
	pageSize := int64(ne.Uint32(meta[24:]))
	root, hwm := ne.Uint64(meta[32:]), ne.Uint64(meta[56:])
	if pageSize < 512 || root < 2 || root >= hwm || int64(hwm) > size/pageSize {
		return false
	}
	var hdr [16]byte
	if _, err := f.ReadAt(hdr[:], int64(root)*pageSize); err != nil {
		return false
	}
	flags := ne.Uint16(hdr[8:])
	return ne.Uint64(hdr[0:]) == root && (flags == branchPage || flags == leafPage)
}

// The flags of bbolt's branch and leaf pages.
const (
	branchPage = 0x01
	leafPage   = 0x02
)

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

// inode is the file's inode number, or 0 where the file system does not say.
func inode(st os.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Ino)
	}
	return 0
}
