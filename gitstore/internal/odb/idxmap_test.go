package odb

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/internal/mmap"
)

// blobs makes n blobs whose contents name them, from the first'th on.
func blobs(first, n int) []plumbing.EncodedObject {
	objs := make([]plumbing.EncodedObject, n)
	for i := range objs {
		o := &plumbing.MemoryObject{}
		o.SetType(plumbing.BlobObject)
		fmt.Fprintf(o, "blob %d", first+i)
		objs[i] = o
	}
	return objs
}

// mappedPacks returns, by base, whether each pack of the set has its index mapped.
func mappedPacks(r *Repo) map[string]bool {
	out := map[string]bool{}
	for _, p := range r.objs.Load().packs {
		out[p.base] = p.idx.mapped
	}
	return out
}

// TestMappedIndexes: a large pack's index is mapped, whether the pack was written, merged or
// found at Open, and a small one's is not; readers that keep reading while merges swap mapped
// packs out of the set, and collections undo their mappings, read every object right. An
// index unmapped while a reader still looks in it would crash the test.
func TestMappedIndexes(t *testing.T) {
	skipUnlessMapped(t)
	r := openTestRepo(t)
	large := blobs(0, 10000) // 280 KB of index
	if err := r.WritePack(large); err != nil {
		t.Fatal(err)
	}
	all := large
	for _, mapped := range mappedPacks(r) {
		if !mapped {
			t.Fatalf("a pack of %d objects has its index in the heap", len(large))
		}
	}
	small := blobs(len(all), 100)
	if err := r.WritePack(small); err != nil {
		t.Fatal(err)
	}
	all = append(all, small...)
	if m := mappedPacks(r); len(m) != 2 || m[r.objs.Load().packs[0].base] {
		t.Fatalf("packs mapped: %v; want the small one (newest) in the heap", m)
	}

	var stop atomic.Bool
	var failed atomic.Value
	var readers sync.WaitGroup
	known := all // the readers read the objects written before they began
	for g := 0; g < 4; g++ {
		readers.Add(1)
		go func(seed uint64) {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for !stop.Load() {
				i := rng.IntN(len(known))
				got, err := r.Blob(known[i].Hash())
				if err != nil || !bytes.Equal(got, []byte(fmt.Sprintf("blob %d", i))) {
					failed.CompareAndSwap(nil, fmt.Sprintf("blob %d read %q, %v", i, got, err))
					return
				}
			}
		}(uint64(g))
	}
	for round := 0; round < 20; round++ {
		more := blobs(len(all), 50)
		if err := r.WritePack(more); err != nil {
			t.Fatal(err)
		}
		all = append(all, more...)
		if _, err := r.MergePacks(1); err != nil {
			t.Fatal(err)
		}
		runtime.GC() // the packs merged are unreachable but to readers: their mappings go
	}
	stop.Store(true)
	readers.Wait()
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}
	m := mappedPacks(r)
	if len(m) != 1 {
		t.Fatalf("%d packs after the merges, want 1", len(m))
	}
	for _, mapped := range m {
		if !mapped {
			t.Fatal("the merged pack has its index in the heap")
		}
	}
	// The merged packs' mappings are undone once collected: only the last one stays.
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil {
		dir := filepath.Join(r.path, "objects", "pack")
		n := 0
		for deadline := time.Now().Add(10 * time.Second); ; {
			n = bytes.Count(maps, []byte(dir+string(filepath.Separator)))
			if n <= 1 || time.Now().After(deadline) {
				break
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
			maps, _ = os.ReadFile("/proc/self/maps")
		}
		if n != 1 {
			t.Fatalf("%d pack indexes mapped after the merges, want 1", n)
		}
	}
	fresh, err := Open(r.path)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for base, mapped := range mappedPacks(fresh) {
		if !mapped {
			t.Fatal("a large pack found at Open has its index in the heap")
		}
		// Opening a pack reads all of its index to check it, then lets the pages go. A pack
		// of its own, which nothing else reads, is what this looks at.
		p, err := openPack(base, 0)
		if err != nil {
			t.Fatal(err)
		}
		if kb, ok := residentKB(t, p.idx.data); ok && kb*1024 > int64(len(p.idx.data))/4 {
			t.Fatalf("%d KB of an index of %d KB resident after it was opened", kb, len(p.idx.data)/1024)
		}
		p.f.Close()
	}
	for i, o := range all {
		if got, err := fresh.Blob(o.Hash()); err != nil || !bytes.Equal(got, []byte(fmt.Sprintf("blob %d", i))) {
			t.Fatalf("blob %d read back %q, %v", i, got, err)
		}
	}
}

// residentKB returns how much of the mapping that holds data is in the process's resident
// memory (/proc/self/smaps), if the system tells.
func residentKB(t *testing.T, data []byte) (int64, bool) {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, false
	}
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(data))))
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") {
			from, to, _ := strings.Cut(fields[0], "-")
			lo, err1 := strconv.ParseUint(from, 16, 64)
			hi, err2 := strconv.ParseUint(to, 16, 64)
			in = err1 == nil && err2 == nil && lo <= addr && addr < hi
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("smaps: %q", line)
			}
			return kb, true
		}
	}
	t.Fatal("the index is not mapped")
	return 0, false
}

// TestBrokenMappedIndex: a large index (mapped) that is damaged, or whose names are out of
// order under a good checksum, is refused as a small one is (TestBrokenIndex), and its
// mapping is undone at once.
func TestBrokenMappedIndex(t *testing.T) {
	skipUnlessMapped(t)
	r := openTestRepo(t)
	if err := r.WritePack(blobs(0, 10000)); err != nil {
		t.Fatal(err)
	}
	src := r.objs.Load().packs[0].base
	good, err := os.ReadFile(src + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	pack, err := os.ReadFile(src + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	if len(good) < mapIdxMin {
		t.Fatalf("an index of %d bytes: too small to be mapped", len(good))
	}
	damaged := bytes.Clone(good)
	damaged[idxHeader+100] ^= 0xff
	unsorted := bytes.Clone(good)
	a := bytes.Clone(unsorted[idxHeader : idxHeader+20])
	copy(unsorted[idxHeader:], unsorted[idxHeader+20:idxHeader+40])
	copy(unsorted[idxHeader+20:], a)
	sum := sha1.Sum(unsorted[:len(unsorted)-20])
	copy(unsorted[len(unsorted)-20:], sum[:])
	for name, idx := range map[string][]byte{"damaged": damaged, "unsorted": unsorted, "good": good} {
		base := filepath.Join(t.TempDir(), "pack-"+name)
		if err := os.WriteFile(base+".pack", pack, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".idx", idx, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := openPack(base, 0)
		if name == "good" {
			if err != nil || !p.idx.mapped {
				t.Fatalf("the good index: %v (mapped: %v)", err, err == nil && p.idx.mapped)
			}
			p.f.Close()
			continue
		}
		if err == nil {
			t.Fatalf("the %s index was accepted", name)
		}
		if maps, err := os.ReadFile("/proc/self/maps"); err == nil && bytes.Contains(maps, []byte(base+".idx")) {
			t.Fatalf("the %s index is still mapped after it was refused", name)
		}
	}
}

// skipUnlessMapped skips the test where files are not mapped (mmap.Map).
func skipUnlessMapped(t *testing.T) {
	t.Helper()
	m, err := mmap.Map(os.Args[0], 1)
	if err != nil {
		t.Skipf("files are not mapped here: %v", err)
	}
	mmap.Unmap(m)
}
