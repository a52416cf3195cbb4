package odb

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

type packFile struct {
	base  string // objects/pack/pack-<hash>, without extension
	count uint32
}

// packFiles lists the packs that have an index, smallest first.
func (r *Repo) packFiles() ([]packFile, error) {
	dir := filepath.Join(r.path, "objects", "pack")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list packs of %s: %w", r.path, err)
	}
	var packs []packFile
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(base, "pack-") {
			continue
		}
		base = filepath.Join(dir, base)
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
	var hdr [8 + 256*4]byte
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
// under temporary names and published index first; only then are the old packs removed,
// under the storage lock, and the storage reloaded.
func (r *Repo) MergePacks(maxPacks int) error {
	r.swap.Lock()
	defer r.swap.Unlock()
	packs, err := r.packFiles()
	if err != nil {
		return err
	}
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
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	sum, idx, err := r.writeMerged(packs[:k], tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	base := filepath.Join(dir, "pack-"+sum.String())
	if err := publishPack(tmp.Name(), idx, base, nil); err != nil {
		return err
	}
	faultAt("merged", base)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range packs[:k] {
		if p.base == base {
			continue
		}
		for _, ext := range []string{".pack", ".idx"} {
			if err := os.Remove(p.base + ext); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("remove merged pack: %w", err)
			}
		}
	}
	// Only a storage made after the old packs are gone is safe: go-git reads an object from
	// the first pack whose index has it, and would not try the merged one.
	r.st = newStorage(r.path)
	clear(r.recent)
	r.recentBytes = 0
	r.packs.Add(-int64(k - 1)) // packs written meanwhile stay counted
	return nil
}

// idxEntries lists the objects of a pack index with their offsets and CRCs.
func idxEntries(path string) ([]idxfile.Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read pack index %s: %w", path, err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, fmt.Errorf("decode pack index %s: %w", path, err)
	}
	it, err := idx.EntriesByOffset()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var es []idxfile.Entry
	for {
		e, err := it.Next()
		if err == io.EOF {
			return es, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read pack index %s: %w", path, err)
		}
		es = append(es, *e)
	}
}

// writeMerged writes one pack with every object of packs, and returns its checksum and
// index. An object stored whole is copied as it is, compressed bytes and CRC included, so a
// merge costs I/O and no compression; a delta (git pushes send them) is resolved and
// written whole, since its base may not come along.
func (r *Repo) writeMerged(packs []packFile, out io.Writer) (plumbing.Hash, *packIndex, error) {
	type source struct {
		pack    packFile
		entries []idxfile.Entry
	}
	var sources []source
	// The objects to write: one map serves to count them for the header and, emptied as
	// they are written, to write each once.
	pending := map[plumbing.Hash]struct{}{}
	for _, p := range packs {
		es, err := idxEntries(p.base + ".idx")
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		sources = append(sources, source{p, es})
		for _, e := range es {
			pending[e.Hash] = struct{}{}
		}
	}
	count := len(pending)
	bw := bufio.NewWriterSize(out, 1<<20)
	cw := &countingWriter{w: bw, h: sha1.New()}
	var hdr [12]byte
	copy(hdr[:4], "PACK")
	binary.BigEndian.PutUint32(hdr[4:8], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(count))
	if _, err := cw.Write(hdr[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	idx := &packIndex{entries: make([]indexEntry, 0, count)}
	ww := newWholeWriter()
	for _, src := range sources {
		if err := r.copyObjects(src.pack.base+".pack", src.entries, pending, cw, idx, ww); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	var sum plumbing.Hash
	copy(sum[:], cw.h.Sum(nil))
	if _, err := bw.Write(sum[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := bw.Flush(); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	idx.packSum = sum
	return sum, idx, nil
}

// copyObjects appends the objects of one pack (entries sorted by offset) to cw.
func (r *Repo) copyObjects(path string, entries []idxfile.Entry, pending map[plumbing.Hash]struct{}, cw *countingWriter, idx *packIndex, ww *wholeWriter) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read pack %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	end := uint64(fi.Size()) - 20 // the trailer
	// One buffer for every object: a merge copies hundreds of thousands of small objects,
	// and a buffer each (io.Copy's) was most of what the process allocated.
	var buf []byte
	for i, e := range entries {
		if _, ok := pending[e.Hash]; !ok {
			continue // in an earlier pack
		}
		delete(pending, e.Hash)
		next := end
		if i+1 < len(entries) {
			next = entries[i+1].Offset
		}
		n := int(next - e.Offset)
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		raw := buf[:n]
		if _, err := f.ReadAt(raw, int64(e.Offset)); err != nil {
			return fmt.Errorf("read pack %s: %w", path, err)
		}
		off := cw.off
		switch typ := plumbing.ObjectType((raw[0] >> 4) & 7); typ {
		case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
			if _, err := cw.Write(raw); err != nil {
				return fmt.Errorf("copy object %s: %w", e.Hash, err)
			}
			idx.add(e.Hash, off, e.CRC32)
		default:
			o, err := r.lookup(e.Hash) // not Object: a merge holds swap
			if err != nil {
				return fmt.Errorf("read object %s: %w", e.Hash, err)
			}
			crc, err := ww.write(cw, o)
			if err != nil {
				return err
			}
			idx.add(e.Hash, off, crc)
		}
	}
	return nil
}
