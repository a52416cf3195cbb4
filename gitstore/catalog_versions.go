package gitstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The catalog's versions: the versions by number (bucket ver), in the order their commits
// were applied, which is the order of main's first-parent history; the number of each
// version id (verid); and the numbers of the versions of each memory (memver), session
// (sesver) and API key (keyver), so that a listing of those walks their versions only.
//
// memver is written with each version. sesver and keyver lag: the writer adds their entries
// in batches, between groups (indexActorsStep, run by Store.indexActors), so that a write
// pays no Put in them (two or three more dirty pages at each commit: 7% of a write at 100
// memories). meta's indexed holds the number up to which they list every version; a
// listing walks the versions above it in ver itself, then the index (versionsBefore,
// versionsUp), in one transaction, and so answers as a full scan would.

// everyVersion, as the upper bound of versionsDown, yields every version.
const everyVersion = math.MaxUint64

// nextSeq takes the next number of the sequence that versions and store changes share.
func (c catTx) nextSeq() (uint64, error) {
	n := c.versionCount() + 1
	return n, c.tx.Bucket(bMeta).Put(kSeq, seqKey(n))
}

// addStoreChange gives ch the next number and records it.
func (c catTx) addStoreChange(ch storeChgRec) error {
	n, err := c.nextSeq()
	if err != nil {
		return err
	}
	ch.seq = n
	return c.putStoreChange(ch)
}

func (c catTx) putStoreChange(ch storeChgRec) error {
	b, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	return c.tx.Bucket(bStore).Put(seqKey(ch.seq), b)
}

// storeChangesFrom yields the store changes numbered from on, oldest first; an error ends
// the walk.
func (c catTx) storeChangesFrom(from uint64) iter.Seq2[storeChgRec, error] {
	return func(yield func(storeChgRec, error) bool) {
		cur := c.tx.Bucket(bStore).Cursor()
		for k, raw := cur.Seek(seqKey(from)); k != nil; k, raw = cur.Next() {
			var ch storeChgRec
			err := json.Unmarshal(raw, &ch)
			if err != nil {
				err = fmt.Errorf("decode catalog store change %x: %w", k, err)
			}
			ch.seq = seqOf(k)
			if !yield(ch, err) || err != nil {
				return
			}
		}
	}
}

// firstRecordOf returns the number of the first record (a version or a store change) of the
// run of records of commit that ends at number seq: a commit's records are numbered in one
// run as it is applied (its store.json change first, then its versions in path order).
func (c catTx) firstRecordOf(commit string, seq uint64) (uint64, error) {
	for ; seq > 1; seq-- {
		k := seqKey(seq - 1)
		var of string
		if raw := c.tx.Bucket(bVer).Get(k); raw != nil {
			v, err := decodeVersion(k, raw)
			if err != nil {
				return 0, err
			}
			of = v.Commit
		} else if raw := c.tx.Bucket(bStore).Get(k); raw != nil {
			var ch storeChgRec
			if err := json.Unmarshal(raw, &ch); err != nil {
				return 0, fmt.Errorf("decode catalog store change %x: %w", k, err)
			}
			of = ch.Commit
		}
		if of != commit {
			break
		}
	}
	return seq, nil
}

// storeChangeKey returns the number of the store change with id id, nil if there is none.
// Store changes are few (a store's settings), so a walk finds it.
func (c catTx) storeChangeKey(id string) []byte {
	for ch, err := range c.storeChangesFrom(0) {
		if err != nil {
			return nil
		}
		if ch.ID == id {
			return seqKey(ch.seq)
		}
	}
	return nil
}

// addVersion gives v the next number and records it.
func (c catTx) addVersion(v verRec) error {
	n, err := c.nextSeq()
	if err != nil {
		return err
	}
	v.seq = n
	if err := c.putVersion(v); err != nil {
		return err
	}
	if err := c.tx.Bucket(bVerID).Put([]byte(v.ID), seqKey(n)); err != nil {
		return err
	}
	return c.tx.Bucket(bMemVer).Put(memVerKey(v), nil)
}

// memVerKey is the key that lists version v in memver.
func memVerKey(v verRec) []byte { return append([]byte(v.Memory), seqKey(v.seq)...) }

// versionEntry is a key that lists a version in sesver or keyver.
type versionEntry struct{ bucket, key []byte }

// actorEntries are the keys that list version v in sesver and keyver, if a session or an API
// key made it. They follow from the record's actor, which nothing changes once it is added:
// a redaction rewrites its content and its commit.
func actorEntries(v verRec) []versionEntry {
	n := seqKey(v.seq)
	var out []versionEntry
	a := v.actor()
	if id := a.SessionID(); id != "" {
		out = append(out, versionEntry{bSesVer, append(idRun(id), n...)})
	}
	if id := a.KeyID(); id != "" {
		out = append(out, versionEntry{bKeyVer, append(idRun(id), n...)})
	}
	return out
}

// unindexVersion takes v out of memver, sesver and keyver, as it is undone (an entry not
// added yet, above the mark, is no matter).
func (c catTx) unindexVersion(v verRec) error {
	if err := c.tx.Bucket(bMemVer).Delete(memVerKey(v)); err != nil {
		return err
	}
	for _, e := range actorEntries(v) {
		if err := c.tx.Bucket(e.bucket).Delete(e.key); err != nil {
			return err
		}
	}
	return nil
}

// indexedUpTo is the mark of sesver and keyver: they list every version numbered up to it,
// and none above it.
func (c catTx) indexedUpTo() uint64 {
	if raw := c.tx.Bucket(bMeta).Get(kIndexed); len(raw) == 8 {
		return seqOf(raw)
	}
	return 0
}

func (c catTx) setIndexedUpTo(n uint64) error {
	return c.tx.Bucket(bMeta).Put(kIndexed, seqKey(n))
}

// lowerIndexMark keeps the mark at most n, once the versions above n are undone (setting
// back), so that it says nothing of versions numbered above n later.
func (c catTx) lowerIndexMark(n uint64) error {
	if c.indexedUpTo() <= n {
		return nil
	}
	return c.setIndexedUpTo(n)
}

// actorsPerStep bounds the versions that one step adds to sesver and keyver, so that one
// transaction does not hold a large catalog's whole pass (0.4 to 0.6 s at 100,000 versions).
const actorsPerStep = 10000

// indexActorsStep adds to sesver and keyver the entries of up to limit versions numbered
// above the mark, and moves the mark past them. It tells whether the buckets then list
// every version. It puts each bucket's keys in their order: bbolt splits a transaction's
// nodes only as it commits, and a node that took 75,000 keys, each in its middle, made a
// pass over 100,000 versions take 10 s (0.4 s in order).
func (c catTx) indexActorsStep(limit int) (bool, error) {
	mark, last := c.indexedUpTo(), c.versionCount()
	if mark >= last {
		return true, nil
	}
	upTo := last
	keys := map[string][][]byte{}
	n := 0
	for v, err := range c.versionsFrom(mark + 1) {
		if err != nil {
			return false, err
		}
		if n == limit {
			upTo = v.seq - 1
			break
		}
		for _, e := range actorEntries(v) {
			keys[string(e.bucket)] = append(keys[string(e.bucket)], e.key)
		}
		n++
	}
	for name, ks := range keys {
		slices.SortFunc(ks, bytes.Compare)
		b := c.tx.Bucket([]byte(name))
		for _, k := range ks {
			if err := b.Put(k, nil); err != nil {
				return false, err
			}
		}
	}
	return upTo == last, c.setIndexedUpTo(upTo)
}

// putVersion stores v under its number, in place of the record that was there. It must not
// change v's memory or actor, which memver, sesver and keyver list it by.
func (c catTx) putVersion(v verRec) error {
	b, err := encodeVersion(v)
	if err != nil {
		return err
	}
	return c.tx.Bucket(bVer).Put(seqKey(v.seq), b)
}

// versionBySeq returns the version whose key in ver is k.
func (c catTx) versionBySeq(k []byte) (verRec, error) {
	raw := c.tx.Bucket(bVer).Get(k)
	if raw == nil {
		return verRec{}, fmt.Errorf("catalog has no version number %x", k)
	}
	return decodeVersion(k, raw)
}

// versionKey returns the key in ver of the version with id id, nil if there is none.
func (c catTx) versionKey(id string) []byte {
	return c.tx.Bucket(bVerID).Get([]byte(id))
}

// version returns the version with id id, if the catalog has it.
func (c catTx) version(id string) (verRec, bool, error) {
	k := c.versionKey(id)
	if k == nil {
		return verRec{}, false, nil
	}
	v, err := c.versionBySeq(k)
	return v, err == nil, err
}

// versionsDown yields the versions numbered at most upTo (everyVersion: all), newest
// first. A version that cannot be decoded is yielded as an error, and the walk ends there.
func (c catTx) versionsDown(upTo uint64) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		cur := c.tx.Bucket(bVer).Cursor()
		var k, raw []byte
		if upTo == everyVersion {
			k, raw = cur.Last()
		} else if k, _ = cur.Seek(seqKey(upTo + 1)); k == nil {
			k, raw = cur.Last()
		} else {
			k, raw = cur.Prev()
		}
		for ; k != nil; k, raw = cur.Prev() {
			v, err := decodeVersion(k, raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// versionsFrom yields the versions numbered from on, oldest first; an error ends the walk,
// as in versionsDown.
func (c catTx) versionsFrom(from uint64) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		cur := c.tx.Bucket(bVer).Cursor()
		for k, raw := cur.Seek(seqKey(from)); k != nil; k, raw = cur.Next() {
			v, err := decodeVersion(k, raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// memoryVersions returns the versions of memory id, oldest first.
func (c catTx) memoryVersions(id string) ([]verRec, error) {
	var out []verRec
	prefix := []byte(id)
	cur := c.tx.Bucket(bMemVer).Cursor()
	for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
		if len(k) != len(prefix)+8 {
			continue // a version of a memory whose id starts with id
		}
		v, err := c.versionBySeq(k[len(prefix):])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// memoryVersionsDown yields the versions of memory id numbered at most upTo, newest first;
// an error ends the walk, as in versionsDown.
func (c catTx) memoryVersionsDown(id string, upTo uint64) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		prefix := []byte(id)
		cur := c.tx.Bucket(bMemVer).Cursor()
		k, _ := cur.Seek(append(append([]byte{}, prefix...), seqKey(upTo+1)...))
		if k == nil {
			k, _ = cur.Last()
		} else {
			k, _ = cur.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Prev() {
			if len(k) != len(prefix)+8 {
				continue
			}
			v, err := c.versionBySeq(k[len(prefix):])
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// indexEvery is how often, at most, the writer adds the versions written since to sesver
// and keyver while writes come (afterGroup): a listing by session or key walks those in ver,
// a few hundred under load. It adds them all when it goes idle, and at open and after a
// catch-up with main, the versions that these applied.
const indexEvery = 100 * time.Millisecond

// indexActors adds the versions above the mark to sesver and keyver, a step of
// actorsPerStep at a time, each step a transaction of its own: until they list every
// version, or, after a step, until more says there is no time for another. The
// transactions are not synced: the catalog's next sync takes them, and a crash before it
// loses them with the mark. It runs on the writer goroutine, or at open before it starts.
func (s *Store) indexActors(more func() bool) error {
	behind := false
	if err := s.readCatalog(func(ct catTx) error {
		behind = ct.indexedUpTo() < ct.versionCount()
		return nil
	}); err != nil || !behind {
		return err
	}
	for {
		done := false
		err := s.db.Update(func(tx *bolt.Tx) error {
			var err error
			done, err = writeTx(tx).indexActorsStep(actorsPerStep)
			return err
		})
		if err != nil {
			s.db.commitFailed(err)
			return fmt.Errorf("list the versions of %s by session and API key: %w", s.id, err)
		}
		s.indexedAt = time.Now()
		if done || more != nil && !more() {
			return nil
		}
	}
}

// indexActorsDue is the writer's step between groups: the versions written since the last,
// if that was indexEvery ago.
func (s *Store) indexActorsDue() {
	if s.opts.lagIndex || time.Since(s.indexedAt) < indexEvery {
		return
	}
	if err := s.indexActors(func() bool { return false }); err != nil {
		s.log.Error("index versions", "store", s.id, "err", err)
	}
}

// indexActorsIdle is the writer's when it goes idle: every version, while no request waits.
func (s *Store) indexActorsIdle() {
	if s.opts.lagIndex {
		return
	}
	if err := s.indexActors(func() bool { return len(s.reqs) == 0 }); err != nil {
		s.log.Error("index versions", "store", s.id, "err", err)
	}
}

// versionIndex returns where the versions that f can match are listed, oldest first: the
// run of keys that begin with prefix, each then a version's number, in bucket. That is the
// versions of f's memory (memver), else of its session (sesver), else of its API key
// (keyver); else every version (ver itself, prefix nil), which the other filters select from.
// lags says that the index lists only the versions up to the mark (indexedUpTo): those
// above it are in ver alone.
func versionIndex(f VersionFilter) (bucket, prefix []byte, lags bool) {
	switch {
	case f.MemoryID != "":
		return bMemVer, []byte(f.MemoryID), false
	case f.SessionID != "":
		return bSesVer, idRun(f.SessionID), true
	case f.APIKeyID != "":
		return bKeyVer, idRun(f.APIKeyID), true
	}
	return bVer, nil, false
}

// versionsBefore yields, newest first, the versions that f's index lists (versionIndex)
// numbered before the version key before (as a listing's cursor holds it; nil: from the
// newest). Of an index that lags, it yields first every version above the mark, from ver,
// and then the index's up to the mark: the caller's filter (VersionFilter.matches) picks
// f's among the first. An error ends the walk, as in versionsDown.
func (c catTx) versionsBefore(f VersionFilter, before []byte) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		bucket, prefix, lags := versionIndex(f)
		if lags {
			mark := c.indexedUpTo()
			for k, raw := range c.runBelow(bVer, nil, before) {
				if seqOf(k) <= mark {
					break
				}
				v, err := decodeVersion(k, raw)
				if !yield(v, err) || err != nil {
					return
				}
			}
			if below := seqKey(mark + 1); before == nil || bytes.Compare(below, before) < 0 {
				before = below
			}
		}
		for k, raw := range c.runBelow(bucket, prefix, before) {
			v, err := c.indexedVersion(prefix, k, raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// runBelow yields, last first, the keys of bucket that are prefix and then a version number
// and come before prefix+below (below nil: all of them), with their values.
func (c catTx) runBelow(bucket, prefix, below []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		if below == nil {
			below = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // after every number
		}
		cur := c.tx.Bucket(bucket).Cursor()
		var raw []byte
		k, _ := cur.Seek(append(append([]byte{}, prefix...), below...))
		if k == nil {
			k, raw = cur.Last()
		} else {
			k, raw = cur.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, raw = cur.Prev() {
			if !yield(k, raw) {
				return
			}
		}
	}
}

// versionsUp yields, oldest first, the versions that f's index lists (versionIndex); of an
// index that lags, then every version above the mark, from ver, which the caller's filter
// picks f's from. An error ends the walk, as in versionsDown.
func (c catTx) versionsUp(f VersionFilter) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		bucket, prefix, lags := versionIndex(f)
		mark := uint64(everyVersion)
		if lags {
			mark = c.indexedUpTo()
		}
		cur := c.tx.Bucket(bucket).Cursor()
		for k, raw := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, raw = cur.Next() {
			if seqOf(k[len(prefix):]) > mark {
				break
			}
			v, err := c.indexedVersion(prefix, k, raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
		if lags {
			for v, err := range c.versionsFrom(mark + 1) {
				if !yield(v, err) || err != nil {
					return
				}
			}
		}
	}
}

// indexedVersion is the version at key k, with value raw, of a run of versionIndex: in ver
// itself (prefix nil), the record; in an index, the record it numbers.
func (c catTx) indexedVersion(prefix, k, raw []byte) (verRec, error) {
	if prefix == nil {
		return decodeVersion(k, raw)
	}
	return c.versionBySeq(k[len(prefix):])
}

// firstMatchingVersions finds the versions that f matches (by session or API key, and
// time), walking the versions of f's session or key (versionsUp), and returns the memories they touched,
// in the order of their first matching version, with that version's key in ver.
func (c catTx) firstMatchingVersions(f VersionFilter) (order []string, first map[string][]byte, err error) {
	first = map[string][]byte{}
	for v, err := range c.versionsUp(f) {
		if err != nil {
			return nil, nil, err
		}
		if !f.matches(v) {
			continue
		}
		if _, ok := first[v.Memory]; !ok {
			first[v.Memory] = seqKey(v.seq)
			order = append(order, v.Memory)
		}
	}
	return order, first, nil
}
