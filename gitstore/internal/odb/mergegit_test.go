package odb

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/klauspost/compress/zlib"
)

// gitIn runs git on r with stdin and returns what it printed.
func gitIn(t *testing.T, r *Repo, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd, stderr := r.gitCmd(context.Background(), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, stderr)
	}
	return out
}

// TestMergeDeltaToEmptyTree: a pushed pack may hold a delta that makes the empty tree, which
// has no entries to find a base by; the merge writes it whole (it once indexed the bases it
// had none of, and panicked).
func TestMergeDeltaToEmptyTree(t *testing.T) {
	r := openTestRepo(t)
	blob := &plumbing.MemoryObject{}
	blob.SetType(plumbing.BlobObject)
	blob.Write([]byte("x"))
	wide := &object.Tree{}
	for i := range 600 {
		wide.Entries = append(wide.Entries, object.TreeEntry{Name: fmt.Sprintf("file%04d.md", i), Mode: 0o100644, Hash: blob.Hash()})
	}
	tree := &plumbing.MemoryObject{}
	if err := wide.Encode(tree); err != nil {
		t.Fatal(err)
	}
	if err := r.WritePack([]plumbing.EncodedObject{blob, tree}); err != nil {
		t.Fatal(err)
	}
	// One REF_DELTA of the wide tree that makes 0 bytes, indexed as receive-pack would.
	delta := appendDeltaSize(appendDeltaSize(nil, int(tree.Size())), 0)
	var pk bytes.Buffer
	pk.Write(packHeader(1))
	pk.Write(appendObjectHeader(nil, byte(plumbing.REFDeltaObject), len(delta)))
	h := tree.Hash()
	pk.Write(h[:])
	zw := zlib.NewWriter(&pk)
	zw.Write(delta)
	zw.Close()
	sum := sha1.Sum(pk.Bytes())
	pk.Write(sum[:])
	gitIn(t, r, pk.Bytes(), "index-pack", "--stdin", "--fix-thin")
	r.Reload()
	if _, err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	gitIn(t, r, nil, "fsck", "--strict")
	if o, err := r.Object(plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")); err != nil || o.Size() != 0 {
		t.Fatalf("the empty tree after the merge: %v, %v", o, err)
	}
}

// TestMergeGitPacks merges packs that git made, with chains of tree deltas deeper than a
// merge allows, objects in more than one pack (so deltas whose base another pack writes), and
// file times out of the order of their sizes; then again with one more such pack. Each time
// git verifies the result, no chain is deeper than maxDeltaChain, and every object reads back
// with its hash.
func TestMergeGitPacks(t *testing.T) {
	r := openTestRepo(t)
	var fi bytes.Buffer
	mark := 0
	commit := func(i int) { // one folder of 120 entries; each commit changes one
		mark++
		fmt.Fprintf(&fi, "blob\nmark :%d\ndata <<EOF\nversion %d\nEOF\n", mark, i)
		fmt.Fprintf(&fi, "commit refs/heads/main\ncommitter t <t@t> %d +0000\ndata 2\nc\n", 1700000000+i)
		if i == 160 { // a second fast-import: on top of the first
			fi.WriteString("from refs/heads/main^0\n")
		}
		if i == 0 {
			for j := range 120 {
				fmt.Fprintf(&fi, "M 100644 :%d dir/file%03d.md\n", mark, j)
			}
		}
		fmt.Fprintf(&fi, "M 100644 :%d dir/file%03d.md\n\n", mark, (i*7)%120)
	}
	for i := range 160 {
		commit(i)
	}
	gitIn(t, r, fi.Bytes(), "fast-import", "--quiet")
	gitIn(t, r, nil, "repack", "-adf", "--depth=200", "--window=50")
	fi.Reset()
	for i := 160; i < 260; i++ {
		commit(i)
	}
	gitIn(t, r, fi.Bytes(), "fast-import", "--quiet")
	gitIn(t, r, nil, "repack", "-d", "--depth=200", "--window=50")
	packDir := filepath.Join(r.path, "objects", "pack")
	overlap := func(revs string) {
		objs := gitIn(t, r, []byte(revs), "rev-list", "--objects", "--stdin")
		gitIn(t, r, objs, "pack-objects", "--delta-base-offset", "--depth=200", filepath.Join(packDir, "pack"))
	}
	overlap("main~150\n^main~200\nmain~10\n^main~40\n")
	packs, _ := filepath.Glob(filepath.Join(packDir, "*.pack"))
	for i, p := range packs {
		tm := time.Unix(1700000000+int64((len(packs)-i)*100), 0)
		if err := os.Chtimes(p, tm, tm); err != nil {
			t.Fatal(err)
		}
	}
	r.Reload()
	if n := len(r.objs.Load().packs); n < 3 {
		t.Fatalf("%d packs to merge, want 3", n)
	}
	check := func() {
		t.Helper()
		gitIn(t, r, nil, "fsck", "--strict", "--no-dangling")
		packs, err := r.packFiles()
		if err != nil || len(packs) != 1 {
			t.Fatalf("after the merge: %v, %v; want one pack", packs, err)
		}
		for _, line := range strings.Split(string(gitIn(t, r, nil, "verify-pack", "-v", packs[0].base+".idx")), "\n") {
			var depth, n int
			if _, err := fmt.Sscanf(line, "chain length = %d: %d object", &depth, &n); err == nil && depth > maxDeltaChain {
				t.Fatalf("%d objects %d deltas deep, more than %d", n, depth, maxDeltaChain)
			}
		}
		fresh, err := Open(r.path)
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		for _, line := range strings.Fields(string(gitIn(t, r, nil, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"))) {
			h := plumbing.NewHash(line)
			o, err := fresh.Object(h)
			if err != nil {
				t.Fatal(err)
			}
			data, err := ReadEncoded(o)
			if err != nil || plumbing.ComputeHash(o.Type(), data) != h {
				t.Fatalf("%s reads otherwise after the merge: %v", h, err)
			}
		}
	}
	if _, err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	check()
	overlap("main~5\n^main~120\n")
	r.Reload()
	if _, err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	check()
}
