package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"hash/adler32"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestAdlerReplaced: the Adler-32 updated for bytes replaced in place is the one computed
// over the whole, for lengths past the sums' modulus and replacements anywhere.
func TestAdlerReplaced(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{20, 21, 4096, 65521, 65542, 200000} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		sum := adler32.Checksum(data)
		for try := 0; try < 200; try++ {
			off := r.IntN(n - 19)
			if try == 0 {
				off = 0
			} else if try == 1 {
				off = n - 20
			}
			were := append([]byte(nil), data[off:off+20]...)
			is := make([]byte, 20)
			for i := range is {
				is[i] = byte(r.Uint32())
				if try == 2 {
					is[i] = 0xff // the largest changes, all one way
					were[i], data[off+i] = 0, 0
				}
			}
			if try == 2 {
				sum = adler32.Checksum(data)
			}
			copy(data[off:], is)
			got, want := adlerReplaced(sum, n, off, were, is), adler32.Checksum(data)
			if got != want {
				t.Fatalf("%d bytes, 20 replaced at %d: %08x, want %08x", n, off, got, want)
			}
			sum = got
		}
	}
}

// TestWideTreeBuiltFromBefore: a wide tree built from its version before (buildWide), one
// entry's hash replaced, holds the bytes, hash and Adler-32 of the tree encoded whole, for
// entries anywhere (the first, the last, across the SHA-1 states kept) and sizes whose
// header's length differs; sums of a tree of another size are not resumed from.
func TestWideTreeBuiltFromBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	hash := func() (h plumbing.Hash) {
		for i := range h {
			h[i] = byte(r.Uint32())
		}
		return h
	}
	for _, n := range []int{wideTree, 999, 1000, 3001} {
		entries := make([]object.TreeEntry, n)
		for i := range entries {
			entries[i] = object.TreeEntry{Name: fmt.Sprintf("p%05d", i), Mode: filemode.Dir, Hash: hash()}
			if i%7 == 0 {
				entries[i].Name += ".md"
				entries[i].Mode = filemode.Regular
			}
		}
		slices.SortFunc(entries, func(a, b object.TreeEntry) int {
			if gitLess(a, b) {
				return -1
			}
			return 1
		})
		o, sums, err := buildWide(entries, nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		for try := 0; try < 300; try++ {
			changed := r.IntN(n)
			switch try {
			case 0:
				changed = 0
			case 1:
				changed = n - 1
			}
			entries = slices.Clone(entries)
			entries[changed].Hash = hash()
			prev := sums
			if o, sums, err = buildWide(entries, prev, changed); err != nil {
				t.Fatal(err)
			}
			whole, err := encodeTree(entries)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(o.content, whole.content) || o.h != whole.h {
				t.Fatalf("%d entries, #%d changed: built %s from before, %s whole", n, changed, o.h, whole.h)
			}
			if o.adler != adler32.Checksum(whole.content) || !o.adlerKnown {
				t.Fatalf("%d entries, #%d changed: Adler-32 %08x, want %08x", n, changed, o.adler, adler32.Checksum(whole.content))
			}
			if !bytes.Equal(sums.states, mustSums(t, entries).states) {
				t.Fatalf("%d entries, #%d changed: the states kept differ from those of the whole", n, changed)
			}
			if bytes.Equal(prev.content, o.content) {
				t.Fatalf("the version before changed with the new one")
			}
		}
		// A tree of another size: its header differs, and nothing is resumed.
		other := &treeSums{content: append(bytes.Clone(sums.content), 0), states: sums.states}
		if h, _ := sumTree(sums.content, other, len(sums.content)-1); h != o.h {
			t.Fatalf("%d entries: resumed from the sums of a tree of another size", n)
		}
	}
}

// mustSums returns the sums of the tree of entries, built whole.
func mustSums(t *testing.T, entries []object.TreeEntry) *treeSums {
	t.Helper()
	_, sums, err := buildWide(entries, nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestWideFolderRebuilt: writes to wide folders, whose new versions the writer builds from
// their versions before (buildWide: the bytes, the SHA-1 resumed, the Adler-32 updated), leave
// on main exactly the files written, as git reads them, and packs that git fsck finds whole
// (each tree's name and the Adler-32 of its entry are checked as git inflates it, and by the
// merges). Folders of memories and of folders, written one at a time and
// by concurrent writers, so that groups hold several versions of a folder.
func TestWideFolderRebuilt(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	want := map[string]string{}
	var mu sync.Mutex
	write := func(path, content string) {
		if _, err := s.Write(ctx, WriteInput{Path: path, Content: content, Actor: apiActor}); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		want[path] = content
		mu.Unlock()
	}
	flat := func(i int) string { return fmt.Sprintf("/flat/m%04d.md", i) }
	nested := func(i int) string { return fmt.Sprintf("/wide/p%04d/notes.md", i) }
	n := wideTree + 44
	fill(t, s, n, flat)
	fill(t, s, n, nested)
	for i := 0; i < n; i++ {
		want[flat(i)], want[nested(i)] = benchContent(i), benchContent(i)
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < 60; i++ { // one at a time: a group of one commit each
			k := (i*7919 + round) % n
			write(flat(k), fmt.Sprintf("flat %d, round %d", k, round))
			write(nested(k), fmt.Sprintf("nested %d, round %d", k, round))
		}
		var wg sync.WaitGroup
		for w := 0; w < 16; w++ { // together: groups of several
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 16 {
					if i%3 == round {
						write(flat(i), fmt.Sprintf("flat %d, together %d", i, round))
						write(nested(i), fmt.Sprintf("nested %d, together %d", i, round))
					}
				}
			}()
		}
		wg.Wait()
	}
	if t.Failed() {
		return
	}
	fsck(t, s)
	// What git finds on main, path by path, against what was written.
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(gitIn(t, s.RepoPath(), "ls-tree", "-r", "main")), "\n") {
		meta, path, _ := strings.Cut(line, "\t")
		if !strings.HasPrefix(path, ".gitmem/") {
			files["/"+path] = strings.Fields(meta)[2]
		}
	}
	if len(files) != len(want) {
		t.Fatalf("main holds %d files, want %d", len(files), len(want))
	}
	for path, content := range want {
		if got := strings.TrimSpace(gitIn(t, s.RepoPath(), "cat-file", "blob", files[path])); got != strings.TrimSpace(content) {
			t.Fatalf("%s on main holds %q, want %q", path, got, content)
		}
	}
}
