package odb

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
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
	if n, err := r.MergePacks(1); err != nil || n != 3 {
		t.Fatalf("merged %d packs, %v; want 3", n, err)
	}
	if n, err := r.MergePacks(1); err != nil || n != 0 {
		t.Fatalf("merged %d packs of one, %v; want none", n, err)
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

// treeHistory makes n commits over folders of entries: each changes, adds or removes one entry
// of one folder, so each has new versions of that folder and of the root tree, as a store's
// writes do. It returns the objects of each commit, oldest first.
func treeHistory(t *testing.T, n int) [][]plumbing.EncodedObject {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	folders := make([]map[string]plumbing.Hash, 4)
	var blobs []plumbing.EncodedObject // those of the folders at first
	for i := range folders {
		folders[i] = map[string]plumbing.Hash{}
		for j := range 40 {
			blob := &plumbing.MemoryObject{}
			blob.SetType(plumbing.BlobObject)
			fmt.Fprintf(blob, "memory %d of folder %d\n", j, i)
			folders[i][fmt.Sprintf("m%03d.md", j)] = blob.Hash()
			blobs = append(blobs, blob)
		}
	}
	encode := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.EncodedObject {
		m := &plumbing.MemoryObject{}
		if err := o.Encode(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	treeOf := func(entries map[string]plumbing.Hash, mode filemode.FileMode) *object.Tree {
		tr := &object.Tree{}
		for name, h := range entries {
			tr.Entries = append(tr.Entries, object.TreeEntry{Name: name, Mode: mode, Hash: h})
		}
		sort.Slice(tr.Entries, func(i, j int) bool { return tr.Entries[i].Name < tr.Entries[j].Name })
		return tr
	}
	var commits [][]plumbing.EncodedObject
	parent := plumbing.ZeroHash
	for i := range n {
		f := folders[rng.IntN(len(folders))]
		blob := &plumbing.MemoryObject{}
		blob.SetType(plumbing.BlobObject)
		fmt.Fprintf(blob, "memory %d\n", i)
		name := fmt.Sprintf("m%03d.md", rng.IntN(60))
		if _, ok := f[name]; ok && rng.IntN(4) == 0 && len(f) > 1 {
			delete(f, name)
		} else {
			f[name] = blob.Hash()
		}
		objs := []plumbing.EncodedObject{blob}
		if i == 0 {
			objs = append(objs, blobs...)
		}
		root := map[string]plumbing.Hash{}
		for j, entries := range folders {
			sub := encode(treeOf(entries, filemode.Regular))
			objs = append(objs, sub) // the same as before for the folders left: a dup
			root[fmt.Sprintf("folder%d", j)] = sub.Hash()
		}
		rt := encode(treeOf(root, filemode.Dir))
		c := &object.Commit{TreeHash: rt.Hash(), Message: fmt.Sprint(i),
			Author: object.Signature{Name: "t", Email: "t@t"}, Committer: object.Signature{Name: "t", Email: "t@t"}}
		if !parent.IsZero() {
			c.ParentHashes = []plumbing.Hash{parent}
		}
		co := encode(c)
		objs = append(objs, rt, co)
		commits = append(commits, objs)
		parent = co.Hash()
	}
	return commits
}

// TestMergeTreeDeltas: merges store the versions of a tree as deltas of one another, in
// chains no deeper than git's default, in packs that git verifies and that read back every
// object as it was, also merged again with packs that hold some of the same objects.
func TestMergeTreeDeltas(t *testing.T) {
	r := openTestRepo(t)
	commits := treeHistory(t, 600)
	var all []plumbing.EncodedObject
	seen := map[plumbing.Hash]bool{}
	for i := 0; i < len(commits); {
		// Groups of one to five commits, merged down to four packs as the store does.
		g := min(len(commits)-i, 1+i%5)
		var objs []plumbing.EncodedObject
		for _, c := range commits[i : i+g] {
			for _, o := range c {
				if !seen[o.Hash()] {
					seen[o.Hash()] = true
					objs = append(objs, o)
					all = append(all, o)
				}
			}
		}
		if i%50 == 0 && i > 0 {
			objs = append(objs, all[0]) // an object that an older pack holds too
		}
		if err := r.WritePack(objs); err != nil {
			t.Fatal(err)
		}
		if _, err := r.MergePacks(4); err != nil {
			t.Fatal(err)
		}
		i += g
	}
	if _, err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	packs, deltas, deepest := checkOnePack(t, r, head(commits[len(commits)-1]))
	folders := 0 // the root trees, of four entries, are not worth a delta
	for _, o := range all {
		if o.Type() == plumbing.TreeObject && o.Size() > 512 {
			folders++
		}
	}
	if deltas < folders*9/10 || deepest > maxDeltaChain {
		t.Fatalf("%d deltas among %d versions of folders, the deepest %d deltas down; want most of them deltas, none deeper than %d", deltas, folders, deepest, maxDeltaChain)
	}
	whole := 0 // the objects' sizes in packs of one object, where nothing is a delta
	for _, o := range all {
		p, err := encodePack([]plumbing.EncodedObject{o})
		if err != nil {
			t.Fatal(err)
		}
		whole += len(p.data) - 32
	}
	fi, err := os.Stat(packs[0].base + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size()*3 > int64(whole) { // blobs and commits stay whole
		t.Fatalf("the merged pack takes %d bytes, the objects whole %d: want a third at most", fi.Size(), whole)
	}
	readsBack(t, r.path, all) // from the disk, not from the cache that the merges filled
}

// readsBack opens the repository at path afresh and checks that each of objs reads back as
// it is.
func readsBack(t *testing.T, path string, objs []plumbing.EncodedObject) {
	t.Helper()
	fresh, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, o := range objs {
		got, err := fresh.Blob(o.Hash())
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ReadEncoded(o)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s reads back otherwise", o.Hash())
		}
	}
}

// TestTreeDelta: the deltas made for trees rebuild their target, for differences at either
// end, in the middle, in several places, and of sizes past one instruction's reach.
func TestTreeDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	big := random(200 << 10)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name     string
		src, dst []byte
	}{
		{"same", big, big},
		{"one byte changed", big, cat(big[:1000], []byte{big[1000] + 1}, big[1001:])},
		{"inserted at the start", big, cat(random(300), big)},
		{"removed at the end", big, big[:len(big)-5000]},
		{"changed in two places", big, cat(big[:100], random(40), big[140:150000], random(40), big[150040:])},
		{"changed next to both ends", big, cat(big[:63], []byte{^big[63]}, big[64:len(big)-65], []byte{^big[len(big)-65]}, big[len(big)-64:])},
		{"nothing alike", random(3000), random(5000)},
	} {
		p, s := commonEnds(tc.src, tc.dst)
		d := treeDelta(tc.src, tc.dst, p, s)
		got, err := packfile.PatchDelta(tc.src, d)
		if err != nil || !bytes.Equal(got, tc.dst) {
			t.Errorf("%s: the delta (%d bytes) does not rebuild the target: %v", tc.name, len(d), err)
		}
		got, err = applyDelta(nil, tc.src, d)
		if err != nil || !bytes.Equal(got, tc.dst) {
			t.Errorf("%s: applyDelta does not rebuild the target: %v", tc.name, err)
		}
	}
}

// TestApplyBrokenDelta: a delta cut short, or with instructions that reach outside its source
// or past the size it names, is refused, never applied in part or read out of bounds.
func TestApplyBrokenDelta(t *testing.T) {
	src := bytes.Repeat([]byte("entry "), 100)
	dst := append(bytes.Clone(src[:300]), "new entry"...)
	p, s := commonEnds(src, dst)
	d := treeDelta(src, dst, p, s)
	for n := range len(d) {
		if _, err := applyDelta(nil, src, d[:n]); err == nil {
			t.Fatalf("a delta cut at %d of %d bytes was applied", n, len(d))
		}
	}
	for _, tc := range []struct {
		name  string
		delta []byte
	}{
		{"copy past the source", append(appendDeltaSize(appendDeltaSize(nil, len(src)), 10), 0x93, 0xff, 0x02, 10)},
		{"copy past the size named", append(appendDeltaSize(appendDeltaSize(nil, len(src)), 5), 0x90, 10)},
		{"insert past the size named", append(appendDeltaSize(appendDeltaSize(nil, len(src)), 2), 3, 'a', 'b', 'c')},
		{"instruction 0", append(appendDeltaSize(appendDeltaSize(nil, len(src)), 1), 0)},
		{"source of another size", append(appendDeltaSize(appendDeltaSize(nil, len(src)+1), 1), 1, 'a')},
		{"result too large", appendDeltaSize(appendDeltaSize(nil, len(src)), maxObjectSize+1)},
	} {
		if _, err := applyDelta(nil, src, tc.delta); err == nil {
			t.Errorf("%s: applied", tc.name)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10000 { // random bytes after valid sizes: refused or applied, never a panic
		d := appendDeltaSize(appendDeltaSize(nil, len(src)), rng.IntN(200))
		for range rng.IntN(12) {
			d = append(d, byte(rng.Uint32()))
		}
		applyDelta(nil, src, d)
	}
}

// TestTreeBasesHeld: what treeBases counts as held is the content of the trees it holds,
// each once, through trees of one entry (both names the same), versions that replace
// the one before, deltas that follow their base, fills, and the oldest dropped past maxKin.
func TestTreeBasesHeld(t *testing.T) {
	var tb treeBases
	check := func(step string) {
		t.Helper()
		seen, want := map[uint64]bool{}, 0
		for _, kin := range tb.kin {
			for _, b := range kin {
				if _, ok := tb.names[b.off]; !ok {
					t.Fatalf("%s: tree at %d under a name but not held", step, b.off)
				}
				if !seen[b.off] {
					seen[b.off] = true
					want += len(b.data)
				}
			}
		}
		if len(seen) != len(tb.names) || tb.held != want {
			t.Fatalf("%s: %d trees under names, %d held; held %d bytes, want %d", step, len(seen), len(tb.names), tb.held, want)
		}
	}
	data := func(n int) []byte { return make([]byte, n) }
	tb.remember(endNames{"a", "a"}, 0, deltaBase{off: 1, data: data(10)})
	check("one entry")
	tb.remember(endNames{"a", "z"}, 1, deltaBase{off: 2, data: data(20)})
	check("next version")
	tb.follow(2, deltaBase{off: 3})
	check("a delta follows")
	tb.fill(3, data(30))
	check("filled")
	for off := uint64(10); off < 20; off++ {
		tb.remember(endNames{"a", fmt.Sprint(off)}, 0, deltaBase{off: off, data: data(int(off))})
		check(fmt.Sprintf("another folder at %d", off))
	}
	if n := len(tb.kin["a"]); n != maxKin {
		t.Fatalf("%d trees under a, want %d", n, maxKin)
	}
	tb.drop(19)
	check("dropped")
}

// checkOnePack moves main to tip, has git fsck the repository, which must hold one pack, and
// returns the pack and how many deltas git verify-pack finds in it, and the longest chain.
func checkOnePack(t *testing.T, r *Repo, tip plumbing.Hash) (packs []packFile, deltas, deepest int) {
	t.Helper()
	if err := r.CASRef(plumbing.ZeroHash, tip); err != nil {
		t.Fatal(err)
	}
	if err := r.Git(context.Background(), "fsck", "--strict"); err != nil {
		t.Fatal(err)
	}
	packs, err := r.packFiles()
	if err != nil || len(packs) != 1 {
		t.Fatalf("packs: %v, %v; want one", packs, err)
	}
	out, err := r.GitOutput(context.Background(), "verify-pack", "-v", packs[0].base+".idx")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		var depth, n int
		if _, err := fmt.Sscanf(line, "chain length = %d: %d object", &depth, &n); err == nil {
			deltas += n
			deepest = max(deepest, depth)
		}
	}
	return packs, deltas, deepest
}

// TestMergesAtOnce: a merge runs while another is between writing its pack and swapping it
// in, on the packs that the first did not take; a listing of the packs meanwhile leaves out
// the first's new pack; both end with every object readable and git's fsck content.
func TestMergesAtOnce(t *testing.T) {
	r := openTestRepo(t)
	commits := treeHistory(t, 60)
	var all []plumbing.EncodedObject
	write := func(cs [][]plumbing.EncodedObject) {
		for _, objs := range cs {
			if err := r.WritePack(objs); err != nil {
				t.Fatal(err)
			}
			all = append(all, objs...)
		}
	}
	write(commits[:40])
	// The first merge stops once its pack is published, until the second has merged.
	firstBase, finish := pausedMerge(t, r, 4)

	meanwhile(t, "a listing of the packs", r.reload)
	if r.objs.Load().get(firstBase) != nil {
		t.Fatal("a listing took in a merge's pack before the merge swapped it in")
	}
	if got := len(r.objs.Load().packs); got != 40 {
		t.Fatalf("the set holds %d packs while the first merge runs, want its 40", got)
	}
	write(commits[40:])
	meanwhile(t, "the second merge", func() error { _, err := r.MergePacks(4); return err })
	// The first's packs are all in the set still, and the second left no more beside them
	// than the first's pack and them make 4.
	r.swap.Lock()
	taken, free := 0, 0
	for _, p := range r.objs.Load().packs {
		if r.merging[p.base] {
			taken++
		} else {
			free++
		}
	}
	want := len(r.merging) - 1 // and the first's pack
	r.swap.Unlock()
	if taken != want || taken < 37 || free+1 > 4 {
		t.Fatalf("after the second merge the set holds %d of the first's %d packs and %d others", taken, want, free)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	packs, err := r.packFiles()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(packs); n < 2 || n > 4 || len(r.objs.Load().packs) != n || r.Packs() != n {
		t.Fatalf("after both merges: %d packs in the directory, %d in the set, %d counted; want the same 2 to 4", n, len(r.objs.Load().packs), r.Packs())
	}
	if r.objs.Load().get(firstBase) == nil {
		t.Fatal("the first merge's pack is not in the set")
	}
	if err := r.CASRef(plumbing.ZeroHash, head(commits[len(commits)-1])); err != nil {
		t.Fatal(err)
	}
	if err := r.Git(context.Background(), "fsck", "--strict"); err != nil {
		t.Fatal(err)
	}
	for _, o := range all {
		got, err := r.Blob(o.Hash())
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := ReadEncoded(o); !bytes.Equal(got, want) {
			t.Fatalf("%s reads otherwise after the merges", o.Hash())
		}
	}
	readsBack(t, r.path, all)
}

// pausedMerge starts r.MergePacks(maxPacks) and returns once the merge has published its
// pack, where it waits: its pack's base, and finish, which lets it end and returns its error.
// A test that fails before finish lets it end at cleanup, before the repository closes.
func pausedMerge(t *testing.T, r *Repo, maxPacks int) (base string, finish func() error) {
	t.Helper()
	var stopped atomic.Bool
	paused, resume := make(chan string), make(chan struct{})
	FaultHook = func(point, detail string) {
		if point == "merged" && stopped.CompareAndSwap(false, true) {
			paused <- detail
			<-resume
		}
	}
	done := make(chan error, 1)
	go func() { _, err := r.MergePacks(maxPacks); done <- err }()
	select {
	case base = <-paused:
	case err := <-done:
		FaultHook = nil
		t.Fatalf("the merge ended before its pack was published: %v", err)
	}
	var once sync.Once
	var err error
	finish = func() error {
		once.Do(func() {
			close(resume)
			err = <-done
			FaultHook = nil
		})
		return err
	}
	t.Cleanup(func() { finish() })
	return base, finish
}

// meanwhile runs f, which must end while another merge waits: a minute is more than it can
// take unless it waits for that merge.
func meanwhile(t *testing.T, what string, f func() error) {
	t.Helper()
	within(t, time.Minute, what+" waited for a merge", f)
}

// within runs f and fails the test if f fails, or has not returned after limit, saying late.
func within(t *testing.T, limit time.Duration, late string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(limit):
		t.Fatal(late)
	}
}

// TestMergeRepeatedNames: packs that name a tree twice, with one copy a delta of the other or
// a later tree a delta of either, and the index listing the copies in pack order or not (the
// index's sort of equal names is not stable), read back whole before and after a merge, and
// the merged pack passes git's fsck.
func TestMergeRepeatedNames(t *testing.T) {
	var blobs []plumbing.EncodedObject // in a pack of their own
	folder := func(variant string) plumbing.EncodedObject {
		tr := &object.Tree{}
		for i := range 30 {
			blob := &plumbing.MemoryObject{}
			blob.SetType(plumbing.BlobObject)
			fmt.Fprint(blob, "memory ", i)
			if i == 15 {
				fmt.Fprint(blob, variant)
			}
			if variant == "" || i == 15 {
				blobs = append(blobs, blob)
			}
			tr.Entries = append(tr.Entries, object.TreeEntry{Name: fmt.Sprintf("m%02d.md", i), Mode: filemode.Regular, Hash: blob.Hash()})
		}
		o := &plumbing.MemoryObject{}
		if err := tr.Encode(o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	commit := func(tree plumbing.Hash, msg string) plumbing.EncodedObject {
		c := &object.Commit{TreeHash: tree, Message: msg,
			Author: object.Signature{Name: "t", Email: "t@t"}, Committer: object.Signature{Name: "t", Email: "t@t"}}
		o := &plumbing.MemoryObject{}
		if err := c.Encode(o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	tr, tu := folder(""), folder("changed") // tu is a delta of tr in a pack
	c0, c1, c2 := commit(tr.Hash(), "0"), commit(tr.Hash(), "1"), commit(tu.Hash(), "2")
	for _, tc := range []struct {
		name     string
		packs    [][]plumbing.EncodedObject
		backward bool // the index lists equal names against the pack's order
	}{
		{"a copy a delta of the other", [][]plumbing.EncodedObject{blobs, {tr, tr, tu, c1, c2}}, false},
		{"a copy a delta of the other, listed backward", [][]plumbing.EncodedObject{blobs, {tr, tr, tu, c1, c2}}, true},
		{"a later tree a delta of the first copy", [][]plumbing.EncodedObject{blobs, {tr, tu, tr, c1, c2}}, false},
		{"a later tree a delta of the first copy, listed backward", [][]plumbing.EncodedObject{blobs, {tr, tu, tr, c1, c2}}, true},
		{"both copies in an earlier pack too", [][]plumbing.EncodedObject{append([]plumbing.EncodedObject{tr, c0}, blobs...), {tr, tr, tu, c1, c2}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := initTestRepo(t)
			var all []plumbing.EncodedObject
			for i, objs := range tc.packs {
				placeOrdered(t, path, objs, tc.backward, time.Unix(1000+int64(i), 0))
				all = append(all, objs...)
			}
			readsBack(t, path, all)
			r := mustOpen(t, path)
			defer r.Close()
			if _, err := r.MergePacks(1); err != nil {
				t.Fatal(err)
			}
			if err := r.CASRef(plumbing.ZeroHash, head(tc.packs[len(tc.packs)-1])); err != nil {
				t.Fatal(err)
			}
			if err := r.Git(context.Background(), "fsck", "--strict"); err != nil {
				t.Fatal(err)
			}
			readsBack(t, path, all)
		})
	}
}

// placeOrdered writes objs as one durable pack whose index lists equal names in the pack's
// order, or against it if backward, with the pack's time at.
func placeOrdered(t *testing.T, path string, objs []plumbing.EncodedObject, backward bool, at time.Time) {
	t.Helper()
	p, err := encodePack(objs)
	if err != nil {
		t.Fatal(err)
	}
	es := slices.Clone(p.idx.entries)
	slices.SortStableFunc(es, func(a, b indexEntry) int {
		if c := bytes.Compare(a.hash[:], b.hash[:]); c != 0 || !backward {
			return cmp.Or(c, cmp.Compare(a.offset, b.offset))
		}
		return cmp.Compare(b.offset, a.offset)
	})
	idx := (&packIndex{entries: es, packSum: p.idx.packSum}).encoded()
	dir := filepath.Join(path, "objects", "pack")
	tmp := filepath.Join(dir, "tmp_ordered")
	if err := os.WriteFile(tmp, p.data, 0o600); err != nil {
		t.Fatal(err)
	}
	base := p.base(dir)
	if err := publishPack(tmp, idxBytes(idx), base, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(base+".pack", at, at); err != nil {
		t.Fatal(err)
	}
}

// TestMergeNothingAsPlaced: while a merge runs, a merge with nothing to take answers while
// the writer is placing a pack (placing held), as it does after nearly every group; with no
// merge running, a merge lists the directory, and takes in packs that a git process added
// without a Reload and sets the count of packs again after a repack.
func TestMergeNothingAsPlaced(t *testing.T) {
	r := openTestRepo(t)
	commits := treeHistory(t, 30)
	for _, objs := range commits[:6] {
		if err := r.WritePack(objs); err != nil {
			t.Fatal(err)
		}
	}
	_, finish := pausedMerge(t, r, 1)
	r.placing.RLock()
	meanwhile(t, "a merge with nothing to take", func() error {
		if n, err := r.MergePacks(4); err != nil || n != 0 {
			return fmt.Errorf("merged %d packs, %v; want none", n, err)
		}
		return nil
	})
	r.placing.RUnlock()
	if err := finish(); err != nil {
		t.Fatal(err)
	}

	// Packs a git process placed, unknown to the set, merge when no merge runs.
	for _, objs := range commits[6:] {
		placeOrdered(t, r.Path(), objs, false, time.Now())
	}
	if _, err := r.MergePacks(8); err != nil {
		t.Fatal(err)
	}
	packs, err := r.packFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(packs) > 8 || len(r.objs.Load().packs) != len(packs) {
		t.Fatalf("after a merge down to 8: %d packs on disk, %d in the set", len(packs), len(r.objs.Load().packs))
	}

	// A repack outside and a Reload: the next merge counts the packs again.
	gitIn(t, r, nil, "repack", "-a", "-d", "-q")
	r.Reload()
	if _, err := r.MergePacks(8); err != nil {
		t.Fatal(err)
	}
	if n := len(r.objs.Load().packs); r.Packs() != n {
		t.Fatalf("%d packs counted, %d in the set", r.Packs(), n)
	}
}

// TestResolveFromTips: a merge's reads of a pack's trees, in the order of the pack as a
// merge reads them, give every tree as it was, and start from the trees read last: they
// apply far fewer deltas than reads that each go down to their chain's whole tree.
func TestResolveFromTips(t *testing.T) {
	r := openTestRepo(t)
	want := map[plumbing.Hash][]byte{}
	for _, objs := range treeHistory(t, 150) {
		if err := r.WritePack(objs); err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.Type() == plumbing.TreeObject {
				want[o.Hash()], _ = ReadEncoded(o)
			}
		}
	}
	if _, err := r.MergePacks(1); err != nil {
		t.Fatal(err)
	}
	set := r.objs.Load()
	if len(set.packs) != 1 {
		t.Fatalf("%d packs after merging down to 1", len(set.packs))
	}
	p := set.packs[0]
	var trees []plumbing.Hash // in the pack's order
	for _, i := range p.idx.inOffsetOrder() {
		if h := p.idx.hash(int(i)); want[h] != nil {
			trees = append(trees, h)
		}
	}
	shared := &merge{r: r, own: *set}
	alone := 0 // deltas applied by reads that keep nothing
	for _, h := range trees {
		got, err := shared.resolve(h)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[h]) {
			t.Fatalf("tree %s reads otherwise", h)
		}
		fresh := &merge{r: r, own: *set}
		if _, err := fresh.resolve(h); err != nil {
			t.Fatal(err)
		}
		alone += fresh.res.applied
	}
	if alone < 100 || shared.res.applied*2 > alone {
		t.Fatalf("the reads applied %d deltas, against %d for reads that each start from a whole tree", shared.res.applied, alone)
	}
}

// TestTreeEnds: the names of a tree's first and last entries, with names that hold spaces,
// hashes that hold spaces and zeros, and trees that end inside an entry refused.
func TestTreeEnds(t *testing.T) {
	entry := func(mode, name string, fill byte) []byte {
		e := append([]byte(mode+" "+name), 0)
		return append(e, bytes.Repeat([]byte{fill}, 20)...)
	}
	var tree []byte
	tree = append(tree, entry("100644", "a b.md", ' ')...)
	tree = append(tree, entry("40000", "notes", 0)...)
	tree = append(tree, entry("160000", "z", 'x')...)
	for _, c := range []struct {
		data        []byte
		first, last string
		ok          bool
	}{
		{tree, "a b.md", "z", true},
		{entry("100644", "only.md", 0), "only.md", "only.md", true},
		{nil, "", "", false},
		{tree[:len(tree)-1], "", "", false},
		{entry("1006440", "long-mode", 0), "", "", false},
		{[]byte("100644 no-nul"), "", "", false},
	} {
		first, last, ok := treeEnds(c.data)
		if ok != c.ok || string(first) != c.first || string(last) != c.last {
			t.Errorf("%q: %q, %q, %v; want %q, %q, %v", c.data, first, last, ok, c.first, c.last, c.ok)
		}
	}
}
