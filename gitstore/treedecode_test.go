package gitstore

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// decodeTree reads what encodeTree writes, and what go-git's decoder reads, the same.
func TestDecodeTree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	modes := []filemode.FileMode{filemode.Regular, filemode.Dir, filemode.Executable, filemode.Symlink, filemode.Submodule, 0o100664}
	for n := range 50 {
		var entries []object.TreeEntry
		for i := range n * 3 {
			e := object.TreeEntry{Name: fmt.Sprintf("%s-%d.md", strings.Repeat("x", rng.IntN(40)+1), i), Mode: modes[rng.IntN(len(modes))]}
			for j := range e.Hash {
				e.Hash[j] = byte(rng.IntN(256)) // zero bytes and spaces too
			}
			entries = append(entries, e)
		}
		slices.SortFunc(entries, func(a, b object.TreeEntry) int {
			if gitLess(a, b) {
				return -1
			}
			return 1
		})
		o, raw := encodedTree(t, entries)
		got, err := decodeTree(raw)
		if err != nil {
			t.Fatalf("%d entries: %v", len(entries), err)
		}
		var theirs object.Tree
		if err := theirs.Decode(o); err != nil {
			t.Fatal(err)
		}
		if len(entries) == 0 {
			entries = []object.TreeEntry{}
		}
		for i := range entries {
			entries[i].Mode = canonicalMode(entries[i].Mode)
		}
		if !reflect.DeepEqual(got, entries) || !reflect.DeepEqual(got, append([]object.TreeEntry{}, theirs.Entries...)) {
			t.Fatalf("%d entries: decoded\n%v\nwant\n%v\ngo-git\n%v", len(entries), got, entries, theirs.Entries)
		}
	}
	hash := strings.Repeat("h", len(plumbing.ZeroHash))
	for _, bad := range []string{
		"100644 a.md",                     // no end of name
		"100644 a.md\x00" + hash[:19],     // a hash cut short
		"10a644 a.md\x00" + hash,          // a mode that is not octal
		"100648 a.md\x00" + hash,          // nor this
		" a.md\x00" + hash,                // no mode
		"123456701234 a.md\x00" + hash,    // a mode past 32 bits
		"100644 \x00" + hash,              // no name
		"100644 a.md\x00" + hash + "4000", // a second entry cut short
	} {
		if _, err := decodeTree([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// decodeTree accepts and refuses what go-git's decoder does, trees damaged at random too
// (objects pushed with git are not checked): bytes changed, cut off, or added.
func TestDecodeTreeDamaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	modes := []filemode.FileMode{filemode.Regular, filemode.Dir, filemode.Executable, filemode.Symlink}
	for n := range 3000 {
		var entries []object.TreeEntry
		for i := range 1 + n%5 {
			e := object.TreeEntry{Name: fmt.Sprintf("n%d.md", i), Mode: modes[rng.IntN(len(modes))]}
			for j := range e.Hash {
				e.Hash[j] = byte(rng.IntN(256))
			}
			entries = append(entries, e)
		}
		_, raw := encodedTree(t, entries)
		for range 1 + rng.IntN(3) {
			switch i := rng.IntN(len(raw)); rng.IntN(3) {
			case 0:
				raw[i] = []byte{' ', 0, '0', '7', '8', 'a', '/', 0xff}[rng.IntN(8)]
			case 1:
				raw = raw[:i]
			default:
				raw = append(raw[:i:i], append([]byte{[]byte{' ', 0, '4'}[rng.IntN(3)]}, raw[i:]...)...)
			}
			if len(raw) == 0 {
				break
			}
		}
		got, err := decodeTree(raw)
		mo := &plumbing.MemoryObject{}
		mo.SetType(plumbing.TreeObject)
		mo.Write(raw)
		var theirs object.Tree
		theirErr := theirs.Decode(mo)
		if (err == nil) != (theirErr == nil) {
			t.Fatalf("%q: decodeTree %v, go-git %v", raw, err, theirErr)
		}
		if err == nil && len(got)+len(theirs.Entries) > 0 && !reflect.DeepEqual(got, theirs.Entries) {
			t.Fatalf("%q: decoded\n%v\ngo-git\n%v", raw, got, theirs.Entries)
		}
	}
}

// encodedTree is the object of a tree of entries, and its content.
func encodedTree(t *testing.T, entries []object.TreeEntry) (plumbing.EncodedObject, []byte) {
	t.Helper()
	o, err := encodeTree(entries)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := readEncoded(o)
	if err != nil {
		t.Fatal(err)
	}
	return o, raw
}
