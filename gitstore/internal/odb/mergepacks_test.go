package odb

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestGeometricSplit(t *testing.T) {
	for _, tc := range []struct {
		counts []uint32
		want   int
	}{
		{[]uint32{5, 5, 5, 5, 100}, 4},
		{[]uint32{5, 20, 100}, 0},
		{[]uint32{5, 5}, 2},
		{[]uint32{1000}, 0},
	} {
		var packs []packFile
		for _, c := range tc.counts {
			packs = append(packs, packFile{count: c})
		}
		if got := geometricSplit(packs); got != tc.want {
			t.Errorf("geometricSplit(%v) = %d, want %d", tc.counts, got, tc.want)
		}
	}
}

// TestMergePacks merges packs that share objects into one that holds each once, which git
// verifies and every object reads from.
func TestMergePacks(t *testing.T) {
	r := openTestRepo(t)
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	c2 := commitObjects(t, head(c1), "two")
	for _, objs := range [][]plumbing.EncodedObject{c1, append(append([]plumbing.EncodedObject{}, c1...), c2...), c2[:1]} {
		if err := r.WritePack(objs); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.CASRef(plumbing.ZeroHash, head(c2)); err != nil {
		t.Fatal(err)
	}
	if err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	packs, err := r.packFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(packs) != 1 || packs[0].count != 6 {
		t.Fatalf("after the merge: %+v, want one pack of 6 objects", packs)
	}
	if len(r.objs.Load().packs) != 1 {
		t.Fatalf("the set holds %d packs, want 1", len(r.objs.Load().packs))
	}
	if err := r.Git(context.Background(), "fsck", "--strict"); err != nil {
		t.Fatal(err)
	}
	for _, o := range append(c1, c2...) {
		got, err := r.Blob(o.Hash())
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ReadEncoded(o)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s reads otherwise after the merge", o.Hash())
		}
	}
}
