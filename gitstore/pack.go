package gitstore

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// idlePacks is how many packs a repository keeps once the writer has been idle.
const idlePacks = 8

// packFile is one pack of the repository and how many objects it holds.
type packFile struct {
	base  string // objects/pack/pack-<hash>, without extension
	count uint32
}

// packFiles lists the packs that have an index, smallest first.
func (r *repo) packFiles() ([]packFile, error) {
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

// mergePacks merges the smallest packs once there are more than maxPacks, so that a store with a
// million versions stays a few files. The new pack and its index are written and fsynced
// under temporary names and published index first; only then are the old packs removed,
// under the storage lock, and the storage reloaded.
func (r *repo) mergePacks(maxPacks int) error {
	packs, err := r.packFiles()
	if err != nil {
		return err
	}
	r.packs = len(packs)
	if len(packs) <= maxPacks {
		return nil
	}
	k := geometricSplit(packs)
	if k < 2 {
		k = len(packs) - maxPacks + 1 // never more than maxPacks, even off the progression
	}
	var hashes []plumbing.Hash
	for _, p := range packs[:k] {
		hs, err := idxHashes(p.base + ".idx")
		if err != nil {
			return err
		}
		hashes = append(hashes, hs...)
	}
	// The same object can be in two packs (written loose again by a later commit).
	hashes = dedupe(hashes)
	dir := filepath.Join(r.path, "objects", "pack")
	tmp, err := os.CreateTemp(dir, "tmp_merge_")
	if err != nil {
		return fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 1<<20)
	r.mu.RLock()
	sum, err := packfile.NewEncoder(w, r.st, false).Encode(hashes, 0)
	r.mu.RUnlock()
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		return fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	base := filepath.Join(dir, "pack-"+sum.String())
	if err := writeIdx(tmp, base+".idx"); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), base+".pack"); err != nil {
		return fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
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
	r.st = newStorage(r.path)
	r.packs = len(packs) - k + 1
	return nil
}

// idxHashes lists the objects of a pack index.
func idxHashes(path string) ([]plumbing.Hash, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read pack index %s: %w", path, err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, fmt.Errorf("decode pack index %s: %w", path, err)
	}
	it, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var hs []plumbing.Hash
	for {
		e, err := it.Next()
		if err == io.EOF {
			return hs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read pack index %s: %w", path, err)
		}
		hs = append(hs, e.Hash)
	}
}

// writeIdx parses the pack in f and writes its index at path, durably, through a
// temporary file.
func writeIdx(f *os.File, path string) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	iw := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(f), iw)
	if err != nil {
		return fmt.Errorf("index merged pack: %w", err)
	}
	if _, err := p.Parse(); err != nil {
		return fmt.Errorf("index merged pack: %w", err)
	}
	idx, err := iw.Index()
	if err != nil {
		return fmt.Errorf("index merged pack: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "tmp_idx_")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	w := bufio.NewWriter(tmp)
	if _, err := idxfile.NewEncoder(w).Encode(idx); err != nil {
		return fmt.Errorf("write pack index: %w", err)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
