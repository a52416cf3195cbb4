package odb

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
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

// encode returns the index in git's version 2 format (buildIdx).
func (x *packIndex) encode() []byte {
	slices.SortFunc(x.entries, func(a, b indexEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	return buildIdx(len(x.entries), func(yield func(plumbing.Hash, uint32, uint64)) {
		for _, e := range x.entries {
			yield(e.hash, e.crc, e.offset)
		}
	}, x.packSum)
}

// buildIdx returns a pack index in git's version 2 format (encodeIdx), built in memory.
func buildIdx(n int, each func(yield func(h plumbing.Hash, crc uint32, off uint64)), packSum plumbing.Hash) []byte {
	var fanout [256]uint32
	each(func(h plumbing.Hash, _ uint32, _ uint64) { fanout[h[0]]++ })
	var buf bytes.Buffer
	buf.Grow(idxHeader + 28*n + 40)
	if err := encodeIdx(&buf, n, &fanout, each, packSum); err != nil {
		panic(err) // a bytes.Buffer takes every write; each yielded other than n objects
	}
	return buf.Bytes()
}

// encodeIdx writes a pack index in git's version 2 format to w: magic and version, the
// fan-out table (fanout counts the objects by the first byte of their hash), the sorted
// hashes, their CRCs, their offsets (31 bits, or an index into a table of 64-bit ones), the
// pack's checksum and the index's own. each yields the n objects in the order of their
// hashes, once. The hashes are written as they come, and only the CRCs and offsets (8 bytes
// an object) wait for the end of them: a merge of 100,000 memories writes an index of 15 MB
// without holding it.
func encodeIdx(w io.Writer, n int, fanout *[256]uint32, each func(yield func(h plumbing.Hash, crc uint32, off uint64)), packSum plumbing.Hash) error {
	sum := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), min(idxHeader+28*n+40, 256<<10))
	var word [8]byte
	put32 := func(v uint32) {
		binary.BigEndian.PutUint32(word[:], v)
		bw.Write(word[:4])
	}
	bw.Write(idxMagic)
	put32(2)
	var total uint32
	for _, c := range fanout {
		total += c
		put32(total)
	}
	if int(total) != n {
		return fmt.Errorf("the fan-out table counts %d objects of %d", total, n)
	}
	crcs, offs := make([]uint32, 0, n), make([]uint32, 0, n)
	var large []uint64
	// What is yielded must be what the fan-out table says, in order (a name may come twice,
	// as recovery once wrote): an index that does not would be published broken.
	var counted [256]uint32
	var prev plumbing.Hash
	unordered := false
	each(func(h plumbing.Hash, crc uint32, off uint64) {
		unordered = unordered || len(crcs) > 0 && bytes.Compare(prev[:], h[:]) > 0
		prev = h
		counted[h[0]]++
		bw.Write(h[:])
		crcs = append(crcs, crc)
		v := uint32(off)
		if off > 0x7fffffff {
			v = 0x80000000 | uint32(len(large))
			large = append(large, off)
		}
		offs = append(offs, v)
	})
	if unordered || counted != *fanout {
		return errors.New("the objects are not in order, or not those the fan-out table counts")
	}
	for _, v := range crcs {
		put32(v)
	}
	for _, v := range offs {
		put32(v)
	}
	for _, off := range large {
		binary.BigEndian.PutUint64(word[:], off)
		bw.Write(word[:])
	}
	bw.Write(packSum[:])
	if err := bw.Flush(); err != nil { // bufio keeps a write's error for the rest
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}
