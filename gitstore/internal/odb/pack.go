package odb

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"

	"github.com/gitmem/gitmem/internal/durable"
)

// countingWriter hashes (if h is set) and counts what passes through it, as a pack's
// trailer and offsets need.
type countingWriter struct {
	w   io.Writer
	h   hash.Hash
	off uint64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if c.h != nil {
		c.h.Write(p[:n])
	}
	c.off += uint64(n)
	return n, err
}

// wholeWriter writes objects whole into a pack: type and size, then the zlib-compressed
// content. It reuses its compressors, which are costly to make.
//
// Trees are stored without compression: a tree is mostly hashes, which nothing compresses,
// beside short names. Measured on a tree of 1,000 entries (32 KB, the root folder of a store
// of 100,000 memories in folders of 100, which every write makes a new version of), zlib's
// fastest level took 106 µs for 24.2 KB, a quarter of a write's CPU at that size, and
// Huffman coding alone 50 µs for 27.7 KB. Stored, it takes a copy, and so does reading it
// back, which a merge does for every tree to make it a delta (treedelta.go); the bytes
// saved would last only until then. Blobs and commits are text, where matching pays.
type wholeWriter struct {
	zw *zlib.Writer
}

// Whole is an object that holds its content and hands it out without a copy, as the trees
// that the writer builds do: a write at 100,000 memories rebuilds a folder of 33 KB, which a
// pack's encoding read through Reader into a copy of its own before.
type Whole interface {
	// Content returns the object's content, which the caller must not change.
	Content() []byte
}

// Summed is a Whole object that may know its content's Adler-32, which a pack's entry of it
// ends with (writeStored): the writer updates a wide folder's from its version before,
// where computing it took 17 µs of a write at 100,000 memories.
type Summed interface {
	Adler32() (sum uint32, known bool)
}

// wholeContent returns o's content: its own bytes if it is Whole, else a copy read.
func wholeContent(o plumbing.EncodedObject) ([]byte, error) {
	if w, ok := o.(Whole); ok {
		return w.Content(), nil
	}
	return ReadEncoded(o)
}

// wholeWriters keeps compressors for encodePack: making one costs more than compressing a
// small group's objects with it.
var wholeWriters = sync.Pool{New: func() any { return newWholeWriter() }}

func newWholeWriter() *wholeWriter {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return &wholeWriter{zw: zw}
}

// write writes o to w and returns the CRC-32 of the bytes written, as the pack index needs.
func (ww *wholeWriter) write(w io.Writer, o plumbing.EncodedObject) (uint32, error) {
	if o.Type() == plumbing.TreeObject {
		data, err := wholeContent(o)
		if err != nil {
			return 0, err
		}
		if s, ok := o.(Summed); ok {
			if sum, known := s.Adler32(); known {
				return writeSummedTree(w, data, sum)
			}
		}
		return writeTree(w, data)
	}
	rd, err := o.Reader()
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	crc := crc32.NewIEEE()
	mw := io.MultiWriter(w, crc)
	if _, err := mw.Write(appendObjectHeader(nil, byte(o.Type()), int(o.Size()))); err != nil {
		return 0, err
	}
	ww.zw.Reset(mw)
	if _, err := io.Copy(ww.zw, rd); err != nil {
		return 0, err
	}
	if err := ww.zw.Close(); err != nil {
		return 0, err
	}
	return crc.Sum32(), nil
}

// writeTree writes a tree whose content is data to w, whole and stored (wholeWriter), and
// returns the CRC-32 of the bytes written.
func writeTree(w io.Writer, data []byte) (uint32, error) {
	return writeSummedTree(w, data, adler32.Checksum(data))
}

// writeSummedTree is writeTree for data whose Adler-32 is sum.
func writeSummedTree(w io.Writer, data []byte, sum uint32) (uint32, error) {
	crc := crc32.NewIEEE()
	mw := io.MultiWriter(w, crc)
	if _, err := mw.Write(appendObjectHeader(nil, byte(plumbing.TreeObject), len(data))); err != nil {
		return 0, err
	}
	if err := writeStored(mw, data, sum); err != nil {
		return 0, err
	}
	return crc.Sum32(), nil
}

// writeStored writes data to w as a zlib stream without compression: zlib's header, stored
// deflate blocks of at most 65,535 bytes each (RFC 1951, 3.2.4), and data's Adler-32, sum. zlib's
// writer at NoCompression makes the same kind of stream but copies the bytes through its
// window first: 47 µs of a write's 530 µs of CPU at 100,000 memories, for the 33 KB folder.
func writeStored(w io.Writer, data []byte, sum uint32) error {
	if _, err := w.Write([]byte{0x78, 0x01}); err != nil { // deflate, 32 KB window, no level
		return err
	}
	var hdr [5]byte
	for rest := data; ; {
		n := min(len(rest), 0xffff)
		hdr[0] = 0
		if n == len(rest) {
			hdr[0] = 1 // the last block
		}
		binary.LittleEndian.PutUint16(hdr[1:], uint16(n))
		binary.LittleEndian.PutUint16(hdr[3:], ^uint16(n))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(rest[:n]); err != nil {
			return err
		}
		if rest = rest[n:]; len(rest) == 0 {
			break
		}
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, sum))
	return err
}

// writeIdx writes a pack index at path with encode, through a temporary file that is
// fsynced and renamed; the caller fsyncs the directory.
func writeIdx(encode idxEncoder, path string, file *os.File) error {
	tmp, err := durable.Use(file, path, 0o600)
	if err != nil {
		return err
	}
	defer tmp.Discard()
	if err := encode(tmp); err != nil {
		return fmt.Errorf("write pack index: %w", err)
	}
	return tmp.Commit()
}

// idxEncoder writes a pack index to w.
type idxEncoder func(w io.Writer) error

// idxBytes writes the index idx, encoded already.
func idxBytes(idx []byte) idxEncoder {
	return func(w io.Writer) error {
		_, err := w.Write(idx)
		return err
	}
}

// WritePack writes objects as one new pack with its index, durably, and adds it to the set
// that reads look in. One pack per group of commits costs a few file operations whatever the group's
// size, where loose objects would cost a file each. The writer's groups use Publish, which
// makes them durable through the journal instead; WritePack is for rewrites of history.
func (r *Repo) WritePack(objs []plumbing.EncodedObject) error {
	p, err := encodePack(objs)
	if err != nil {
		return err
	}
	return r.placePack(p, true, r.spares.take)
}

// encodedPack is a pack in memory, with its index.
type encodedPack struct {
	data []byte
	idx  *packIndex
}

// packBuffers keeps the buffers of groups' packs for the next groups: at 100,000 memories a
// write's pack is 40 KB (the 1,000-entry top folder, whole), which the collector otherwise
// reclaimed for every write. Larger ones (64 writers' groups) are left to it.
var packBuffers sync.Pool

const maxPooledPack = 256 << 10

// packBuffer returns an empty slice with room for n bytes.
func packBuffer(n int) []byte {
	if v, ok := packBuffers.Get().(*[]byte); ok {
		if cap(*v) >= n {
			return (*v)[:0]
		}
		packBuffers.Put(v)
	}
	return make([]byte, 0, n)
}

// release gives p's buffer back for another pack; p's data must not be used after.
func (p *encodedPack) release() {
	if cap(p.data) <= maxPooledPack {
		b := p.data[:0]
		packBuffers.Put(&b)
	}
	p.data = nil
}

func (p *encodedPack) base(dir string) string {
	return filepath.Join(dir, "pack-"+p.idx.packSum.String())
}

// packHeader is the start of a version 2 pack of n objects.
func packHeader(n int) []byte {
	h := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(h[8:], uint32(n))
	return h
}

// idxMagic begins a version 2 pack index, before the version number.
var idxMagic = []byte{0xff, 't', 'O', 'c'}

// encodePack writes objects into a pack in memory and builds its index: whole, but for the
// trees of a group of several commits, which may be deltas of each other (groupdelta.go).
func encodePack(objs []plumbing.EncodedObject) (*encodedPack, error) {
	return encodeAfter(objs, nil)
}

// encodeAfter is encodePack for a group of the writer's: with sums, the writer's last pack's
// (packsums.go), a pack of one commit begins with its widest tree, and its checksum resumes
// from the pack before's.
func encodeAfter(objs []plumbing.EncodedObject, sums *packSums) (*encodedPack, error) {
	several := worthDeltas(objs)
	wideFirst := false
	if sums != nil && !several {
		objs, wideFirst = widestFirst(objs)
	}
	// Room for the objects uncompressed, as trees are stored, so that the buffer does not
	// double past it: with 64 writers, a group's pack is megabytes.
	room := 12 + 20
	for _, o := range objs {
		room += int(o.Size()) + 32
	}
	buf := bytes.NewBuffer(packBuffer(room))
	cw := &countingWriter{w: buf} // the checksum is taken at the end, over buf
	cw.Write(packHeader(len(objs)))
	first := 0 // where the first object ends, if a wide tree
	p := &encodedPack{idx: &packIndex{entries: make([]indexEntry, 0, len(objs))}}
	ww := wholeWriters.Get().(*wholeWriter)
	defer wholeWriters.Put(ww)
	var deltas *groupDeltas // trees as deltas of their versions before (groupdelta.go)
	if several {
		deltas = &groupDeltas{last: map[endNames][]groupTree{}, delta: deltaEntry{zw: ww.zw}}
	}
	for _, o := range objs {
		off := cw.off
		var crc uint32
		var err error
		if deltas != nil && o.Type() == plumbing.TreeObject && o.Size() >= minDeltaTree {
			var data []byte
			if data, err = wholeContent(o); err == nil {
				crc, err = deltas.write(cw, data)
			}
		} else {
			crc, err = ww.write(cw, o)
		}
		if err != nil {
			return nil, fmt.Errorf("write object %s: %w", o.Hash(), err)
		}
		p.idx.add(o.Hash(), off, crc)
		if wideFirst && first == 0 {
			first = int(cw.off)
		}
	}
	if sums != nil {
		p.idx.packSum = sums.sum(buf.Bytes(), first)
	} else {
		p.idx.packSum = sha1.Sum(buf.Bytes())
	}
	buf.Write(p.idx.packSum[:])
	p.data = buf.Bytes()
	return p, nil
}

// placePack writes p and its index into empty files from take (spares.take, made ahead) and
// renames them into place, index first; if durably, each is fsynced before its rename and
// the directory after. The pack then joins the set that reads look in. Its objects are not
// cached: the writer keeps what it needs, and a cache of every write would double the heap's
// peak for nothing.
func (r *Repo) placePack(p *encodedPack, durably bool, take func() (*os.File, error)) error {
	dir := filepath.Join(r.path, "objects", "pack") // made by Init; Open fails without it
	tmp, err := take()
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	kept := false // placed: the file stays open, for reads
	defer func() {
		if !kept { // an unlink of a name renamed away still costs 25 us here
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	idxFile, err := take()
	if err != nil {
		return fmt.Errorf("write pack index: %w", err)
	}
	defer func() {
		idxFile.Close()
		if !kept {
			os.Remove(idxFile.Name())
		}
	}()
	if _, err := tmp.Write(p.data); err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	base := p.base(dir)
	idxData := p.idx.encode()
	r.placing.RLock() // from the renames until the pack is in the set (MergePacks)
	defer r.placing.RUnlock()
	if durably {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("write pack: %w", err)
		}
		if err := publishPack(tmp.Name(), idxBytes(idxData), base, idxFile); err != nil {
			return err
		}
	} else {
		if _, err := idxFile.Write(idxData); err != nil {
			return fmt.Errorf("write pack index: %w", err)
		}
		if err := os.Rename(idxFile.Name(), base+".idx"); err != nil {
			return fmt.Errorf("publish pack index: %w", err)
		}
		if err := os.Rename(tmp.Name(), base+".pack"); err != nil {
			return fmt.Errorf("publish pack: %w", err)
		}
	}
	idxData, mapped := written(base+".idx", idxData)
	np, err := openPackWithIdx(base, idxData, mapped, tmp, r.gen.Add(1))
	if err != nil {
		return err
	}
	kept = true
	r.addPack(np)
	r.packs.Add(1)
	return nil
}

// publishPack makes a written and fsynced pack visible: its index first (written by encode
// and fsynced through a temporary file), then the pack, then the directory fsynced.
// idxFile, if not nil, is an empty temporary file beside it to write the index into.
func publishPack(tmpPack string, encode idxEncoder, base string, idxFile *os.File) error {
	if err := writeIdx(encode, base+".idx", idxFile); err != nil {
		return err
	}
	if err := os.Rename(tmpPack, base+".pack"); err != nil {
		return fmt.Errorf("publish pack: %w", err)
	}
	return durable.SyncDir(filepath.Dir(base))
}

// LoosePath returns the path of the loose object h.
func (r *Repo) LoosePath(h plumbing.Hash) string {
	s := h.String()
	return filepath.Join(r.path, "objects", s[:2], s[2:])
}

// listLoose finds the loose objects on disk.
func (r *Repo) listLoose() ([]plumbing.Hash, error) {
	dirs, err := os.ReadDir(filepath.Join(r.path, "objects"))
	if err != nil {
		return nil, fmt.Errorf("list objects of %s: %w", r.path, err)
	}
	var hs []plumbing.Hash
	for _, d := range dirs {
		if len(d.Name()) != 2 || !d.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(r.path, "objects", d.Name()))
		if err != nil {
			return nil, fmt.Errorf("list objects of %s: %w", r.path, err)
		}
		for _, f := range files {
			if len(f.Name()) == 38 && !strings.HasPrefix(f.Name(), "tmp") {
				h, ok := ParseHash(d.Name() + f.Name())
				if ok {
					hs = append(hs, h)
				}
			}
		}
	}
	return hs, nil
}

// PackLoose moves loose objects (written by git processes, such as a push) into one pack: it
// writes and fsyncs the pack and its index, adds them to the set, and only then removes the
// loose files. It returns how many objects it packed.
func (r *Repo) PackLoose() (int, error) {
	r.swap.Lock() // it changes the set of packs, as a merge or a reload does
	defer r.swap.Unlock()
	loose, err := r.listLoose()
	if err != nil || len(loose) == 0 {
		return 0, err
	}
	hs := dedupe(loose)
	objs := make([]plumbing.EncodedObject, 0, len(hs))
	for _, h := range hs {
		o, err := r.readLoose(h)
		if err != nil {
			return 0, fmt.Errorf("pack loose objects of %s: %w", r.path, err)
		}
		objs = append(objs, o)
	}
	p, err := encodePack(objs)
	if err != nil {
		return 0, fmt.Errorf("pack %d loose objects of %s: %w", len(hs), r.path, err)
	}
	if err := r.placePack(p, true, r.spares.take); err != nil {
		return 0, err
	}
	for _, h := range hs {
		if err := os.Remove(r.LoosePath(h)); err != nil && !os.IsNotExist(err) {
			return len(hs), fmt.Errorf("remove packed loose object: %w", err) // packed, in the set
		}
	}
	return len(hs), nil
}
