package gitstore

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// editTrees holds the objects that setEntry emits and the edits it logs.
type editTrees struct {
	objs  map[plumbing.Hash]plumbing.EncodedObject
	edits map[plumbing.Hash]treeEdit
	used  int // diffs that an edit served
}

func (t *editTrees) object(h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := t.objs[h]; ok {
		return o, nil
	}
	return nil, plumbing.ErrObjectNotFound
}

func (t *editTrees) emit(o plumbing.EncodedObject) { t.objs[o.Hash()] = o }

func (t *editTrees) keepEdit(h plumbing.Hash, e treeEdit) { t.edits[h] = e }

func (t *editTrees) editOf(h plumbing.Hash) (treeEdit, bool) {
	e, ok := t.edits[h]
	if ok {
		t.used++
	}
	return e, ok
}

// objectsOnly reads the same objects without the edits: diffTrees walks every tree.
type objectsOnly struct{ r objectReader }

func (o objectsOnly) object(h plumbing.Hash) (plumbing.EncodedObject, error) { return o.r.object(h) }

// TestDiffTreesByEdits: a diff that follows setEntry's edits lists the same changes as one
// that walks both trees, over random writes, removals, new folders, and files that become
// folders and back.
func TestDiffTreesByEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	trees := &editTrees{objs: map[plumbing.Hash]plumbing.EncodedObject{}, edits: map[plumbing.Hash]treeEdit{}}
	names := []string{"a", "b", "b.md", "c", "a-b", "a.md"}
	var root plumbing.Hash
	changed := 0
	for i := range 3000 {
		segs := make([]string, 1+rng.IntN(3))
		for k := range segs {
			segs[k] = names[rng.IntN(len(names))]
		}
		var blob plumbing.Hash
		if rng.IntN(4) > 0 { // else a removal
			o := blobObject([]byte(fmt.Sprint(i)))
			trees.emit(o)
			blob = o.Hash()
		}
		next, err := setEntry(trees, root, segs, blob, trees.emit)
		if err != nil {
			t.Fatal(err)
		}
		got, err := diffTrees(trees, root, next, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := diffTrees(objectsOnly{trees}, root, next, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("write %d of %v: by edits %+v, walked %+v", i, segs, got, want)
		}
		if len(want) > 0 {
			changed++
		}
		root = next
	}
	if trees.used < changed/2 {
		t.Fatalf("edits served %d of %d diffs with changes", trees.used, changed)
	}
}
