package odb

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
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

// buildIdx returns a pack index in git's version 2 format: magic and version, the fan-out
// table, the sorted hashes, their CRCs, their offsets (31 bits, or an index into a table of
// 64-bit ones), the pack's checksum and the index's own. each yields the n objects in the
// order of their hashes; the tables are filled in one pass, into one buffer the index's size.
func buildIdx(n int, each func(yield func(h plumbing.Hash, crc uint32, off uint64)), packSum plumbing.Hash) []byte {
	names, crcs, offs := idxHeader, idxHeader+20*n, idxHeader+24*n
	buf := make([]byte, idxHeader+28*n, idxHeader+28*n+40)
	copy(buf, idxMagic)
	binary.BigEndian.PutUint32(buf[4:], 2)
	var fanout [256]uint32
	var large []uint64
	i := 0
	each(func(h plumbing.Hash, crc uint32, off uint64) {
		fanout[h[0]]++
		copy(buf[names+20*i:], h[:])
		binary.BigEndian.PutUint32(buf[crcs+4*i:], crc)
		v := uint32(off)
		if off > 0x7fffffff {
			v = 0x80000000 | uint32(len(large))
			large = append(large, off)
		}
		binary.BigEndian.PutUint32(buf[offs+4*i:], v)
		i++
	})
	var total uint32
	for j, c := range fanout {
		total += c
		binary.BigEndian.PutUint32(buf[8+4*j:], total)
	}
	for _, off := range large {
		buf = binary.BigEndian.AppendUint64(buf, off)
	}
	buf = append(buf, packSum[:]...)
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...)
}
