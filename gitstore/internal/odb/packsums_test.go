package odb

import (
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/internal/sha1resume"
)

// TestPackSumsResumed: the writer's packs, whose checksums resume from the pack before's,
// end with the SHA-1 of their bytes and begin with their widest tree, whatever came before
// them: a pack whose wide tree differs in one entry anywhere (the first, the last), one of
// another size, packs without a wide tree, of several commits and of a megabyte between; git
// verifies them. What is kept for the next pack is the bytes of its first tree and the
// states within them alone, however large the pack.
func TestPackSumsResumed(t *testing.T) {
	r := openTestRepo(t)
	rng := rand.New(rand.NewPCG(5, 6))
	obj := func(typ plumbing.ObjectType, content []byte) plumbing.EncodedObject {
		o := &plumbing.MemoryObject{}
		o.SetType(typ)
		o.Write(content)
		return o
	}
	hash := func() (h plumbing.Hash) {
		for i := range h {
			h[i] = byte(rng.Uint32())
		}
		return h
	}
	tree := &object.Tree{}
	for i := range 1000 {
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: fmt.Sprintf("p%04d", i), Mode: filemode.Dir, Hash: hash()})
	}
	encode := func() plumbing.EncodedObject {
		o := &plumbing.MemoryObject{}
		if err := tree.Encode(o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	var sums packSums
	for i := range 60 {
		changed := rng.IntN(len(tree.Entries))
		switch i {
		case 1:
			changed = 0
		case 2:
			changed = len(tree.Entries) - 1
		}
		tree.Entries[changed].Hash = hash()
		if i == 30 { // another size
			tree.Entries = append(tree.Entries, object.TreeEntry{Name: "q", Mode: filemode.Dir, Hash: hash()})
		}
		wide := encode()
		blob := obj(plumbing.BlobObject, fmt.Appendf(nil, "memory %d", i))
		small := obj(plumbing.TreeObject, func() []byte { h := blob.Hash(); return append([]byte("100644 m.md\x00"), h[:]...) }())
		objs := []plumbing.EncodedObject{blob, small, wide}
		switch i % 10 {
		case 4: // no wide tree
			objs = objs[:2]
		case 5: // a large pack: a megabyte that does not compress
			big := make([]byte, 1<<20)
			for j := range big {
				big[j] = byte(rng.Uint32())
			}
			objs = append(objs, obj(plumbing.BlobObject, big))
		case 7: // two commits: deltas, no resuming
			objs = append(objs, obj(plumbing.CommitObject, []byte("tree "+small.Hash().String()+"\n\none\n")),
				obj(plumbing.CommitObject, []byte("tree "+wide.Hash().String()+"\n\ntwo\n")))
		}
		p, err := encodeAfter(objs, &sums)
		if err != nil {
			t.Fatal(err)
		}
		body := p.data[:len(p.data)-20]
		if want := plumbing.Hash(sha1.Sum(body)); p.idx.packSum != want || plumbing.Hash(p.data[len(body):]) != want {
			t.Fatalf("pack %d: its checksum is %s, its trailer %x; its bytes' SHA-1 %s", i, p.idx.packSum, p.data[len(body):], want)
		}
		// What is kept for the next pack is its first tree and the states within it, however
		// large the pack.
		if want := len(sums.prefix) / sha1resume.Stride * sha1resume.StateSize; len(sums.states) != want {
			t.Fatalf("pack %d of %d bytes: %d bytes of states kept for a prefix of %d, want %d", i, len(p.data), len(sums.states), len(sums.prefix), want)
		}
		if most := 4 * int(wide.Size()) / sha1resume.Stride * sha1resume.StateSize; cap(sums.states) > most {
			t.Fatalf("pack %d of %d bytes: room for %d bytes of states kept, more than %d", i, len(p.data), cap(sums.states), most)
		}
		decoded, err := packObjects(p.data)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) <= 3 && decoded[0].Hash() != objs[len(objs)-1].Hash() && i%10 != 4 {
			t.Fatalf("pack %d begins with %s, not its wide tree", i, decoded[0].Hash())
		}
		if i%10 == 9 || i < 3 {
			path := filepath.Join(t.TempDir(), "pack-"+p.idx.packSum.String())
			if err := os.WriteFile(path+".pack", p.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+".idx", p.idx.encode(), 0o644); err != nil {
				t.Fatal(err)
			}
			gitIn(t, r, nil, "verify-pack", path+".idx")
		}
	}
}
