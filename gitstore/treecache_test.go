package gitstore

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestTreeCacheKeepsCurrent: at a group's end the trees it replaced leave the cache, but not
// one that a later commit of the group built again (A, then B, then A) nor one rebuilt as it
// was.
func TestTreeCacheKeepsCurrent(t *testing.T) {
	s := &Store{trees: map[plumbing.Hash][]object.TreeEntry{}}
	b := &batch{s: s}
	a, bb := plumbing.NewHash("aa"), plumbing.NewHash("bb")
	entries := []object.TreeEntry{{Name: "x"}}
	b.keepTree(a, entries)
	b.keepTree(bb, entries) // B replaces A
	b.replacedTree(a)
	b.keepTree(a, entries) // A replaces B
	b.replacedTree(bb)
	b.forgetReplaced()
	if _, ok := s.trees[a]; !ok {
		t.Error("the current tree A left the cache")
	}
	if _, ok := s.trees[bb]; ok {
		t.Error("the replaced tree B stayed in the cache")
	}
	if s.treeEntries != len(entries) {
		t.Errorf("the cache counts %d entries, holds %d", s.treeEntries, len(entries))
	}
}
