package odb

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
)

// swapOnGet is an object cache that, at its first lookup, puts next in place as r's set of
// packs: as a merge that swaps the set while a read is between taking the set and reading
// from one of its packs.
type swapOnGet struct {
	cache.Object
	r    *Repo
	next *objectSet
	gets int
}

func (s *swapOnGet) Get(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	if s.gets++; s.gets == 1 {
		s.r.objs.Store(s.next)
	}
	return nil, false
}

// TestReadAfterSwap: a read that took the set of packs just before a merge swapped it, and
// found its pack closed, reads again from the new set; a read that fails on a set that did
// not change fails once.
func TestReadAfterSwap(t *testing.T) {
	r := openTestRepo(t)
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	c2 := commitObjects(t, head(c1), "two")
	for _, objs := range [][]plumbing.EncodedObject{c1, c2} {
		if err := r.WritePack(objs); err != nil {
			t.Fatal(err)
		}
	}
	before := r.objs.Load()
	if _, err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	after := r.objs.Load() // the merged pack; before's packs are closed
	h := c1[0].Hash()

	r.objs.Store(before)
	c := &swapOnGet{Object: cache.NewObjectLRU(cache.MiByte), r: r, next: after}
	o, err := r.findSettled(h, c)
	if err != nil {
		t.Fatalf("a read across a swap: %v", err)
	}
	if o.Hash() != h || c.gets != 2 {
		t.Fatalf("read %s in %d tries; want %s in 2", o.Hash(), c.gets, h)
	}

	// Without a swap, a failed read is not tried again.
	r.objs.Store(before)
	c = &swapOnGet{Object: cache.NewObjectLRU(cache.MiByte), r: r, next: before}
	if _, err := r.findSettled(h, c); err == nil || c.gets != 1 {
		t.Fatalf("a read from closed packs: %v in %d tries; want an error in 1", err, c.gets)
	}
	r.objs.Store(after)
}
