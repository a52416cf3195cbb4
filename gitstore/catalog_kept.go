package gitstore

import (
	"maps"

	"github.com/go-git/go-git/v5/plumbing"
)

// The catalog's kept buckets: what history does not say, so that a rebuild keeps it (see
// catalog_schema.go): which API key pushed a commit, when memories were last read, which
// commits a redaction rewrote and which objects it left to prune.

// pushKey returns the API key that pushed a commit, or "".
func (c catTx) pushKey(h plumbing.Hash) string {
	b := c.tx.Bucket(bPushKey)
	if b == nil {
		return ""
	}
	return string(b.Get(h[:]))
}

// setPushKey records keyID as the API key that pushed commit h.
func (c catTx) setPushKey(h plumbing.Hash, keyID string) error {
	return c.tx.Bucket(bPushKey).Put(hashKey(h), []byte(keyID))
}

// readTime is when memory id was last read (unix ms), as far as the catalog knows; 0 if
// never.
func (c catTx) readTime(id string) int64 {
	ms, _ := decodeMillis(c.tx.Bucket(bRead).Get([]byte(id)))
	return ms
}

// putReadTimes records the read times of memories (id -> unix ms), each unless the catalog
// has a later one.
func (c catTx) putReadTimes(times map[string]int64) error {
	b := c.tx.Bucket(bRead)
	for id, ms := range times {
		if old, ok := decodeMillis(b.Get([]byte(id))); ok && old >= ms {
			continue
		}
		if err := b.Put([]byte(id), encodeMillis(ms)); err != nil {
			return err
		}
	}
	return nil
}

// rewrittenTo follows the rewrites of commit h: the commit (of main's history, or of another
// ref's) that took its place, or h itself.
func (c catTx) rewrittenTo(h plumbing.Hash) plumbing.Hash {
	b := c.tx.Bucket(bRewritten)
	for i := 0; b != nil && i < 1000; i++ {
		n, ok := decodeHash(b.Get(h[:]))
		if !ok {
			break
		}
		h = n
	}
	return h
}

// recordRewrites records that a redaction rewrote each commit old of newOf into newOf[old],
// and moves the key that pushed old, if any, to the new commit.
func (c catTx) recordRewrites(newOf map[plumbing.Hash]plumbing.Hash) error {
	pk := c.tx.Bucket(bPushKey)
	rb, err := c.tx.CreateBucketIfNotExists(bRewritten)
	if err != nil {
		return err
	}
	for _, o := range inKeyOrder(maps.Keys(newOf)) {
		n := newOf[o]
		if key := pk.Get(o[:]); key != nil {
			if err := pk.Put(hashKey(n), append([]byte(nil), key...)); err != nil {
				return err
			}
		}
		if err := rb.Put(hashKey(o), hashKey(n)); err != nil {
			return err
		}
	}
	return nil
}

// addToPrune adds objects to the list of objects to prune, hs in key order.
func (c catTx) addToPrune(hs []plumbing.Hash) error {
	b, err := c.tx.CreateBucketIfNotExists(bPrune)
	if err != nil {
		return err
	}
	for _, h := range hs {
		if err := b.Put(hashKey(h), nil); err != nil {
			return err
		}
	}
	return nil
}

// pruneListed reports whether any object is listed for pruning.
func (c catTx) pruneListed() bool {
	b := c.tx.Bucket(bPrune)
	if b == nil {
		return false
	}
	k, _ := b.Cursor().First()
	return k != nil
}

// toPrune returns the objects listed for pruning.
func (c catTx) toPrune() ([]plumbing.Hash, error) {
	var todo []plumbing.Hash
	b := c.tx.Bucket(bPrune)
	if b == nil {
		return nil, nil
	}
	err := b.ForEach(func(k, _ []byte) error {
		var h plumbing.Hash
		copy(h[:], k)
		todo = append(todo, h)
		return nil
	})
	return todo, err
}

// stageRewrites records, before main moves to head, that a redaction rewrites each commit
// old of newOf into newOf[old], in place of what an earlier attempt staged. rewrittenTo does
// not see them until they are recorded (recordRewrites).
func (c catTx) stageRewrites(head plumbing.Hash, newOf map[plumbing.Hash]plumbing.Hash) error {
	if err := c.dropStagedRewrites(); err != nil {
		return err
	}
	b, err := c.tx.CreateBucket(bRewriting)
	if err != nil {
		return err
	}
	if err := b.Put(kRewritingHead, hashKey(head)); err != nil {
		return err
	}
	for _, o := range inKeyOrder(maps.Keys(newOf)) {
		if err := b.Put(hashKey(o), hashKey(newOf[o])); err != nil {
			return err
		}
	}
	return nil
}

// stagedRewrites returns what stageRewrites left: the head and the rewrites; a zero head if
// nothing is staged.
func (c catTx) stagedRewrites() (plumbing.Hash, map[plumbing.Hash]plumbing.Hash) {
	b := c.tx.Bucket(bRewriting)
	if b == nil {
		return plumbing.ZeroHash, nil
	}
	head, _ := decodeHash(b.Get(kRewritingHead))
	newOf := map[plumbing.Hash]plumbing.Hash{}
	b.ForEach(func(k, v []byte) error {
		o, okOld := decodeHash(k)
		n, okNew := decodeHash(v)
		if okOld && okNew {
			newOf[o] = n
		}
		return nil
	})
	return head, newOf
}

// rewritesStaged tells whether stageRewrites left anything.
func (c catTx) rewritesStaged() bool { return c.tx.Bucket(bRewriting) != nil }

// dropStagedRewrites forgets what stageRewrites left.
func (c catTx) dropStagedRewrites() error {
	if c.tx.Bucket(bRewriting) == nil {
		return nil
	}
	return c.tx.DeleteBucket(bRewriting)
}

// clearPrune empties the list of objects to prune.
func (c catTx) clearPrune() error {
	if c.tx.Bucket(bPrune) == nil {
		return nil
	}
	return c.tx.DeleteBucket(bPrune)
}
