package odb

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// TestPackIndexAsGoGit: the index is byte for byte the one go-git's writer and encoder
// make, with offsets past 2 GiB in the table of large ones.
func TestPackIndexAsGoGit(t *testing.T) {
	for _, n := range []int{0, 1, 5000, 10000} { // 10,000: past encodeIdx's buffer
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		var ours packIndex
		var theirs idxfile.Writer
		for i := range n {
			var h plumbing.Hash
			for j := range h {
				h[j] = byte(rng.IntN(256))
			}
			off := uint64(12 + i*100)
			if i%1000 == 999 {
				off += 3 << 30 // a large offset
			}
			crc := rng.Uint32()
			ours.add(h, off, crc)
			theirs.Add(h, off, crc)
		}
		sum := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
		ours.packSum = sum
		if err := theirs.OnFooter(sum); err != nil {
			t.Fatal(err)
		}
		idx, err := theirs.Index()
		if err != nil {
			t.Fatal(err)
		}
		var want, got bytes.Buffer
		if _, err := idxfile.NewEncoder(&want).Encode(idx); err != nil {
			t.Fatal(err)
		}
		if _, err := got.Write(ours.encode()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%d objects: %d bytes, go-git %d; first difference at %d", n, got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestEncodeIdxRefusesMismatch: objects out of order, or other than the fan-out table counts,
// are an error rather than an index that git would find broken.
func TestEncodeIdxRefusesMismatch(t *testing.T) {
	a, b := plumbing.Hash{0x01}, plumbing.Hash{0x02}
	yields := func(hs ...plumbing.Hash) func(func(plumbing.Hash, uint32, uint64)) {
		return func(yield func(plumbing.Hash, uint32, uint64)) {
			for i, h := range hs {
				yield(h, 0, uint64(12+i))
			}
		}
	}
	var fanout [256]uint32
	fanout[0x01], fanout[0x02] = 1, 1
	if err := encodeIdx(io.Discard, 2, &fanout, yields(a, b), plumbing.ZeroHash); err != nil {
		t.Fatalf("in order: %v", err)
	}
	if err := encodeIdx(io.Discard, 2, &fanout, yields(b, a), plumbing.ZeroHash); err == nil {
		t.Fatal("out of order: no error")
	}
	if err := encodeIdx(io.Discard, 2, &fanout, yields(a, a), plumbing.ZeroHash); err == nil {
		t.Fatal("other than the fan-out table counts: no error")
	}
	if err := encodeIdx(io.Discard, 2, &fanout, yields(a), plumbing.ZeroHash); err == nil {
		t.Fatal("fewer than the fan-out table counts: no error")
	}
	if err := encodeIdx(io.Discard, 3, &fanout, yields(a, b), plumbing.ZeroHash); err == nil {
		t.Fatal("a fan-out table that counts other than n: no error")
	}
}
