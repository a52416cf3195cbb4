package odb

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
)

type packFile struct {
	base  string // objects/pack/pack-<hash>, without extension
	count uint32
	p     *pack // in the set; set by MergePacks only
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
// million versions stays a few files, and returns how many it merged: none if there were not
// more than maxPacks or another merge had taken those to merge, and the count with the error
// of a merge that took their place but could not remove their files. The new pack and its
// index are written and fsynced under temporary names and published index first; then the
// merged pack takes the old ones' place in the set that reads look in, and only then are
// their files removed. It merges the packs of the set, listed again first unless another
// merge runs and the set has nothing to take (takePacks): those whose index was checked when
// it was read (openPack), with their deltas' bases readable.
//
// Merges may run at once, each on packs that no other has taken (takePacks): a merge of all
// the packs took about a second at 100,000 memories, and a writer adding a pack a write
// reached its backlog meanwhile and waited for it, while the merges of the packs written
// meanwhile took 1-65 ms each.
func (r *Repo) MergePacks(maxPacks int) (merged int, err error) {
	// A merge reads packs that pushes brought: a fault it meets there is an error of the
	// merge, logged and left, not the end of the server.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("merge packs of %s: %v\n%s", r.path, p, debug.Stack())
		}
	}()
	packs, err := r.takePacks(maxPacks)
	if err != nil || packs == nil {
		return 0, err
	}
	taken := make([]string, 0, len(packs)+1)
	for _, p := range packs {
		taken = append(taken, p.base)
	}
	defer func() { r.release(taken) }()
	dir := filepath.Join(r.path, "objects", "pack")
	tmp, err := os.CreateTemp(dir, "tmp_merge_")
	if err != nil {
		return 0, fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	kept := false // published: the file stays open, for reads
	defer func() {
		if !kept {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// Oldest first, so that a tree's next version finds it written (writeMerged). The merged
	// pack takes the age of its newest source, which a pack placed meanwhile is younger than.
	byAge := slices.Clone(packs)
	slices.SortFunc(byAge, func(a, b packFile) int { return cmp.Or(cmp.Compare(a.p.age, b.p.age), cmp.Compare(a.p.gen, b.p.gen)) })
	age := time.Unix(0, byAge[len(byAge)-1].p.age)
	sum, writeIndex, err := r.writeMerged(byAge, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Chtimes(tmp.Name(), age, age)
	}
	if err != nil {
		return 0, fmt.Errorf("merge packs of %s: %w", r.path, err)
	}
	base := filepath.Join(dir, "pack-"+sum.String())
	// Taken too, so that a listing of the packs leaves it to this merge to swap in; unless
	// a pack of that name is taken already (the same bytes: one of this merge's own).
	r.swap.Lock()
	if !r.merging[base] {
		r.merging[base] = true
		taken = append(taken, base)
	}
	r.swap.Unlock()
	if err := publishPack(tmp.Name(), writeIndex, base, nil); err != nil {
		return 0, err
	}
	faultAt("merged", base)
	idxData, mapped, err := readIdx(base + ".idx") // written without being held
	if err != nil {
		return 0, fmt.Errorf("merge packs of %s: read the new index: %w", r.path, err)
	}
	mp, err := openPackWithIdx(base, idxData, mapped, tmp, r.gen.Add(1))
	if err != nil {
		return 0, err
	}
	// Its trees are deltas: the order of offsets that reads of them need is sorted here, in
	// the background, not by the first reader.
	mp.idx.inOffsetOrder()
	kept = true
	// The set changes before the files go (swapPacks closes them).
	drop := map[string]bool{}
	for _, p := range packs {
		drop[p.base] = p.base != base
	}
	func() {
		r.swap.Lock()
		defer r.swap.Unlock() // release, deferred, takes it again even after a panic
		r.swapPacks([]*pack{mp}, 0, drop, false)
		r.packs.Add(-int64(len(packs) - 1)) // packs written meanwhile stay counted
	}()
	for _, p := range packs {
		if !drop[p.base] {
			continue
		}
		// The index first: git finds a pack by its index, and would report one whose pack
		// is gone as broken; a pack left without one is removed at the next Open.
		for _, ext := range []string{".idx", ".pack"} {
			if err := os.Remove(p.base + ext); err != nil && !os.IsNotExist(err) {
				return len(packs), fmt.Errorf("remove merged pack: %w", err) // merged, in the set
			}
		}
	}
	return len(packs), nil
}

// takePacks lists the packs again and returns those to merge, smallest first, among those
// that no other merge has taken, or none if there are not more than maxPacks; it marks them
// taken (release).
//
// While a merge runs, the writer asks for one after each group, and nearly every ask finds
// nothing to take (in one run at 100,000 memories, 366 of 392 took under a millisecond).
// Those are answered from the set as it stands, without listing the directory: a listing
// holds placing, which the writer's next pack waits for. With no merge running, it lists:
// packs that a git process added without a Reload (a fetch, a push to a proposal's ref) are
// taken in, and the count of packs is set again (a repack may have changed the set).
func (r *Repo) takePacks(maxPacks int) ([]packFile, error) {
	r.swap.Lock()
	defer r.swap.Unlock()
	if r.merges > 0 && len(r.untaken(r.objs.Load()))+r.merges <= maxPacks {
		return nil, nil
	}
	// Not while a pack is between its rename and joining the set: the merge would remove
	// it, and the set then take it in.
	r.placing.Lock()
	err := r.relist(nil, false)
	set := r.objs.Load()
	r.placing.Unlock()
	if err != nil {
		return nil, err
	}
	r.packs.Store(int64(len(set.packs)))
	packs := r.untaken(set)
	sort.Slice(packs, func(i, j int) bool { return packs[i].count < packs[j].count })
	// Each merge running now leaves one pack.
	left := len(packs) + r.merges
	if left <= maxPacks {
		return nil, nil
	}
	// Merge along the progression, and never leave more than maxPacks.
	k := min(max(geometricSplit(packs), left-maxPacks+1), len(packs))
	if k < 2 {
		return nil, nil
	}
	for _, p := range packs[:k] {
		r.merging[p.base] = true
	}
	r.merges++
	return packs[:k], nil
}

// untaken returns the packs of set that no merge has taken. The caller holds swap.
func (r *Repo) untaken(set *objectSet) []packFile {
	packs := make([]packFile, 0, len(set.packs))
	for _, p := range set.packs {
		if !r.merging[p.base] {
			packs = append(packs, packFile{base: p.base, count: uint32(p.idx.n), p: p})
		}
	}
	return packs
}

// release ends a merge that took the packs at bases.
func (r *Repo) release(bases []string) {
	r.swap.Lock()
	defer r.swap.Unlock()
	for _, b := range bases {
		delete(r.merging, b)
	}
	r.merges--
}

// writeMerged writes one pack with every object of packs, in their order, and returns its
// checksum and what writes its index. An object stored whole is copied as it is, compressed
// bytes and CRC included, so a merge costs I/O and little compression, except a tree, which
// becomes a delta of the last version of it written before (treedelta.go). A delta against an
// object of the same pack is copied with its base's new offset; one against another pack's
// object (git pushes send them) is resolved and written whole, since its base may not come
// along. An object in more than one pack is written from the first: the indexes tell, so the
// merge keeps no set of hashes. The new index is written from the old ones, already in the
// order of hashes, and the offset each object got (8 bytes an object), as it is made: a list
// of entries to sort (32 bytes an object) and then the whole index held (28) were a merge's
// largest memory at 100,000 memories.
func (r *Repo) writeMerged(packs []packFile, out io.Writer) (plumbing.Hash, idxEncoder, error) {
	m := &merge{r: r, ww: newWholeWriter(), cache: cache.NewObjectLRU(mergeCacheSize)}
	m.delta.zw = m.ww.zw
	count := 0
	var fanout [256]uint32 // of the objects written
	for i, p := range packs {
		x := p.p.idx
		m.own.packs = append(m.own.packs, p.p)
		s := &mergeSource{x: x, offs: make([]uint64, x.n), dup: make([]bool, x.n), depth: make([]uint8, x.n)}
		for j := 0; j < x.n; j++ {
			h := x.hash(j)
			if _, _, ok := m.earlier(i, h); ok {
				s.dup[j] = true
				continue
			}
			if j > 0 && h == x.hash(j-1) {
				// Named twice in this pack: the copy first in the pack is written, so that a
				// delta of either copy finds it written before itself (mergeSource.written).
				k := j - 1
				for s.dup[k] {
					k--
				}
				if x.offset(j) < x.offset(k) {
					s.dup[k] = true
				} else {
					s.dup[j] = true
				}
				continue
			}
			count++
			fanout[h[0]]++
		}
		m.srcs = append(m.srcs, s)
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	m.cw = &countingWriter{w: bw, h: sha1.New()}
	if _, err := m.cw.Write(packHeader(count)); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	rd := bufio.NewReaderSize(nil, 256<<10) // one for every pack: a merge runs often
	written := 0
	for i, p := range packs {
		n, err := m.copyObjects(p.base+".pack", i, rd)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		written += n
	}
	if written != count {
		return plumbing.ZeroHash, nil, fmt.Errorf("merge wrote %d objects of %d", written, count)
	}
	var sum plumbing.Hash
	copy(sum[:], m.cw.h.Sum(nil))
	if _, err := bw.Write(sum[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := bw.Flush(); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	// The sources alone, not m: its tree bases, cache and buffers can go meanwhile.
	srcs := m.srcs
	return sum, func(w io.Writer) error {
		return encodeIdx(w, count, &fanout, func(yield func(plumbing.Hash, uint32, uint64)) { mergeByHash(srcs, yield) }, sum)
	}, nil
}

// mergeSource is one pack of a merge: its index, and where the merge wrote each of its
// objects (0 for one written from an earlier pack) with a new CRC where it wrote one anew.
type mergeSource struct {
	x     *packIdx
	offs  []uint64
	dup   []bool  // held by an earlier pack of the merge, which writes it
	depth []uint8 // how many deltas a read of the object written goes through
	crcs  map[int]uint32
	next  int // the position mergeByHash is at
}

// merge is the state of writeMerged.
type merge struct {
	r     *Repo
	srcs  []*mergeSource
	cw    *countingWriter
	ww    *wholeWriter
	bases treeBases
	cache *cache.ObjectLRU
	own   objectSet  // the packs merged
	delta deltaEntry // a tree written as a delta
	hdr   []byte     // a delta copied, aimed anew
	res   resolver
	buf   []byte // an object's bytes as read from its pack, for every pack of the merge
}

// mergeCacheSize bounds what a merge keeps of the objects it reads through find, in a cache of
// its own: it reads history that readers seldom ask for.
const mergeCacheSize = 1 * cache.MiByte

// read reads an object for the merge: from its own packs, which stay open until it ends,
// else from the set's, which another merge may swap meanwhile (findSettled).
func (m *merge) read(h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, err := m.r.find(&m.own, m.cache, h, 0); err == nil {
		return o, nil
	}
	return m.r.findSettled(h, m.cache)
}

// earlier returns the source before the i-th that writes h, and h's position in it.
func (m *merge) earlier(i int, h plumbing.Hash) (*mergeSource, int, bool) {
	for _, s := range m.srcs[:i] {
		if j, ok := s.written(h); ok {
			return s, j, true
		}
	}
	return nil, 0, false
}

// written returns the position of the copy of h that the merge writes from s, if it writes
// one from s: of the copies of a name that s names twice, the first in the pack.
func (s *mergeSource) written(h plumbing.Hash) (int, bool) {
	j, ok := s.x.find(h)
	for ; ok && j < s.x.n && s.x.hash(j) == h; j++ {
		if !s.dup[j] {
			return j, true
		}
	}
	return 0, false
}

// copyObjects appends the objects of the i-th pack, read in the pack's order, but for those
// that an earlier pack holds.
func (m *merge) copyObjects(path string, i int, rd *bufio.Reader) (int, error) {
	src := m.srcs[i]
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
	end := fi.Size() - 20      // the trailer
	order := x.inOffsetOrder() // sorted already if a delta was read from the pack
	rd.Reset(io.NewSectionReader(f, 0, end))
	var pos int64
	for n, j := range order {
		off := x.offset(int(j))
		next := end
		if n+1 < len(order) {
			next = x.offset(int(order[n+1]))
		}
		if off < max(pos, 12) || next <= off || next > end {
			return 0, fmt.Errorf("read pack %s: broken offsets in its index", path)
		}
		if _, err := rd.Discard(int(off - pos)); err != nil {
			return 0, fmt.Errorf("read pack %s: %w", path, err)
		}
		size := int(next - off)
		if cap(m.buf) < size {
			m.buf = make([]byte, size)
		}
		raw := m.buf[:size]
		if _, err := io.ReadFull(rd, raw); err != nil {
			return 0, fmt.Errorf("read pack %s: %w", path, err)
		}
		pos = next
		if src.dup[j] {
			continue
		}
		if err := m.copyObject(i, int(j), off, raw); err != nil {
			return 0, fmt.Errorf("copy object %s of %s: %w", x.hash(int(j)), filepath.Base(path), err)
		}
		written++
	}
	return written, nil
}

// copyObject writes the object at position j of the i-th source, which begins at off there
// with the bytes raw.
func (m *merge) copyObject(i, j int, off int64, raw []byte) error {
	src := m.srcs[i]
	at := m.cw.off
	src.offs[j] = at
	typ, size, pos, err := objectHeader(raw)
	if err != nil {
		return err
	}
	tree := false // a delta of a tree held
	switch typ {
	case plumbing.CommitObject, plumbing.BlobObject, plumbing.TagObject:
		_, err := m.cw.Write(raw)
		return err
	case plumbing.TreeObject:
		if len(raw) < minDeltaTree {
			_, err := m.cw.Write(raw)
			return err
		}
		data, ok := storedTree(raw, pos, size, src.x.crc(j))
		if !ok {
			var err error
			if data, err = inflate(bytes.NewReader(raw[pos:]), size); err != nil {
				return err
			}
		}
		return m.writeTree(src, j, data, raw)
	case plumbing.OFSDeltaObject:
		rel, n, ok := ofsDistance(raw[pos:])
		if !ok || rel <= 0 || rel > off {
			return errors.New("broken delta offset")
		}
		bs, bj, ok := m.baseOf(i, off-rel)
		if !ok {
			return fmt.Errorf("no object at the delta's base offset %d", off-rel)
		}
		tree = m.bases.has(bs.offs[bj])
		if depth := int(bs.depth[bj]) + 1; depth <= maxDeltaChain {
			m.hdr = append(m.hdr[:0], raw[:pos]...)
			m.hdr = appendOfsDistance(m.hdr, at-bs.offs[bj])
			if bytes.Equal(m.hdr, raw[:pos+n]) {
				// As far from its base as before, as in most of a pack merged again: its
				// CRC stays too, and the merge keeps none.
				if _, err := m.cw.Write(raw); err != nil {
					return err
				}
				src.depth[j] = uint8(depth)
			} else if err := m.writeDelta(src, j, depth, m.hdr, raw[pos+n:]); err != nil {
				return err
			}
			// The next version of its folder is a delta of it, not of its base.
			m.bases.follow(bs.offs[bj], deltaBase{off: at, depth: uint8(depth), h: src.x.hash(j)})
			return nil
		}
		// Too deep: written whole, below.
	}
	// A delta too deep or against another pack's object: resolved, and written whole.
	if tree {
		data, err := m.resolve(src.x.hash(j))
		if err != nil {
			return err
		}
		return m.writeTree(src, j, data, nil)
	}
	o, err := m.read(src.x.hash(j))
	if err != nil {
		return fmt.Errorf("read object: %w", err)
	}
	if o.Type() == plumbing.TreeObject {
		data, err := ReadEncoded(o)
		if err != nil {
			return err
		}
		return m.writeTree(src, j, data, nil)
	}
	crc, err := m.ww.write(m.cw, o)
	if err != nil {
		return err
	}
	m.setCRC(src, j, crc)
	return nil
}

// storedTree returns the content of the tree whose entry in a pack is raw, its zlib stream
// from pos, if that stream is stored blocks only, as trees are written here (writeStored),
// and raw's CRC-32 is crc, the index's: the blocks' bytes copied out, without the
// decompressor and without the Adler-32, for which the CRC-32 of the same bytes stands.
// Otherwise it returns false, and the caller inflates. A merge takes every tree of the
// group packs it merges this way: inflating them was 67 µs of CPU a write at 100,000
// memories, a third of it the Adler-32.
func storedTree(raw []byte, pos int, size int64, crc uint32) ([]byte, bool) {
	z := raw[pos:]
	if len(z) < 2+5+4 || z[0] != 0x78 || z[1] != 0x01 || crc32.ChecksumIEEE(raw) != crc {
		return nil, false
	}
	data := make([]byte, 0, size)
	p := 2
	for last := false; !last; {
		if p+5 > len(z) || z[p]&^1 != 0 {
			return nil, false // not a stored block in its own bytes, as writeStored makes them
		}
		last = z[p] == 1
		n := int(binary.LittleEndian.Uint16(z[p+1:]))
		if uint16(n) != ^binary.LittleEndian.Uint16(z[p+3:]) || p+5+n > len(z) || int64(len(data)+n) > size {
			return nil, false
		}
		data = append(data, z[p+5:p+5+n]...)
		p += 5 + n
	}
	if p+4 != len(z) || int64(len(data)) != size {
		return nil, false
	}
	return data, true
}

// baseOf returns the source and position of the object at off in the i-th source, as the merge
// wrote it: there, or from an earlier source that holds it too.
func (m *merge) baseOf(i int, off int64) (*mergeSource, int, bool) {
	src := m.srcs[i]
	j, ok := src.x.atOffset(off)
	if !ok {
		return nil, 0, false
	}
	if !src.dup[j] {
		return src, j, src.offs[j] != 0
	}
	h := src.x.hash(j)
	if k, ok := src.written(h); ok { // named twice here
		return src, k, src.offs[k] != 0
	}
	return m.earlier(i, h)
}

// writeTree writes the tree at position j of src, whose content is data: as a delta of the
// likest tree with the same ends written before, if that saves most of its size and makes no
// chain too deep, else whole, from raw if that is the tree's whole entry in src.
func (m *merge) writeTree(src *mergeSource, j int, data, raw []byte) error {
	at := m.cw.off
	first, last, named := treeEnds(data)
	var kin []deltaBase
	if named {
		kin = m.bases.candidates(first, last)
	}
	// The likest is the version before of the same folder: most of their bytes match at
	// their ends, which few bytes of another folder's do. Those known only by their hash
	// (deltas copied) are read, latest first, until one is alike, and kept: reading one
	// resolves its chain, and reading them again for every tree took most of a merge's time
	// and allocations.
	like, likeData, alike := -1, []byte(nil), 0
	var prefix, suffix int // of the likest
	deep := -1             // the latest too deep in its chain to be a base: not read
	for i, b := range kin {
		if b.depth >= maxDeltaChain {
			// Reading it would resolve its whole chain, 50 deltas, for nothing: at 100,000
			// memories, 44 of the 234 reads of the merges during 1,000 writes in one run,
			// and half the bytes that they applied.
			if deep < 0 {
				deep = i
			}
			continue
		}
		d := b.data
		if d == nil && 2*alike < len(data) {
			var err error
			if d, err = m.baseData(b); err != nil {
				return err
			}
			m.bases.fill(b.off, d)
		}
		if d == nil {
			continue
		}
		if p, s := commonEnds(d, data); p+s > alike {
			like, likeData, alike, prefix, suffix = i, d, p+s, p, s
		}
	}
	done := false
	if like >= 0 && 2*alike >= len(data) {
		b := kin[like]
		worth, err := m.delta.make(likeData, data, prefix, suffix, at-b.off)
		if err != nil {
			return err
		}
		if worth {
			if err := m.writeDelta(src, j, int(b.depth)+1, m.delta.hdr, m.delta.z.Bytes()); err != nil {
				return err
			}
			done = true
		}
	}
	if !done && raw != nil {
		if _, err := m.cw.Write(raw); err != nil {
			return err
		}
	} else if !done {
		crc, err := writeTree(m.cw, data)
		if err != nil {
			return err
		}
		m.setCRC(src, j, crc)
	}
	follows := uint64(0)
	switch {
	case like >= 0 && 2*alike >= len(data):
		follows = kin[like].off
	case deep >= 0:
		// Most likely the version before, at the end of its chain: this one begins the next.
		follows = kin[deep].off
	} // else another folder's: kept beside it
	if named {
		m.bases.remember(endNames{string(first), string(last)}, follows, deltaBase{off: at, depth: src.depth[j], h: src.x.hash(j), data: data})
	}
	return nil
}

// baseData returns the content of the tree b.
func (m *merge) baseData(b deltaBase) ([]byte, error) {
	if b.data != nil {
		return b.data, nil
	}
	d, err := m.resolve(b.h)
	if err != nil {
		return nil, fmt.Errorf("read delta base: %w", err)
	}
	return d, nil
}

// writeDelta writes hdr, a delta's header, and z, its compressed content, as the object at
// position j of src, depth deltas from a whole object.
func (m *merge) writeDelta(src *mergeSource, j, depth int, hdr, z []byte) error {
	crc, err := writeEntry(m.cw, hdr, z)
	if err != nil {
		return err
	}
	src.depth[j] = uint8(depth)
	m.setCRC(src, j, crc)
	return nil
}

func (m *merge) setCRC(src *mergeSource, j int, crc uint32) {
	if src.crcs == nil {
		src.crcs = map[int]uint32{}
	}
	src.crcs[j] = crc
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
	return a.x.compareNames(a.next, b.x, b.next) < 0
}
func (h sourceHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *sourceHeap) Push(x any)   { *h = append(*h, x.(*mergeSource)) }
func (h *sourceHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}
