package odb

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/klauspost/compress/zlib"

	"github.com/gitmem/gitmem/internal/mmap"
)

// Objects are read from the packs and indexes directly, not through go-git's storage. That
// storage learns of a new pack only by rereading every index in the directory (and hashing
// each, with collision detection), so a store rebuilt it after every merge: at 100,000
// memories that was an eighth of the process's CPU and a stall for readers. Here the set of
// packs is a list that a placed pack joins and a merged one leaves, each index read once.

// packIdx is a version 2 pack index, held whole in memory: 28 bytes an object and the
// fan-out table, where go-git's decoded index also kept maps by offset. A large one is the
// file mapped (readIdx), not a copy in the heap.
type packIdx struct {
	data                      []byte
	mapped                    bool // data is the file mapped (readIdx)
	n                         int
	names, crcs, off32, off64 int // where each table begins in data

	byOffsetOnce sync.Once
	byOffset     []uint32 // positions sorted by offset, made when a delta needs its base
}

const idxHeader = 8 + 256*4

// mapIdxMin is the size from which a pack index is mapped rather than read into the heap. At
// 100,000 memories the indexes were 15 MB of the 63 MB live in the heap at the process's
// peak, and a merge held its new index there too: the collector lets the heap grow to
// twice what is live, so each byte there cost two. Mapped, an index is file pages that the
// kernel may take back. A small one, such as a group's pack's, stays in the heap: a mapping
// costs system calls and a page.
const mapIdxMin = 256 << 10

// readIdx returns the bytes of the pack index at path, mapped if it has mapIdxMin bytes or
// more and the system maps files.
func readIdx(path string) (data []byte, mapped bool, err error) {
	if data, err := mmap.Map(path, mapIdxMin); err == nil {
		return data, true, nil
	}
	data, err = os.ReadFile(path)
	return data, false, err
}

// written returns the bytes of the pack index just written at path from data: the file
// mapped if it is large, else data.
func written(path string, data []byte) (idx []byte, mapped bool) {
	if len(data) < mapIdxMin {
		return data, false
	}
	m, err := mmap.Map(path, mapIdxMin)
	if err != nil {
		return data, false
	}
	if len(m) != len(data) { // not the file just written: keep what was written
		mmap.Unmap(m)
		return data, false
	}
	return m, true
}

// newIdx parses data as a pack index. The mapping of a mapped one is undone once the index is
// unreachable, not when its pack leaves the set: a reader may still be looking in it then.
// Only its methods read data, and they keep it alive (runtime.KeepAlive) until their last
// read of the mapping.
func newIdx(data []byte, mapped bool) (*packIdx, error) {
	x, err := parseIdx(data)
	if mapped {
		if err != nil {
			mmap.Unmap(data)
			return nil, err
		}
		x.mapped = true
		runtime.AddCleanup(x, mmap.Unmap, data)
		// parseIdx read all of it. Lookups map back what they touch, and the kernel maps far
		// more than a page at a fault (architecture.md): this helps until they have spread.
		dropPages(data)
	}
	return x, err
}

// dropPages lets the pages of a mapped index go from the process (mmap.Drop).
func dropPages(data []byte) {
	mmap.Drop(uintptr(unsafe.Pointer(unsafe.SliceData(data))), int64(len(data)))
}

// parseIdx checks the layout of a version 2 index and returns it.
func parseIdx(data []byte) (*packIdx, error) {
	if len(data) < idxHeader+40 || !bytes.Equal(data[:4], idxMagic) || binary.BigEndian.Uint32(data[4:8]) != 2 {
		return nil, errors.New("not a version 2 pack index")
	}
	n := int(binary.BigEndian.Uint32(data[idxHeader-4:]))
	if n > (len(data)-idxHeader-40)/28 {
		return nil, errors.New("pack index too short for its object count")
	}
	prev := uint32(0)
	for i := 0; i < 256; i++ {
		v := binary.BigEndian.Uint32(data[8+4*i:])
		if v < prev {
			return nil, errors.New("pack index fan-out table goes down")
		}
		prev = v
	}
	x := &packIdx{data: data, n: n, names: idxHeader}
	x.crcs = x.names + 20*n
	x.off32 = x.crcs + 4*n
	x.off64 = x.off32 + 4*n
	large := 0
	for i := 0; i < n; i++ {
		if binary.BigEndian.Uint32(data[x.off32+4*i:])&0x80000000 != 0 {
			large++
		}
	}
	if x.off64+8*large+40 != len(data) {
		return nil, errors.New("pack index size does not match its tables")
	}
	// Every lookup and merge takes the names for sorted, each within its fan-out range. A
	// name may come twice: recovery wrote such packs before it removed repeats (find takes
	// the first, and a merge keeps one).
	for i := 0; i < n; i++ {
		name := data[x.names+20*i : x.names+20*i+20]
		if i > 0 && bytes.Compare(data[x.names+20*(i-1):x.names+20*i], name) > 0 {
			return nil, errors.New("pack index names are not in order")
		}
		below := 0
		if name[0] > 0 {
			below = int(binary.BigEndian.Uint32(data[8+4*(int(name[0])-1):]))
		}
		if i < below || i >= int(binary.BigEndian.Uint32(data[8+4*int(name[0]):])) {
			return nil, errors.New("pack index names do not match its fan-out table")
		}
	}
	return x, nil
}

func (x *packIdx) hash(i int) plumbing.Hash {
	var h plumbing.Hash
	copy(h[:], x.data[x.names+20*i:])
	runtime.KeepAlive(x)
	return h
}

func (x *packIdx) crc(i int) uint32 {
	v := binary.BigEndian.Uint32(x.data[x.crcs+4*i:])
	runtime.KeepAlive(x)
	return v
}

func (x *packIdx) offset(i int) int64 {
	v := binary.BigEndian.Uint32(x.data[x.off32+4*i:])
	if v&0x80000000 == 0 {
		return int64(v)
	}
	j := int(v & 0x7fffffff)
	if x.off64+8*j+8 > len(x.data)-40 {
		return -1
	}
	off := int64(binary.BigEndian.Uint64(x.data[x.off64+8*j:]))
	runtime.KeepAlive(x)
	return off
}

// compareNames compares the name at position i with the name at position j of y.
func (x *packIdx) compareNames(i int, y *packIdx, j int) int {
	c := bytes.Compare(x.data[x.names+20*i:x.names+20*i+20], y.data[y.names+20*j:y.names+20*j+20])
	runtime.KeepAlive(x)
	runtime.KeepAlive(y)
	return c
}

// find returns the position of h, through the fan-out table and a binary search.
func (x *packIdx) find(h plumbing.Hash) (int, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(binary.BigEndian.Uint32(x.data[8+4*(int(h[0])-1):]))
	}
	hi := int(binary.BigEndian.Uint32(x.data[8+4*int(h[0]):]))
	lo, hi = min(lo, x.n), min(hi, x.n)
	for lo < hi { // to the first name not below h
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(x.data[x.names+20*m:x.names+20*m+20], h[:]) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	found := lo < x.n && bytes.Equal(x.data[x.names+20*lo:x.names+20*lo+20], h[:])
	runtime.KeepAlive(x)
	if found {
		return lo, true
	}
	return 0, false
}

// sortedByOffset returns the positions of the objects in the order of the pack.
func (x *packIdx) sortedByOffset() []uint32 {
	order := make([]uint32, x.n)
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(x.offset(int(a)), x.offset(int(b))) })
	return order
}

// inOffsetOrder returns the positions of the objects in the order of the pack, sorted once.
func (x *packIdx) inOffsetOrder() []uint32 {
	x.byOffsetOnce.Do(func() { x.byOffset = x.sortedByOffset() })
	return x.byOffset
}

// atOffset returns the position of the object that begins at off.
func (x *packIdx) atOffset(off int64) (int, bool) {
	order := x.inOffsetOrder()
	i, ok := slices.BinarySearchFunc(order, off, func(p uint32, off int64) int { return cmp.Compare(x.offset(int(p)), off) })
	if !ok {
		return 0, false
	}
	return int(order[i]), true
}

// pack is one pack of the set: its index and its file, open for reading.
type pack struct {
	base string // objects/pack/pack-<hash>, without extension
	idx  *packIdx
	f    *os.File
	size int64
	gen  uint64 // when it joined the set
	// age is when its newest objects were written: its file's time, which a merge sets to
	// its newest source's (as nanoseconds since 1970).
	age int64
}

// openPack opens the pack at base and reads its index, which must be whole (its checksum)
// and name the pack (the pack's trailer): a damaged index would point reads at the wrong
// bytes.
func openPack(base string, gen uint64) (*pack, error) {
	data, mapped, err := readIdx(base + ".idx")
	if err != nil {
		return nil, fmt.Errorf("read pack index: %w", err)
	}
	if len(data) < 40 || !trailerMatches(data) {
		if mapped {
			mmap.Unmap(data)
		}
		return nil, fmt.Errorf("read pack index %s.idx: checksum does not match", base)
	}
	var packSum [20]byte // read now: newIdx lets a mapped index's pages go
	copy(packSum[:], data[len(data)-40:])
	p, err := openPackWithIdx(base, data, mapped, nil, gen)
	if err != nil {
		return nil, err
	}
	var trailer [20]byte
	if _, err := p.f.ReadAt(trailer[:], p.size-20); err != nil || trailer != packSum {
		p.f.Close()
		return nil, fmt.Errorf("pack %s.pack does not match its index", base)
	}
	return p, nil
}

// openPackWithIdx opens the pack at base with the index data (mapped, or in the heap); f, if
// not nil, is the pack already open.
func openPackWithIdx(base string, data []byte, mapped bool, f *os.File, gen uint64) (*pack, error) {
	x, err := newIdx(data, mapped)
	if err != nil {
		return nil, fmt.Errorf("read pack index %s.idx: %w", base, err)
	}
	if f == nil {
		if f, err = os.Open(base + ".pack"); err != nil {
			return nil, fmt.Errorf("open pack: %w", err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open pack: %w", err)
	}
	return &pack{base: base, idx: x, f: f, size: fi.Size(), gen: gen, age: fi.ModTime().UnixNano()}, nil
}

// objectSet is the packs that reads look in, newest first. It is never changed: a change
// makes a new set, so readers use one without a lock. A pack left out of a set is closed
// (swapPacks); a reader that was still reading it gets an error and Object tries again.
type objectSet struct {
	packs []*pack
	// cache holds objects read from these packs lately, by hash. A set made after packs were
	// rewritten without some objects (gc, a redaction) gets a new one, so that a reader of
	// the old set can only fill the old cache.
	cache *cache.ObjectLRU
}

func (s *objectSet) get(base string) *pack {
	for _, p := range s.packs {
		if p.base == base {
			return p
		}
	}
	return nil
}

// readObject is an object read from the repository. Its hash is the one it was found by, as
// git trusts its indexes, so it is not computed again.
type readObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
}

func (o *readObject) Hash() plumbing.Hash         { return o.h }
func (o *readObject) Type() plumbing.ObjectType   { return o.t }
func (o *readObject) SetType(plumbing.ObjectType) {}
func (o *readObject) Size() int64                 { return int64(len(o.data)) }
func (o *readObject) SetSize(int64)               {}
func (o *readObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.data)), nil
}
func (o *readObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("an object read from the repository cannot be written")
}

// maxDeltaDepth bounds a chain of deltas, against a pack whose deltas loop; git's own
// limit is 4095.
const maxDeltaDepth = 5000

// maxObjectSize bounds what one object's header may claim, so that a broken or hostile pack
// cannot make a read allocate without limit.
const maxObjectSize = 64 << 20

var errNotFound = plumbing.ErrObjectNotFound

// find reads h from c, the packs of set, or a loose file, and keeps what it reads from the
// packs in c: the set's cache, or a merge's own.
func (r *Repo) find(set *objectSet, c cache.Object, h plumbing.Hash, depth int) (plumbing.EncodedObject, error) {
	if o, ok := c.Get(h); ok {
		return o, nil
	}
	if depth > maxDeltaDepth {
		return nil, fmt.Errorf("read object %s: deltas nested deeper than %d", h, maxDeltaDepth)
	}
	for _, p := range set.packs {
		if i, ok := p.idx.find(h); ok {
			t, data, err := r.readPacked(set, c, p, p.idx.offset(i), depth)
			if err != nil && depth == 0 { // once, not at every level of a chain
				return nil, fmt.Errorf("read object %s from %s.pack: %w", h, filepath.Base(p.base), err)
			}
			if err != nil {
				return nil, err
			}
			o := &readObject{h: h, t: t, data: data}
			c.Put(o)
			return o, nil
		}
	}
	// Loose objects are not cached: a redaction removes them after the packs' swap.
	return r.readLoose(h)
}

// readPacked reads the object at off in p, resolving a delta against its base.
func (r *Repo) readPacked(set *objectSet, c cache.Object, p *pack, off int64, depth int) (plumbing.ObjectType, []byte, error) {
	e, err := p.entryAt(off)
	if err != nil {
		return 0, nil, err
	}
	var base plumbing.EncodedObject
	switch e.typ {
	case plumbing.OFSDeltaObject:
		i, ok := p.idx.atOffset(e.base)
		if !ok {
			return 0, nil, fmt.Errorf("no object at the delta's base offset %d", e.base)
		}
		// The base at its offset, not by its name: a pack that names an object twice may
		// hold one copy as a delta of the other, and the name leads back to the delta.
		h := p.idx.hash(i)
		if base, ok = c.Get(h); !ok {
			if depth+1 > maxDeltaDepth {
				return 0, nil, fmt.Errorf("read object %s: deltas nested deeper than %d", h, maxDeltaDepth)
			}
			t, data, err := r.readPacked(set, c, p, e.base, depth+1)
			if err != nil {
				return 0, nil, err
			}
			base = &readObject{h: h, t: t, data: data}
			c.Put(base)
		}
	case plumbing.REFDeltaObject:
		if base, err = r.find(set, c, e.ref, depth+1); err != nil {
			return 0, nil, err
		}
	}
	data, err := p.inflateAt(nil, e)
	if err != nil {
		return 0, nil, err
	}
	if base == nil {
		return e.typ, data, nil
	}
	var src []byte
	if ro, ok := base.(*readObject); ok {
		src = ro.data
	} else if src, err = ReadEncoded(base); err != nil {
		return 0, nil, err
	}
	out, err := applyDelta(nil, src, data)
	if err != nil {
		return 0, nil, fmt.Errorf("apply delta: %w", err)
	}
	return base.Type(), out, nil
}

// packEntry is the header of an object in a pack.
type packEntry struct {
	typ  plumbing.ObjectType
	size int64         // of its zlib content: the object's, or the delta's
	data int64         // where its zlib content begins
	base int64         // an OFS_DELTA's base's offset
	ref  plumbing.Hash // a REF_DELTA's base
}

// entryAt reads the header of the object at off.
func (p *pack) entryAt(off int64) (packEntry, error) {
	if off < 12 || off >= p.size-20 {
		return packEntry{}, fmt.Errorf("offset %d outside the pack", off)
	}
	var hdr [40]byte
	n, err := p.f.ReadAt(hdr[:], off)
	if n == 0 {
		return packEntry{}, err
	}
	b := hdr[:n]
	t, size, pos, err := objectHeader(b)
	if err != nil {
		return packEntry{}, err
	}
	e := packEntry{typ: t, size: size}
	switch t {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		rel, k, ok := ofsDistance(b[pos:])
		if !ok || rel <= 0 || rel > off {
			return packEntry{}, errors.New("broken delta offset")
		}
		e.base = off - rel
		pos += k
	case plumbing.REFDeltaObject:
		if pos+20 > len(b) {
			return packEntry{}, errors.New("broken delta header")
		}
		copy(e.ref[:], b[pos:pos+20])
		pos += 20
	default:
		return packEntry{}, fmt.Errorf("unknown object type %d", t)
	}
	e.data = off + int64(pos)
	return e, nil
}

// packReaders are buffered readers for inflateAt: zlib would make one for every object
// otherwise, 4 KB each (the most allocated bytes of merges that resolved deltas).
var packReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// inflateAt inflates e's zlib content, into dst's space if large enough.
func (p *pack) inflateAt(dst []byte, e packEntry) ([]byte, error) {
	br := packReaders.Get().(*bufio.Reader)
	defer packReaders.Put(br)
	br.Reset(io.NewSectionReader(p.f, e.data, p.size-20-e.data))
	defer br.Reset(nil)
	return inflateTo(dst, br, e.size)
}

// deltaSize decodes one of the sizes that begin a delta: seven bits a byte, low first.
func deltaSize(b []byte) (uint64, []byte, bool) {
	var v uint64
	for i, shift := 0, 0; i < len(b) && shift < 64; i, shift = i+1, shift+7 {
		v |= uint64(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}

// objectHeader decodes the type and size that begin an object in a pack (three bits of type,
// then the size, four bits and seven a byte after, low first) and returns how many bytes
// they took.
func objectHeader(b []byte) (plumbing.ObjectType, int64, int, error) {
	if len(b) == 0 {
		return 0, 0, 0, errors.New("broken object header")
	}
	t := plumbing.ObjectType((b[0] >> 4) & 7)
	size := int64(b[0] & 0x0f)
	pos, shift := 1, 4
	for b[pos-1]&0x80 != 0 {
		if pos >= len(b) || shift > 56 {
			return 0, 0, 0, errors.New("broken object header")
		}
		size |= int64(b[pos]&0x7f) << shift
		shift += 7
		pos++
	}
	return t, size, pos, nil
}

var zlibReaders sync.Pool

// inflate reads exactly size bytes of zlib data from rd.
func inflate(rd io.Reader, size int64) ([]byte, error) {
	return inflateTo(nil, rd, size)
}

// inflateTo is inflate into dst's space, which it reuses when large enough.
func inflateTo(dst []byte, rd io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > maxObjectSize {
		return nil, fmt.Errorf("object of %d bytes: larger than allowed", size)
	}
	var zr io.ReadCloser
	if v := zlibReaders.Get(); v != nil {
		zr = v.(io.ReadCloser)
		if err := zr.(zlib.Resetter).Reset(rd, nil); err != nil {
			return nil, fmt.Errorf("inflate object: %w", err)
		}
	} else {
		var err error
		if zr, err = zlib.NewReader(rd); err != nil {
			return nil, fmt.Errorf("inflate object: %w", err)
		}
	}
	defer zlibReaders.Put(zr)
	if size <= 1<<20 {
		// Into a slice of the size said: a buffer that reads to the end grows past it, to
		// twice the size for a tree that a merge then keeps.
		if int64(cap(dst)) < size {
			dst = make([]byte, size)
		}
		dst = dst[:size]
		if n, err := io.ReadFull(zr, dst); err != nil {
			return nil, fmt.Errorf("object holds %d bytes where its header says %d: %w", n, size, err)
		}
		var one [1]byte
		for {
			n, err := zr.Read(one[:])
			if n > 0 {
				return nil, fmt.Errorf("object holds more bytes than its header says (%d)", size)
			}
			if err == io.EOF {
				return dst, nil
			}
			if err != nil {
				return nil, fmt.Errorf("inflate object: %w", err)
			}
		}
	}
	// Larger: grown as it fills, as a header may claim more than the data holds.
	if int64(cap(dst)) < min(size, 1<<20) {
		dst = make([]byte, 0, min(size, 1<<20))
	}
	buf := bytes.NewBuffer(dst[:0])
	if _, err := io.Copy(buf, io.LimitReader(zr, size+1)); err != nil {
		return nil, fmt.Errorf("inflate object: %w", err)
	}
	if int64(buf.Len()) != size {
		return nil, fmt.Errorf("object holds %d bytes where its header says %d", buf.Len(), size)
	}
	return buf.Bytes(), nil
}

// readLoose reads a loose object, as git processes leave them: zlib data of "type size\0"
// and the content.
func (r *Repo) readLoose(h plumbing.Hash) (*readObject, error) {
	f, err := os.Open(r.LoosePath(h))
	if os.IsNotExist(err) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	// A header and a content at most a thousand times the compressed size, as zlib can.
	raw, err := inflateAll(f, min(maxObjectSize, 64+1032*fi.Size()))
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", h, err)
	}
	head, data, ok := bytes.Cut(raw, []byte{0})
	typ, size, ok2 := strings.Cut(string(head), " ")
	t, terr := plumbing.ParseObjectType(typ)
	n, nerr := strconv.Atoi(size)
	whole := t == plumbing.CommitObject || t == plumbing.TreeObject || t == plumbing.BlobObject || t == plumbing.TagObject
	digits := size != "" && strings.Trim(size, "0123456789") == "" && (size == "0" || size[0] != '0')
	if !ok || !ok2 || terr != nil || nerr != nil || !whole || !digits || n != len(data) {
		return nil, fmt.Errorf("read object %s: broken loose object header", h)
	}
	return &readObject{h: h, t: t, data: data}, nil
}

func inflateAll(rd io.Reader, limit int64) ([]byte, error) {
	zr, err := zlib.NewReader(rd)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	b, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errors.New("object larger than allowed")
	}
	return b, nil
}

// listPacks opens the packs in the directory, reusing those of cur; the caller holds swap.
// A pack that cannot be read is left out, with a warning: its objects read as missing.
func (r *Repo) listPacks(cur *objectSet) ([]*pack, error) {
	bases, err := r.packBases()
	if err != nil {
		return nil, err
	}
	var packs []*pack
	for _, base := range bases {
		if p := cur.get(base); p != nil {
			packs = append(packs, p)
			continue
		}
		if r.merging[base] {
			// A merge's pack, not yet in the set or out of it and not yet removed: the
			// merge swaps it in or removes it.
			continue
		}
		p, err := openPack(base, r.gen.Add(1))
		if err != nil {
			if !os.IsNotExist(errors.Unwrap(err)) { // a pack still without its index: not yet
				warnPack(base, err)
			}
			continue
		}
		packs = append(packs, p)
	}
	// Newest first: recent objects are the ones read most.
	slices.SortFunc(packs, func(a, b *pack) int { return cmp.Compare(b.gen, a.gen) })
	return packs, nil
}

// swapPacks makes the set the packs listed now, with those placed since since (which a
// listing begun before them may have missed), minus drop; with fresh, a new cache. The
// caller holds swap.
func (r *Repo) swapPacks(listed []*pack, since uint64, drop map[string]bool, fresh bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.objs.Load()
	next := &objectSet{cache: cur.cache}
	if fresh {
		next.cache = cache.NewObjectLRU(objectCacheSize)
	}
	seen := map[string]bool{}
	for _, p := range cur.packs {
		if p.gen > since && !drop[p.base] {
			next.packs = append(next.packs, p)
			seen[p.base] = true
		}
	}
	for _, p := range listed {
		if !seen[p.base] && !drop[p.base] {
			next.packs = append(next.packs, p)
			seen[p.base] = true
		}
	}
	r.objs.Store(next)
	// The files of packs left out close now, not when collected: an unlinked file keeps its
	// space until then (a full disk stayed full after a merge). A reader still on the old
	// set gets an error, and Object reads again from the new one.
	kept := make(map[*pack]bool, len(next.packs))
	for _, p := range next.packs {
		kept[p] = true
	}
	for _, p := range append(cur.packs, listed...) {
		if !kept[p] {
			kept[p] = true // closed once
			p.f.Close()
			if p.idx.mapped {
				dropPages(p.idx.data) // not unmapped: a reader may still be looking in it
			}
		}
	}
}

// addPack puts a pack that was just placed at the front of the set.
func (r *Repo) addPack(p *pack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.objs.Load()
	next := &objectSet{packs: make([]*pack, 0, len(cur.packs)+1), cache: cur.cache}
	next.packs = append(next.packs, p)
	next.packs = append(next.packs, cur.packs...)
	r.objs.Store(next)
}
