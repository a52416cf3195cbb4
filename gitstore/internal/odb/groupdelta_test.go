package odb

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestGroupPackDeltas: a pack of several commits holds its folders' versions as deltas of
// each other, in chains of groupChain at most; git reads the pack, the repository reads every
// object back alike, and the journal's decoding of the pack gives back the same objects.
func TestGroupPackDeltas(t *testing.T) {
	r := openTestRepo(t)
	commits := treeHistory(t, 80)
	var objs []plumbing.EncodedObject
	seen := map[plumbing.Hash]bool{}
	for _, c := range commits {
		for _, o := range c {
			if !seen[o.Hash()] {
				seen[o.Hash()] = true
				objs = append(objs, o)
			}
		}
	}
	p, err := encodePack(objs)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := packObjects(p.data)
	if err != nil {
		t.Fatal(err)
	}
	if len(decoded) != len(objs) {
		t.Fatalf("the journal's decoding gave %d objects, want %d", len(decoded), len(objs))
	}
	for i, o := range decoded {
		if o.Hash() != objs[i].Hash() {
			t.Fatalf("object %d decoded as %s, want %s", i, o.Hash(), objs[i].Hash())
		}
	}

	if err := r.WritePack(objs); err != nil {
		t.Fatal(err)
	}
	_, deltas, deepest := checkOnePack(t, r, head(commits[len(commits)-1]))
	folders := 0
	for _, o := range objs {
		if o.Type() == plumbing.TreeObject && o.Size() >= minDeltaTree {
			folders++
		}
	}
	t.Logf("%d deltas among %d versions of folders, the deepest %d down", deltas, folders, deepest)
	if deltas < folders*3/4 || deepest > groupChain {
		t.Errorf("%d deltas among %d versions of folders, the deepest %d down; want most of them deltas, none deeper than %d", deltas, folders, deepest, groupChain)
	}
	readsBack(t, r.path, objs)

	one, err := encodePack(commits[len(commits)-1])
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for _, o := range commits[len(commits)-1] {
		p, _ := encodePack([]plumbing.EncodedObject{o})
		whole += len(p.data) - 32
	}
	if len(one.data)-32 != whole {
		t.Errorf("a pack of one commit takes %d bytes, its objects whole %d: want no deltas", len(one.data)-32, whole)
	}
}
