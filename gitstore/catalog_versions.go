package gitstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
)

// The catalog's versions: the versions by number (bucket ver), in the order their commits
// were applied, which is the order of main's first-parent history; the number of each
// version id (verid); and the numbers of the versions of each memory (memver), session
// (sesver) and API key (keyver), so that a listing of those walks their versions only.

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
	return c.indexVersion(v)
}

// versionEntry is a key that lists a version in memver, sesver or keyver.
type versionEntry struct{ bucket, key []byte }

// versionEntries are the keys that list version v: in memver, and in sesver and keyver if
// a session or an API key made it. They follow from the record's memory and actor, which
// nothing changes once it is added: a redaction rewrites its content and its commit.
func versionEntries(v verRec) []versionEntry {
	n := seqKey(v.seq)
	out := []versionEntry{{bMemVer, append([]byte(v.Memory), n...)}}
	a := v.actor()
	if id := a.SessionID(); id != "" {
		out = append(out, versionEntry{bSesVer, append(idRun(id), n...)})
	}
	if id := a.KeyID(); id != "" {
		out = append(out, versionEntry{bKeyVer, append(idRun(id), n...)})
	}
	return out
}

// indexVersion lists v in memver, sesver and keyver.
func (c catTx) indexVersion(v verRec) error {
	for _, e := range versionEntries(v) {
		if err := c.tx.Bucket(e.bucket).Put(e.key, nil); err != nil {
			return err
		}
	}
	return nil
}

// unindexVersion takes v out of memver, sesver and keyver, as it is undone.
func (c catTx) unindexVersion(v verRec) error {
	for _, e := range versionEntries(v) {
		if err := c.tx.Bucket(e.bucket).Delete(e.key); err != nil {
			return err
		}
	}
	return nil
}

// indexActors fills sesver and keyver, empty, from the versions, for a catalog of format 4,
// which had neither: what a rebuild would give them, in one pass over ver. It puts each
// bucket's keys in their order: bbolt splits a transaction's nodes only as it commits, and
// a node that took 75,000 keys, each in its middle, made the pass take 10 s at 100,000
// versions (0.4 s in order).
func (c catTx) indexActors() error {
	keys := map[string][][]byte{}
	for v, err := range c.versionsFrom(0) {
		if err != nil {
			return err
		}
		for _, e := range versionEntries(v)[1:] {
			keys[string(e.bucket)] = append(keys[string(e.bucket)], e.key)
		}
	}
	for name, ks := range keys {
		slices.SortFunc(ks, bytes.Compare)
		b := c.tx.Bucket([]byte(name))
		for _, k := range ks {
			if err := b.Put(k, nil); err != nil {
				return err
			}
		}
	}
	return nil
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

// versionIndex returns where the versions that f can match are listed, oldest first: the
// run of keys that begin with prefix, each then a version's number, in bucket. That is the
// versions of f's memory (memver), else of its session (sesver), else of its API key
// (keyver); else every version (ver itself, prefix nil), which the other filters select from.
func versionIndex(f VersionFilter) (bucket, prefix []byte) {
	switch {
	case f.MemoryID != "":
		return bMemVer, []byte(f.MemoryID)
	case f.SessionID != "":
		return bSesVer, idRun(f.SessionID)
	case f.APIKeyID != "":
		return bKeyVer, idRun(f.APIKeyID)
	}
	return bVer, nil
}

// versionsBefore yields, newest first, the versions that f's index lists (versionIndex)
// numbered before the version key before (as a listing's cursor holds it; nil: from the
// newest). An error ends the walk, as in versionsDown.
func (c catTx) versionsBefore(f VersionFilter, before []byte) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		bucket, prefix := versionIndex(f)
		cur := c.tx.Bucket(bucket).Cursor()
		var k, raw []byte
		if before != nil {
			cur.Seek(append(append([]byte{}, prefix...), before...))
			k, raw = cur.Prev()
		} else if prefix != nil {
			k, _ = cur.Seek(append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
			if k == nil {
				k, _ = cur.Last()
			} else {
				k, _ = cur.Prev()
			}
		} else {
			k, raw = cur.Last()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, raw = cur.Prev() {
			v, err := c.indexedVersion(prefix, k, raw)
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// versionsUp yields, oldest first, the versions that f's index lists (versionIndex). An error
// ends the walk, as in versionsDown.
func (c catTx) versionsUp(f VersionFilter) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		bucket, prefix := versionIndex(f)
		cur := c.tx.Bucket(bucket).Cursor()
		for k, raw := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, raw = cur.Next() {
			v, err := c.indexedVersion(prefix, k, raw)
			if !yield(v, err) || err != nil {
				return
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
// time), walking the versions of f's session or key, and returns the memories they touched,
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
