package odb

import (
	"bufio"
	"bytes"
	"container/heap"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

type packFile struct {
	base  string // objects/pack/pack-<hash>, without extension
	count uint32
}

// packBases lists the packs in the directory, as paths without extension.
func (r *Repo) packBases() ([]string, error) {
	dir := filepath.Join(r.path, "objects", "pack")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list packs of %s: %w", r.path, err)
	}
	var bases []string
	for _, e := range entries {
		if base, ok := strings.CutSuffix(e.Name(), ".pack"); ok && strings.HasPrefix(base, "pack-") {
			bases = append(bases, filepath.Join(dir, base))
		}
	}
	return bases, nil
}

// packFiles lists the packs with their object counts, smallest first.
func (r *Repo) packFiles() ([]packFile, error) {
	bases, err := r.packBases()
	if err != nil {
		return nil, err
	}
	var packs []packFile
	for _, base := range bases {
		n, err := idxCount(base + ".idx")
		if err != nil {
			return nil, err
		}
		packs = append(packs, packFile{base: base, count: n})
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].count < packs[j].count })
	return packs, nil
}

// idxCount reads the object count of a version 2 pack index: the last fan-out entry.
func idxCount(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read pack index %s: %w", path, err)
	}
	defer f.Close()
	var hdr [idxHeader]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return 0, fmt.Errorf("read pack index %s: %w", path, err)
	}
	return binary.BigEndian.Uint32(hdr[len(hdr)-4:]), nil
}

// geometricSplit returns how many of the smallest packs (sorted by count) to merge so that,
// afterwards, each pack holds at least twice the objects of all smaller packs together, as
// git repack --geometric=2 keeps them. Merging then costs O(n log n) over a store's life.
func geometricSplit(packs []packFile) int {
	k := 0
	var sum uint64
	for i, p := range packs {
		if uint64(p.count) < 2*sum {
			k = i + 1
		}
		sum += uint64(p.count)
	}
	return k
}

// MergePacks merges the smallest packs once there are more than maxPacks, so that a store with a
// million versions stays a few files. The new pack and its index are written and fsynced
// under temporary names and published index first; then the merged pack takes the old
// ones' place in the set that reads look in, and only then are their files removed. It
// merges the packs of the set, listed again first: those whose index was checked when it
// was read (openPack), with their deltas' bases readable.
func (r *Repo) MergePacks(maxPacks int) error {
	r.swap.Lock()
	defer r.swap.Unlock()
	// Not while a pack is between its rename and joining the set: the merge would remove
	// it, and the set then take it in.
	r.placing.Lock()
	err := r.relist(nil, false)
	set := r.objs.Load()
	r.placing.Unlock()
	if err != nil {
		return err
	}
	packs := make([]packFile, 0, len(set.packs))
	for _, p := range set.packs {
		packs = append(packs, packFile{base: p.base, count: uint32(p.idx.n)})
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].count < packs[j].count })
	r.packs.Store(int64(len(packs)))
	if len(packs) <= maxPacks {
		return nil
	}
	// Merge along the progression, and never leave more than maxPacks.
	k := max(geometricSplit(packs), len(packs)-maxPacks+1)
	dir := filepath.Join(r.path, "objects", "pack")
	tmp, err := os.CreateTemp(dir, "tmp_merge_")
	if err != nil {
		return fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	kept := false // published: the file stays open, for reads
	defer func() {
		if !kept {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum, idxData, err := r.writeMerged(packs[:k], tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	base := filepath.Join(dir, "pack-"+sum.String())
	if err := publishPack(tmp.Name(), idxData, base, nil); err != nil {
		return err
	}
	faultAt("merged", base)
	merged, err := openPackWithIdx(base, idxData, tmp, r.gen.Add(1))
	if err != nil {
		return err
	}
	kept = true
	// The set changes before the files go (swapPacks closes them).
	drop := map[string]bool{}
	for _, p := range packs[:k] {
		drop[p.base] = p.base != base
	}
	r.swapPacks([]*pack{merged}, 0, drop, false)
	for _, p := range packs[:k] {
		if !drop[p.base] {
			continue
		}
		// The index first: git finds a pack by its index, and would report one whose pack
		// is gone as broken; a pack left without one is removed at the next Open.
		for _, ext := range []string{".idx", ".pack"} {
			if err := os.Remove(p.base + ext); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("remove merged pack: %w", err)
			}
		}
	}
	r.packs.Add(-int64(k - 1)) // packs written meanwhile stay counted
	return nil
}

// packIndexOf returns the index of the pack at base, which must be in the set.
func (r *Repo) packIndexOf(base string) (*packIdx, error) {
	if p := r.objs.Load().get(base); p != nil {
		return p.idx, nil
	}
	return nil, fmt.Errorf("merge packs: %s is not among the packs read", filepath.Base(base))
}

// writeMerged writes one pack with every object of packs, and returns its checksum and
// index. An object stored whole is copied as it is, compressed bytes and CRC included, so a
// merge costs I/O and no compression; a delta (git pushes send them) is resolved and
// written whole, since its base may not come along. An object in more than one pack is
// written from the first: the indexes tell, so the merge keeps no set of hashes. The new
// index is built from the old ones, already in the order of hashes, and the offset each
// object got (8 bytes an object): a list of entries to sort (32 bytes) and its encoding
// were a merge's largest memory at 100,000 memories.
func (r *Repo) writeMerged(packs []packFile, out io.Writer) (plumbing.Hash, []byte, error) {
	srcs := make([]*mergeSource, len(packs))
	idxs := make([]*packIdx, len(packs))
	count := 0
	for i, p := range packs {
		x, err := r.packIndexOf(p.base)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		idxs[i] = x
		srcs[i] = &mergeSource{x: x, offs: make([]uint64, x.n), dup: make([]bool, x.n)}
		for j := 0; j < x.n; j++ {
			if inAny(idxs[:i], x.hash(j)) {
				srcs[i].dup[j] = true
			} else {
				count++
			}
		}
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	cw := &countingWriter{w: bw, h: sha1.New()}
	if _, err := cw.Write(packHeader(count)); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	ww := newWholeWriter()
	rd := bufio.NewReaderSize(nil, 256<<10) // one for every pack: a merge runs often
	written := 0
	for i, p := range packs {
		n, err := r.copyObjects(p.base+".pack", srcs[i], rd, cw, ww)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		written += n
	}
	if written != count {
		return plumbing.ZeroHash, nil, fmt.Errorf("merge wrote %d objects of %d", written, count)
	}
	var sum plumbing.Hash
	copy(sum[:], cw.h.Sum(nil))
	if _, err := bw.Write(sum[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := bw.Flush(); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return sum, buildIdx(count, func(yield func(plumbing.Hash, uint32, uint64)) { mergeByHash(srcs, yield) }, sum), nil
}

// mergeSource is one pack of a merge: its index, and where the merge wrote each of its
// objects (0 for one written from an earlier pack) with a new CRC where it wrote one anew.
type mergeSource struct {
	x    *packIdx
	offs []uint64
	dup  []bool // held by an earlier pack of the merge, which writes it
	crcs map[int]uint32
	next int // the position mergeByHash is at
}

// mergeByHash yields the objects the merge wrote in the order of their hashes: a merge of
// the indexes, each already in that order.
func mergeByHash(srcs []*mergeSource, yield func(plumbing.Hash, uint32, uint64)) {
	skip := func(s *mergeSource) {
		for s.next < s.x.n && s.offs[s.next] == 0 {
			s.next++
		}
	}
	h := &sourceHeap{}
	for _, s := range srcs {
		if skip(s); s.next < s.x.n {
			heap.Push(h, s)
		}
	}
	for h.Len() > 0 {
		s := (*h)[0]
		crc, ok := s.crcs[s.next]
		if !ok {
			crc = s.x.crc(s.next)
		}
		yield(s.x.hash(s.next), crc, s.offs[s.next])
		s.next++
		if skip(s); s.next < s.x.n {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
}

// sourceHeap orders merge sources by the hash each is at.
type sourceHeap []*mergeSource

func (h sourceHeap) Len() int { return len(h) }
func (h sourceHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return bytes.Compare(a.x.data[a.x.names+20*a.next:a.x.names+20*a.next+20], b.x.data[b.x.names+20*b.next:b.x.names+20*b.next+20]) < 0
}
func (h sourceHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sourceHeap) Push(x any)   { *h = append(*h, x.(*mergeSource)) }
func (h *sourceHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

func inAny(idxs []*packIdx, h plumbing.Hash) bool {
	for _, x := range idxs {
		if _, ok := x.find(h); ok {
			return true
		}
	}
	return false
}

// copyObjects appends the objects of one pack, read in the pack's order, to cw, but for
// those that an earlier pack holds.
func (r *Repo) copyObjects(path string, src *mergeSource, rd *bufio.Reader, cw *countingWriter, ww *wholeWriter) (int, error) {
	x := src.x
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read pack %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	written := 0
	end := fi.Size() - 20 // the trailer
	order := x.sortedByOffset()
	rd.Reset(io.NewSectionReader(f, 0, end))
	var pos int64
	var buf []byte
	for i, j := range order {
		off := x.offset(int(j))
		next := end
		if i+1 < len(order) {
			next = x.offset(int(order[i+1]))
		}
		if off < max(pos, 12) || next <= off || next > end {
			return 0, fmt.Errorf("read pack %s: broken offsets in its index", path)
		}
		if _, err := rd.Discard(int(off - pos)); err != nil {
			return 0, fmt.Errorf("read pack %s: %w", path, err)
		}
		n := int(next - off)
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		raw := buf[:n]
		if _, err := io.ReadFull(rd, raw); err != nil {
			return 0, fmt.Errorf("read pack %s: %w", path, err)
		}
		pos = next
		h := x.hash(int(j))
		if src.dup[j] {
			continue
		}
		at := cw.off
		switch typ := plumbing.ObjectType((raw[0] >> 4) & 7); typ {
		case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
			if _, err := cw.Write(raw); err != nil {
				return 0, fmt.Errorf("copy object %s: %w", h, err)
			}
		default:
			o, err := r.lookup(h) // not Object: a merge holds swap
			if err != nil {
				return 0, fmt.Errorf("read object %s: %w", h, err)
			}
			crc, err := ww.write(cw, o)
			if err != nil {
				return 0, err
			}
			if src.crcs == nil {
				src.crcs = map[int]uint32{}
			}
			src.crcs[int(j)] = crc
		}
		src.offs[j] = at
		written++
	}
	return written, nil
}
