package odb

import (
	"bytes"
	stdzlib "compress/zlib"
	"context"
	"crypto/sha1"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"
)

// TestReadGitObjects reads every object of a repository as git wrote it: packs of deltas
// against an offset and against a hash (git repack), and loose objects (git hash-object).
// Each must read as git cat-file prints it.
func TestReadGitObjects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		kind   plumbing.ObjectType // the deltas that the pack must hold
	}{
		{"offset deltas", "repack.useDeltaBaseOffset=true", plumbing.OFSDeltaObject},
		{"hash deltas", "repack.useDeltaBaseOffset=false", plumbing.REFDeltaObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := initTestRepo(t)
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			parent := plumbing.ZeroHash
			long := strings.Repeat("The user prefers short answers and plain words. ", 40)
			for i := 0; i < 20; i++ {
				objs := commitObjects(t, parent, fmt.Sprintf("%s\nversion %d\n", long, i))
				if err := r.WritePack(objs); err != nil {
					t.Fatal(err)
				}
				if err := r.CASRef(parent, head(objs)); err != nil {
					t.Fatal(err)
				}
				parent = head(objs)
			}
			ctx := context.Background()
			if err := r.Git(ctx, "-c", tc.config, "repack", "-a", "-d", "-f", "-q", "--depth=10", "--window=20"); err != nil {
				t.Fatal(err)
			}
			loose := filepath.Join(t.TempDir(), "loose.md")
			if err := os.WriteFile(loose, []byte("a loose note\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := r.Git(ctx, "hash-object", "-w", loose); err != nil {
				t.Fatal(err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			packs, _ := filepath.Glob(filepath.Join(path, "objects", "pack", "*.idx"))
			if len(packs) != 1 {
				t.Fatalf("%d packs after repack, want 1", len(packs))
			}
			r, err = Open(path) // a fresh cache: every object is read from disk
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			p := r.objs.Load().packs[0]
			deltas := 0
			for i := 0; i < p.idx.n; i++ {
				var b [1]byte
				if _, err := p.f.ReadAt(b[:], p.idx.offset(i)); err != nil {
					t.Fatal(err)
				}
				if plumbing.ObjectType(b[0]>>4&7) == tc.kind {
					deltas++
				}
			}
			if deltas < 10 {
				t.Fatalf("git repack made %d deltas of kind %s, want many", deltas, tc.kind)
			}
			list, err := r.GitOutput(ctx, "cat-file", "--batch-all-objects", "--batch-check")
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(list)), "\n")
			if len(lines) != 61 {
				t.Fatalf("%d objects, want 61", len(lines))
			}
			for _, line := range lines {
				f := strings.Fields(line)
				h, _ := ParseHash(f[0])
				want, err := r.GitOutput(ctx, "cat-file", f[1], f[0])
				if err != nil {
					t.Fatal(err)
				}
				o, err := r.Object(h)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ReadEncoded(o)
				if err != nil {
					t.Fatal(err)
				}
				if o.Type().String() != f[1] || !bytes.Equal(got, want) || o.Hash() != h {
					t.Fatalf("%s: read %s of %d bytes, git has %s of %d", h, o.Type(), len(got), f[1], len(want))
				}
			}
			// A merge writes the deltas whole, with new CRCs, beside a pack of gitmem's own;
			// git verifies every object against the new index.
			more := commitObjects(t, parent, "one more")
			if err := r.WritePack(more); err != nil {
				t.Fatal(err)
			}
			if _, err := r.MergePacks(1); err != nil {
				t.Fatal(err)
			}
			merged, _ := filepath.Glob(filepath.Join(path, "objects", "pack", "*.idx"))
			if len(merged) != 1 {
				t.Fatalf("%d packs after the merge, want 1", len(merged))
			}
			if err := r.Git(ctx, "verify-pack", merged[0]); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestObjectNotFound: a missing object reads as plumbing.ErrObjectNotFound.
func TestObjectNotFound(t *testing.T) {
	r := openTestRepo(t)
	objs := commitObjects(t, plumbing.ZeroHash, "one")
	if err := r.WritePack(objs); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Object(plumbing.NewHash(strings.Repeat("ab", 20))); err == nil || !strings.Contains(err.Error(), plumbing.ErrObjectNotFound.Error()) {
		t.Fatalf("missing object: %v", err)
	}
}

// TestBrokenIndex: an index whose tables do not match its count is refused, not read.
func TestBrokenIndex(t *testing.T) {
	p, err := encodePack(commitObjects(t, plumbing.ZeroHash, "one"))
	if err != nil {
		t.Fatal(err)
	}
	good := p.idx.encode()
	if _, err := parseIdx(good); err != nil {
		t.Fatal(err)
	}
	unsorted := append([]byte{}, good...)
	n := idxHeader
	a, b := append([]byte{}, unsorted[n:n+20]...), append([]byte{}, unsorted[n+20:n+40]...)
	copy(unsorted[n:], b)
	copy(unsorted[n+20:], a)
	for name, data := range map[string][]byte{
		"unsorted":    unsorted,
		"truncated":   good[:len(good)-1],
		"longer":      append(append([]byte{}, good...), 0),
		"header only": good[:idxHeader],
		"not an idx":  bytes.Repeat([]byte{'x'}, len(good)),
	} {
		if _, err := parseIdx(data); err == nil {
			t.Errorf("%s index accepted", name)
		}
	}
}

// TestHostileDelta: a delta that claims a result far larger than allowed, or a base of
// another size, is refused before it is built.
func TestHostileDelta(t *testing.T) {
	for name, sizes := range map[string][]uint64{
		"huge result": {4, 1 << 40},
		"wrong base":  {5, 4},
	} {
		t.Run(name, func(t *testing.T) {
			r := openTestRepo(t)
			base := &plumbing.MemoryObject{}
			base.SetType(plumbing.BlobObject)
			base.Write([]byte("base"))
			var delta []byte
			for _, v := range sizes {
				for v >= 0x80 {
					delta = append(delta, byte(v)|0x80)
					v >>= 7
				}
				delta = append(delta, byte(v))
			}
			// Copy commands of 64 KiB each, as many as fit: PatchDelta would build them.
			delta = append(delta, bytes.Repeat([]byte{0x80}, 1000)...)
			var buf bytes.Buffer
			cw := &countingWriter{w: &buf, h: sha1.New()}
			cw.Write([]byte{'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, 2})
			idx := &packIndex{}
			crc, err := newWholeWriter().write(cw, base)
			if err != nil {
				t.Fatal(err)
			}
			idx.add(base.Hash(), 12, crc)
			at := cw.off
			hdr := []byte{byte(plumbing.REFDeltaObject)<<4 | byte(len(delta)&0x0f) | 0x80}
			for v := len(delta) >> 4; ; v >>= 7 {
				if v < 0x80 {
					hdr = append(hdr, byte(v))
					break
				}
				hdr = append(hdr, byte(v)|0x80)
			}
			bh := base.Hash()
			hdr = append(hdr, bh[:]...)
			cw.Write(hdr)
			zw := zlib.NewWriter(cw)
			zw.Write(delta)
			zw.Close()
			target := plumbing.NewHash(strings.Repeat("cd", 20))
			idx.add(target, at, 0)
			copy(idx.packSum[:], cw.h.Sum(nil))
			buf.Write(idx.packSum[:])
			dir := filepath.Join(r.Path(), "objects", "pack")
			packBase := filepath.Join(dir, "pack-"+idx.packSum.String())
			if err := os.WriteFile(packBase+".pack", buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(packBase+".idx", idx.encode(), 0o644); err != nil {
				t.Fatal(err)
			}
			r.Reload()
			if _, err := r.Blob(base.Hash()); err != nil {
				t.Fatalf("the base does not read: %v", err)
			}
			if _, err := r.Object(target); err == nil || !strings.Contains(err.Error(), "broken delta") {
				t.Fatalf("hostile delta read: %v", err)
			}
		})
	}
}

// TestLooseDeltaRefused: a loose file that claims a delta type is not an object.
func TestLooseDeltaRefused(t *testing.T) {
	r := openTestRepo(t)
	for i, head := range []string{"ofs-delta 3\x00abc", "blob +3\x00abc", "blob 03\x00abc"} {
		h := plumbing.NewHash(fmt.Sprintf("%040d", i+1))
		var buf bytes.Buffer
		zw := zlib.NewWriter(&buf)
		zw.Write([]byte(head))
		zw.Close()
		path := r.LoosePath(h)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o444); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Object(h); err == nil || !strings.Contains(err.Error(), "broken loose object") {
			t.Errorf("%q read: %v", head, err)
		}
	}
}

// TestWriteStored: the stored zlib streams that trees are written as read back whole, with
// their checksum checked, for sizes around a stored block's limit.
func TestWriteStored(t *testing.T) {
	for _, n := range []int{0, 1, 65534, 65535, 65536, 200000} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		var b bytes.Buffer
		if err := writeStored(&b, data, adler32.Checksum(data)); err != nil {
			t.Fatal(err)
		}
		zr, err := stdzlib.NewReader(&b)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%d bytes read back as %d others", n, len(got))
		}
		b.Reset()
		writeStored(&b, data, adler32.Checksum(data))
		raw := b.Bytes()
		raw[len(raw)-1] ^= 1
		zr, _ = stdzlib.NewReader(bytes.NewReader(raw))
		if _, err := io.ReadAll(zr); err == nil {
			t.Fatalf("%d bytes: a stream with a wrong checksum read without an error", n)
		}
	}
}

// TestStoredTree: a merge takes a tree's content from its stored blocks (storedTree) only
// when the entry is exactly as writeStored makes it and its CRC-32 is the index's; the
// content is then what inflating gives. Anything else goes to the decompressor.
func TestStoredTree(t *testing.T) {
	for _, n := range []int{600, 65535, 65536, 200000} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 13)
		}
		var b bytes.Buffer
		crc, err := writeTree(&b, data)
		if err != nil {
			t.Fatal(err)
		}
		raw := b.Bytes()
		_, size, pos, err := objectHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := storedTree(raw, pos, size, crc)
		if !ok || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: stored blocks read as %d bytes, %v", n, len(got), ok)
		}
		refused := map[string][]byte{
			"another CRC-32":  nil,
			"cut short":       raw[:len(raw)-1],
			"a byte too many": append(bytes.Clone(raw), 0),
			"a length off":    bytes.Clone(raw),
		}
		refused["a length off"][pos+3]++ // the first block's length, no longer its complement's
		for what, r := range refused {
			sum := crc32.ChecksumIEEE(r)
			if r == nil {
				r, sum = raw, crc+1
			}
			if _, ok := storedTree(r, pos, size, sum); ok {
				t.Errorf("%d bytes, %s: taken as stored blocks", n, what)
			}
		}
		// A compressed stream, as git writes trees.
		var z bytes.Buffer
		z.Write(raw[:pos])
		zw := zlib.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		if _, ok := storedTree(z.Bytes(), pos, size, crc32.ChecksumIEEE(z.Bytes())); ok {
			t.Errorf("%d bytes: a compressed stream taken as stored blocks", n)
		}
	}
}
