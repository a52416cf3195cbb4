package odb

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
)

// packIndex is what a pack index (.idx, version 2) is made of: each object's hash, offset
// in the pack and CRC-32, and the pack's checksum. It is written here rather than with
// go-git's idxfile.Writer, which keeps every entry as a pointer in a map and builds a
// second copy to encode: at the peak of a merge of a 100,000-memory store it held 49 MB,
// where these entries take 32 bytes an object.
type packIndex struct {
	entries []indexEntry
	packSum plumbing.Hash
}

type indexEntry struct {
	hash   plumbing.Hash
	crc    uint32
	offset uint64
}

func (x *packIndex) add(h plumbing.Hash, offset uint64, crc uint32) {
	x.entries = append(x.entries, indexEntry{hash: h, crc: crc, offset: offset})
}

// encode sorts the entries by hash and returns the index in git's version 2 format.
func (x *packIndex) encode() []byte {
	slices.SortFunc(x.entries, func(a, b indexEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	return x.encoded()
}

// encoded returns the index of the entries in their order, which must be by hash (encodeIdx),
// built in memory.
func (x *packIndex) encoded() []byte {
	var fanout [256]uint32
	for i := range x.entries {
		fanout[x.entries[i].hash[0]]++
	}
	var buf bytes.Buffer
	buf.Grow(idxHeader + 28*len(x.entries) + 40)
	if err := encodeIdx(&buf, len(x.entries), &fanout, x.each, x.packSum); err != nil {
		panic(err) // a bytes.Buffer takes every write, and fanout counts the entries
	}
	return buf.Bytes()
}

func (x *packIndex) each(yield func(h plumbing.Hash, crc uint32, off uint64)) {
	for i := range x.entries {
		e := &x.entries[i]
		yield(e.hash, e.crc, e.offset)
	}
}

// encodeIdx writes a pack index in git's version 2 format to w: magic and version, the
// fan-out table (fanout counts the objects by the first byte of their hash), the sorted
// hashes, their CRCs, their offsets (31 bits, or an index into a table of 64-bit ones), the
// pack's checksum and the index's own. each yields the n objects in the order of their
// hashes, once. The hashes are written as they come, and only the CRCs and offsets (8 bytes
// an object) wait for the end of them: a merge of 100,000 memories writes an index of 15 MB
// without holding it.
func encodeIdx(w io.Writer, n int, fanout *[256]uint32, each func(yield func(h plumbing.Hash, crc uint32, off uint64)), packSum plumbing.Hash) error {
	e := &idxEncoding{
		out:  idxOut{w: w, sum: sha1.New(), buf: make([]byte, 0, min(idxHeader+28*n+40, 256<<10))},
		crcs: make([]uint32, 0, n), offs: make([]uint32, 0, n),
	}
	o := &e.out
	o.put(idxMagic)
	o.put32(2)
	var total uint32
	for _, c := range fanout {
		total += c
		o.put32(total)
	}
	if int(total) != n {
		return fmt.Errorf("the fan-out table counts %d objects of %d", total, n)
	}
	each(e.name)
	if e.unordered || e.counted != *fanout {
		return errors.New("the objects are not in order, or not those the fan-out table counts")
	}
	for _, v := range e.crcs {
		o.put32(v)
	}
	for _, v := range e.offs {
		o.put32(v)
	}
	for _, off := range e.large {
		o.put64(off)
	}
	o.put(packSum[:])
	if o.flush(); o.err != nil {
		return o.err
	}
	_, err := w.Write(o.sum.Sum(o.buf[:0]))
	return err
}

// idxEncoding is encodeIdx's state while the names come. The writer encodes an index for
// every group: through bufio, io.MultiWriter and closures, an index of a group's few objects
// took 2.6 µs and 27 allocations, against 1.3 µs and 6 when it was built in one slice.
type idxEncoding struct {
	out        idxOut
	crcs, offs []uint32
	large      []uint64
	// What is yielded must be what the fan-out table says, in order (a name may come
	// twice, as recovery once wrote): an index that does not would be published broken.
	counted   [256]uint32
	prev      plumbing.Hash
	unordered bool
}

// name writes the next object's name and keeps its CRC and offset for later.
func (e *idxEncoding) name(h plumbing.Hash, crc uint32, off uint64) {
	e.unordered = e.unordered || len(e.crcs) > 0 && bytes.Compare(e.prev[:], h[:]) > 0
	e.prev = h
	e.counted[h[0]]++
	e.out.put(h[:])
	e.crcs = append(e.crcs, crc)
	v := uint32(off)
	if off > 0x7fffffff {
		v = 0x80000000 | uint32(len(e.large))
		e.large = append(e.large, off)
	}
	e.offs = append(e.offs, v)
}

// idxOut is a buffer of encodeIdx's own, written to w and hashed when full.
type idxOut struct {
	w   io.Writer
	sum hash.Hash
	buf []byte
	err error // the first write's error; nothing is written after it
}

func (o *idxOut) flush() {
	if o.err == nil && len(o.buf) > 0 {
		o.sum.Write(o.buf)
		_, o.err = o.w.Write(o.buf)
	}
	o.buf = o.buf[:0]
}

// room flushes the buffer unless n more bytes fit (n is at most 20, the buffer at least 1 KB).
func (o *idxOut) room(n int) {
	if len(o.buf)+n > cap(o.buf) {
		o.flush()
	}
}

func (o *idxOut) put(b []byte) { o.room(len(b)); o.buf = append(o.buf, b...) }

func (o *idxOut) put32(v uint32) { o.room(4); o.buf = binary.BigEndian.AppendUint32(o.buf, v) }

func (o *idxOut) put64(v uint64) { o.room(8); o.buf = binary.BigEndian.AppendUint64(o.buf, v) }
