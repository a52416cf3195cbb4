package odb

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
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

// encode returns the index in git's version 2 format (writeTo).
func (x *packIndex) encode() []byte {
	var buf bytes.Buffer
	buf.Grow(idxHeader + 28*len(x.entries) + 40)
	x.writeTo(&buf) // a bytes.Buffer does not fail
	return buf.Bytes()
}

// writeTo writes the index in git's version 2 format: magic and version, the fan-out table,
// the sorted hashes, their CRCs, their offsets (31 bits, or an index into a table of 64-bit
// ones), the pack's checksum and the index's own.
func (x *packIndex) writeTo(w io.Writer) error {
	slices.SortFunc(x.entries, func(a, b indexEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	h := sha1.New()
	mw := io.MultiWriter(w, h)
	var b [8]byte
	put32 := func(v uint32) error {
		binary.BigEndian.PutUint32(b[:4], v)
		_, err := mw.Write(b[:4])
		return err
	}
	if _, err := mw.Write([]byte{0xff, 't', 'O', 'c'}); err != nil {
		return err
	}
	if err := put32(2); err != nil {
		return err
	}
	var fanout [256]uint32
	for _, e := range x.entries {
		fanout[e.hash[0]]++
	}
	var total uint32
	for i := range fanout {
		total += fanout[i]
		if err := put32(total); err != nil {
			return err
		}
	}
	for _, e := range x.entries {
		if _, err := mw.Write(e.hash[:]); err != nil {
			return err
		}
	}
	for _, e := range x.entries {
		if err := put32(e.crc); err != nil {
			return err
		}
	}
	var large []uint64
	for _, e := range x.entries {
		v := uint32(e.offset)
		if e.offset > 0x7fffffff {
			v = 0x80000000 | uint32(len(large))
			large = append(large, e.offset)
		}
		if err := put32(v); err != nil {
			return err
		}
	}
	for _, off := range large {
		binary.BigEndian.PutUint64(b[:], off)
		if _, err := mw.Write(b[:]); err != nil {
			return err
		}
	}
	if _, err := mw.Write(x.packSum[:]); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}
