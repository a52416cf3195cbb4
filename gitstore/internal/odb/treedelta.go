package odb

import (
	"bytes"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// A merge stores a tree as a delta of another version of it. Every write makes a new version
// of each folder above the memory it changes, and those versions differ by one entry: stored
// whole, the root folder of a store of 100,000 memories took 28 KB a write, and the packs of
// such a store 1.58 GB, which every level of merging copied again. As a delta, a version takes
// a few dozen bytes. Blobs stay whole: they are small, and a memory's versions share little.

// maxDeltaChain bounds how many deltas a merge lets a read go through to reach a whole
// object, as git's pack.depth (also 50) does.
const maxDeltaChain = 50

// minDeltaTree is the size in a pack under which a tree is copied as it is: a delta would
// save too few bytes for the inflating that finding it costs. A tree of folders a level
// above the memories, or the root, is often that small, and is read at every merge.
const minDeltaTree = 512

// maxKin bounds how many trees a merge keeps as bases for each name that trees begin or end
// with: those of as many folders.
const maxKin = 4

// maxDeltaBases bounds the bytes of trees a merge keeps as bases for the next ones; past it, a
// base is read from the packs.
const maxDeltaBases = 12 << 20

// deltaBase is a tree a merge wrote: where, how many deltas deep, its hash, and its content
// while the merge keeps it.
type deltaBase struct {
	off   uint64
	depth uint8
	h     plumbing.Hash
	data  []byte
}

// A tree's key is the pair of names of its first and last entries. The versions of one folder
// keep at least one of them unless a write adds or removes at both ends at once, which a write
// of one memory does not; trees of other folders seldom share both. Through them a merge
// finds a tree's version before without knowing the tree's path.
type treeKeys [2]uint32 // numbers of the names

// treeBases holds, for each name that trees written begin or end with, the last few of
// them, latest first.
type treeBases struct {
	names map[string]uint32 // numbered from 1
	kin   [][]deltaBase     // by name
	keys  []treeKeys        // by key, numbered from 1
	keyOf map[treeKeys]uint32
	held  int // bytes of content in kin
}

// key returns the key of a tree's content: 0 for a tree without entries.
func (t *treeBases) key(data []byte) uint32 {
	var k treeKeys
	first, last, ok := treeEnds(data)
	if !ok {
		return 0
	}
	for i, name := range [][]byte{first, last} {
		n, ok := t.names[string(name)]
		if !ok {
			if t.names == nil {
				t.names = map[string]uint32{}
			}
			n = uint32(len(t.names) + 1)
			t.names[string(name)] = n
			t.kin = append(t.kin, nil)
		}
		k[i] = n
	}
	id, ok := t.keyOf[k]
	if !ok {
		if t.keyOf == nil {
			t.keyOf = map[treeKeys]uint32{}
		}
		t.keys = append(t.keys, k)
		id = uint32(len(t.keys))
		t.keyOf[k] = id
	}
	return id
}

// candidates returns the trees kept under either name of the key.
func (t *treeBases) candidates(key uint32) []deltaBase {
	if key == 0 {
		return nil
	}
	k := t.keys[key-1]
	c := slices.Clone(t.kin[k[0]-1])
	for _, b := range t.kin[k[1]-1] {
		if !slices.ContainsFunc(c, func(o deltaBase) bool { return o.off == b.off }) {
			c = append(c, b)
		}
	}
	return c
}

// remember puts b first under the names of its key, in place of the tree at offset follows
// (the version before it; 0 for none), or else of the oldest beyond maxKin. It keeps b's
// content while the trees kept hold less than maxDeltaBases; beyond, a base is read again
// from the packs.
func (t *treeBases) remember(key uint32, follows uint64, b deltaBase) {
	if key == 0 {
		return
	}
	if t.held+2*len(b.data) > maxDeltaBases {
		b.data = nil
	}
	k := t.keys[key-1]
	for _, n := range k {
		kin := t.kin[n-1]
		at := slices.IndexFunc(kin, func(o deltaBase) bool { return o.off == follows && follows != 0 })
		if at < 0 && len(kin) == maxKin {
			at = len(kin) - 1
		}
		if at >= 0 {
			t.held -= len(kin[at].data)
			kin = slices.Delete(kin, at, at+1)
		}
		t.held += len(b.data)
		t.kin[n-1] = slices.Insert(kin, 0, b)
		if k[1] == k[0] { // one entry: once
			break
		}
	}
}

// fill keeps data as the content of the tree at off under the names of key, read since it was
// remembered, within maxDeltaBases.
func (t *treeBases) fill(key uint32, off uint64, data []byte) {
	if key == 0 {
		return
	}
	for _, n := range t.keys[key-1] {
		for i := range t.kin[n-1] {
			if b := &t.kin[n-1][i]; b.off == off && b.data == nil && t.held+len(data) <= maxDeltaBases {
				b.data = data
				t.held += len(data)
			}
		}
	}
}

// treeEnds returns the names of a tree's first and last entries.
func treeEnds(data []byte) (first, last []byte, ok bool) {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || nul+21 > len(data) {
			return nil, nil, false
		}
		if first == nil {
			first = data[sp+1 : nul]
		}
		last = data[sp+1 : nul]
		data = data[nul+21:]
	}
	return first, last, first != nil
}

// treeDelta returns a delta that makes dst from src, in git's format. Two versions of a tree
// mostly differ in one stretch of entries, so a copy of the bytes they begin with, the
// stretch inserted, and a copy of the bytes they end with make the delta in one pass. Where
// the stretch is long (versions a few writes apart), go-git's indexed search may find more to
// copy, and the shorter delta is kept.
func treeDelta(src, dst []byte) []byte {
	p, s := commonEnds(src, dst)
	d := appendDeltaSize(nil, len(src))
	d = appendDeltaSize(d, len(dst))
	d = appendCopy(d, 0, p)
	d = appendInsert(d, dst[p:len(dst)-s])
	d = appendCopy(d, len(src)-s, s)
	if len(dst)-s-p > 256 {
		if other := packfile.DiffDelta(src, dst); len(other) < len(d) {
			return other
		}
	}
	return d
}

// commonEnds returns how many bytes a and b begin with alike, and then how many of the rest
// they end with alike; 64 at a time first, which bytes.Equal compares with vector
// instructions.
func commonEnds(a, b []byte) (prefix, suffix int) {
	n := min(len(a), len(b))
	p := 0
	for p+64 <= n && bytes.Equal(a[p:p+64], b[p:p+64]) {
		p += 64
	}
	for p < n && a[p] == b[p] {
		p++
	}
	s, n := 0, n-p
	for s+64 <= n && bytes.Equal(a[len(a)-s-64:len(a)-s], b[len(b)-s-64:len(b)-s]) {
		s += 64
	}
	for s < n && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p, s
}

func appendDeltaSize(d []byte, n int) []byte {
	for n >= 0x80 {
		d = append(d, byte(n)|0x80)
		n >>= 7
	}
	return append(d, byte(n))
}

// appendCopy appends instructions that copy n bytes of the base from off, 64 KB at most each.
func appendCopy(d []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, 0x10000)
		op := byte(0x80)
		var args []byte
		for i := 0; i < 4; i++ {
			if b := byte(off >> (8 * i)); b != 0 {
				op |= 1 << i
				args = append(args, b)
			}
		}
		if size != 0x10000 { // a size of 0 means 64 KB
			for i := 0; i < 2; i++ {
				if b := byte(size >> (8 * i)); b != 0 {
					op |= 0x10 << i
					args = append(args, b)
				}
			}
		}
		d = append(append(d, op), args...)
		off += size
		n -= size
	}
	return d
}

// appendInsert appends instructions that insert b, 127 bytes at most each.
func appendInsert(d []byte, b []byte) []byte {
	for len(b) > 0 {
		n := min(len(b), 0x7f)
		d = append(append(d, byte(n)), b[:n]...)
		b = b[n:]
	}
	return d
}

// appendOfsDistance appends how far before a delta its base begins, in git's encoding: seven
// bits a byte, high first, where each byte but the last adds one before the shift.
func appendOfsDistance(d []byte, rel uint64) []byte {
	var b [10]byte
	i := len(b) - 1
	b[i] = byte(rel & 0x7f)
	for rel >>= 7; rel != 0; rel >>= 7 {
		rel--
		i--
		b[i] = 0x80 | byte(rel&0x7f)
	}
	return append(d, b[i:]...)
}

// ofsDistance decodes what appendOfsDistance encodes, and returns how many bytes it took.
func ofsDistance(b []byte) (rel int64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	rel = int64(b[0] & 0x7f)
	for b[n]&0x80 != 0 {
		n++
		if n >= len(b) || rel > 1<<48 {
			return 0, 0, false
		}
		rel = (rel+1)<<7 | int64(b[n]&0x7f)
	}
	return rel, n + 1, true
}

// appendObjectHeader appends an object's type and size as a pack begins it: three bits of type
// and four of size, then seven bits of size a byte.
func appendObjectHeader(d []byte, typ byte, size int) []byte {
	b := typ<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		d = append(d, b|0x80)
		b = byte(size & 0x7f)
		size >>= 7
	}
	return append(d, b)
}
