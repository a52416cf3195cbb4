package odb

import (
	"crypto/sha1"
	"fmt"
	"io"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestTooDeepBaseUnread: a merge does not read a candidate base that is maxDeltaChain deltas
// deep, which it could not use: here that base is in no pack, so a read of it fails the
// merge. The tree is written whole, and takes the deep base's place among the bases.
func TestTooDeepBaseUnread(t *testing.T) {
	r := openTestRepo(t)
	var tree object.Tree
	for i := range 40 {
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: fmt.Sprintf("n%03d.md", i), Mode: 0o100644, Hash: plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(i)})})
	}
	o := &plumbing.MemoryObject{}
	if err := tree.Encode(o); err != nil {
		t.Fatal(err)
	}
	if err := r.WritePack([]plumbing.EncodedObject{o}); err != nil {
		t.Fatal(err)
	}
	data, _ := ReadEncoded(o)
	x := r.objs.Load().packs[0].idx
	src := &mergeSource{x: x, offs: make([]uint64, x.n), dup: make([]bool, x.n), depth: make([]uint8, x.n)}
	m := &merge{r: r, ww: newWholeWriter(), cache: cache.NewObjectLRU(mergeCacheSize), srcs: []*mergeSource{src}}
	m.delta.zw = m.ww.zw
	m.cw = &countingWriter{w: io.Discard, h: sha1.New()}
	m.cw.Write(packHeader(1))

	first, last, _ := treeEnds(data)
	names := endNames{string(first), string(last)}
	nowhere := plumbing.ComputeHash(plumbing.TreeObject, []byte("in no pack"))
	const deepAt = 5 // before the tree, at 12
	m.bases.remember(names, 0, deltaBase{off: deepAt, depth: maxDeltaChain, h: nowhere})
	if err := m.writeTree(src, 0, data, nil); err != nil {
		t.Fatalf("the merge read a base too deep to use: %v", err)
	}
	if kin := m.bases.candidates(first, last); len(kin) != 1 || kin[0].off != 12 || kin[0].h != o.Hash() {
		t.Fatalf("the tree did not take the deep base's place: bases %+v", kin)
	}
	if src.depth[0] != 0 {
		t.Fatalf("written %d deltas deep; want whole", src.depth[0])
	}
}
