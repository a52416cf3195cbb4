package odb

import (
	"bytes"
	"hash/crc32"
	"io"
	"slices"

	"github.com/klauspost/compress/zlib"

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

// maxKin bounds how many trees a merge holds as bases for each name that trees begin or end
// with: those of as many folders.
const maxKin = 4

// maxDeltaBases bounds the bytes of trees a merge keeps as bases for the next ones; past it, a
// base is read from the packs.
const maxDeltaBases = 8 << 20

// deltaBase is a tree a merge wrote: where, how many deltas deep, its hash, and its content
// while the merge keeps it.
type deltaBase struct {
	off   uint64
	depth uint8
	h     plumbing.Hash
	data  []byte
}

// treeBases holds the trees a merge may make the next ones deltas of: for each name that such
// a tree begins or ends with, the last few written, latest first. The versions of one folder
// keep at least one of the two names unless a write adds or removes at both ends at once,
// which a write of one memory does not; trees of other folders seldom share both. Through
// them a merge finds a tree's version before without knowing its path. A tree leaves when its
// next version comes, so what is held follows the number of folders, not of versions.
type treeBases struct {
	kin   map[string][]deltaBase // by entry name
	names map[uint64]endNames    // the names each tree held is kept under, by offset
	held  int                    // bytes of content held
}

// endNames are the names of a tree's first and last entries.
type endNames [2]string

// distinct returns the names once each: a tree of one entry begins and ends with it.
func (n endNames) distinct() []string {
	if n[0] == n[1] {
		return n[:1]
	}
	return n[:]
}

// has tells whether the tree written at off is held.
func (t *treeBases) has(off uint64) bool {
	_, ok := t.names[off]
	return ok
}

// candidates returns the trees held under either name.
func (t *treeBases) candidates(first, last []byte) []deltaBase {
	c := slices.Clone(t.kin[string(first)])
	for _, b := range t.kin[string(last)] {
		if !slices.ContainsFunc(c, func(o deltaBase) bool { return o.off == b.off }) {
			c = append(c, b)
		}
	}
	return c
}

// drop lets go of the tree at off, under all its names.
func (t *treeBases) drop(off uint64) {
	names, ok := t.names[off]
	if !ok {
		return
	}
	delete(t.names, off)
	content := 0 // counted once, though every name holds it
	for _, name := range names.distinct() {
		kin := t.kin[name]
		at := slices.IndexFunc(kin, func(o deltaBase) bool { return o.off == off })
		if at < 0 {
			continue
		}
		content = len(kin[at].data)
		if kin = slices.Delete(kin, at, at+1); len(kin) == 0 {
			delete(t.kin, name)
		} else {
			t.kin[name] = kin
		}
	}
	t.held -= content
}

// remember holds b, a tree whose first and last entries are names, in place of the tree at
// offset follows (the version before it; 0 for none), and in place of the oldest under a
// name that holds maxKin. It keeps b's content while the trees held have less than
// maxDeltaBases; beyond, a base is read again from the packs.
func (t *treeBases) remember(names endNames, follows uint64, b deltaBase) {
	if t.kin == nil {
		t.kin, t.names = map[string][]deltaBase{}, map[uint64]endNames{}
	}
	if follows != 0 {
		t.drop(follows)
	}
	for _, name := range names.distinct() {
		if kin := t.kin[name]; len(kin) == maxKin {
			t.drop(kin[len(kin)-1].off)
		}
	}
	if t.held+len(b.data) > maxDeltaBases {
		b.data = nil
	}
	t.held += len(b.data)
	t.names[b.off] = names
	for _, name := range names.distinct() {
		t.kin[name] = slices.Insert(t.kin[name], 0, b)
	}
}

// follow holds b, a delta copied as it was, in place of its base at baseOff, if that is a
// tree held.
func (t *treeBases) follow(baseOff uint64, b deltaBase) {
	if names, ok := t.names[baseOff]; ok {
		t.remember(names, baseOff, b)
	}
}

// fill keeps data as the content of the tree held at off, read since it was remembered,
// within maxDeltaBases.
func (t *treeBases) fill(off uint64, data []byte) {
	names, ok := t.names[off]
	if !ok || t.held+len(data) > maxDeltaBases {
		return
	}
	filled := false
	for _, name := range names.distinct() {
		for i := range t.kin[name] {
			if b := &t.kin[name][i]; b.off == off && b.data == nil {
				b.data, filled = data, true
			}
		}
	}
	if filled {
		t.held += len(data)
	}
}

// treeEnds returns the names of a tree's first and last entries. It steps over the entries
// byte by byte: a mode is at most 6 digits and a name is short, where bytes.IndexByte's setup
// cost more than the search (a merge runs this over every version of the 1,000-entry top
// folder of a store of 100,000 memories).
func treeEnds(data []byte) (first, last []byte, ok bool) {
	for len(data) > 0 {
		sp := 0
		for sp < len(data) && sp <= maxModeLen && data[sp] != ' ' {
			sp++
		}
		if sp > maxModeLen || sp >= len(data) || data[sp] != ' ' {
			return nil, nil, false
		}
		nul := sp + 1
		for nul < len(data) && data[nul] != 0 {
			nul++
		}
		if nul+21 > len(data) {
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

// maxModeLen is the longest mode a tree entry has, in octal digits ("100644").
const maxModeLen = 6

// treeDelta returns a delta that makes dst from src, in git's format. Two versions of a tree
// mostly differ in one stretch of entries, so a copy of the bytes they begin with, the
// stretch inserted, and a copy of the bytes they end with make the delta in one pass. Where
// the stretch is long (versions a few writes apart), go-git's indexed search may find more to
// copy, and the shorter delta is kept. p and s are what commonEnds(src, dst) returns.
func treeDelta(src, dst []byte, p, s int) []byte {
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

// deltaEntry makes a tree's pack entry as an OFS_DELTA of an earlier tree of the same pack.
// Merges and group packs (groupdelta.go) share it; its buffers are reused.
type deltaEntry struct {
	zw  *zlib.Writer
	z   bytes.Buffer
	hdr []byte
}

// make builds the entry of data as a delta of base, which begins rel bytes before it (p and
// s as commonEnds(base, data) returns them), and tells whether it is worth a read's extra
// step: compressed, under a quarter of data. The entry is then hdr and z (writeEntry).
func (e *deltaEntry) make(base, data []byte, p, s int, rel uint64) (bool, error) {
	d := treeDelta(base, data, p, s)
	e.z.Reset()
	e.zw.Reset(&e.z)
	e.zw.Write(d)
	if err := e.zw.Close(); err != nil {
		return false, err
	}
	if 4*e.z.Len() >= len(data) {
		return false, nil
	}
	e.hdr = appendObjectHeader(e.hdr[:0], byte(plumbing.OFSDeltaObject), len(d))
	e.hdr = appendOfsDistance(e.hdr, rel)
	return true, nil
}

// writeEntry writes a pack entry, its header and its compressed content, and returns the
// CRC-32 that the pack index keeps of it.
func writeEntry(w io.Writer, hdr, z []byte) (uint32, error) {
	if _, err := w.Write(hdr); err != nil {
		return 0, err
	}
	if _, err := w.Write(z); err != nil {
		return 0, err
	}
	return crc32.Update(crc32.ChecksumIEEE(hdr), crc32.IEEETable, z), nil
}

// commonEnds returns how many bytes a and b begin with alike, and then how many of the rest
// they end with alike; 64 at a time first, which bytes.Equal compares with vector
// instructions.
func commonEnds(a, b []byte) (prefix, suffix int) {
	p := commonPrefix(a, b)
	s, n := 0, min(len(a), len(b))-p
	for s+64 <= n && bytes.Equal(a[len(a)-s-64:len(a)-s], b[len(b)-s-64:len(b)-s]) {
		s += 64
	}
	for s < n && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p, s
}

// commonPrefix returns how many bytes a and b begin with alike.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	p := 0
	for p+64 <= n && bytes.Equal(a[p:p+64], b[p:p+64]) {
		p += 64
	}
	for p < n && a[p] == b[p] {
		p++
	}
	return p
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
