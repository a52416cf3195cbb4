package gitstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"math"
)

// The catalog's versions: the versions by number (bucket ver), in the order their commits
// were applied, which is the order of main's first-parent history; the number of each
// version id (verid); and the numbers of each memory's versions (memver).

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
	return c.tx.Bucket(bMemVer).Put(append([]byte(v.Memory), seqKey(n)...), nil)
}

// putVersion stores v under its number, in place of the record that was there.
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

// versionsBefore yields, newest first, the versions numbered before the version key before
// (as a listing's cursor holds it; nil: from the newest), of memory mem only if mem is not
// "". An error ends the walk, as in versionsDown.
func (c catTx) versionsBefore(mem string, before []byte) iter.Seq2[verRec, error] {
	return func(yield func(verRec, error) bool) {
		cur := c.tx.Bucket(bVer).Cursor()
		var prefix []byte
		if mem != "" {
			cur, prefix = c.tx.Bucket(bMemVer).Cursor(), []byte(mem)
		}
		var k []byte
		if before != nil {
			cur.Seek(append(append([]byte{}, prefix...), before...))
			k, _ = cur.Prev()
		} else if prefix != nil {
			k, _ = cur.Seek(append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
			if k == nil {
				k, _ = cur.Last()
			} else {
				k, _ = cur.Prev()
			}
		} else {
			k, _ = cur.Last()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, _ = cur.Prev() {
			v, err := c.versionBySeq(k[len(prefix):])
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// firstMatchingVersions finds the versions that f matches (by session or API key, and
// time) and returns the memories they touched, in the order of their first matching
// version, with that version's key in ver.
func (c catTx) firstMatchingVersions(f VersionFilter) (order []string, first map[string][]byte, err error) {
	first = map[string][]byte{}
	for v, err := range c.versionsFrom(0) {
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
