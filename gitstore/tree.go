package gitstore

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// objectReader finds objects by hash: the writer's pending objects, or the repository.
type objectReader interface {
	object(h plumbing.Hash) (plumbing.EncodedObject, error)
}

// treeCache keeps decoded trees, so that the writer does not inflate and decode the wide
// trees near the root again for every commit. Callers must not change the entries.
type treeCache interface {
	tree(h plumbing.Hash) ([]object.TreeEntry, bool)
	keepTree(h plumbing.Hash, entries []object.TreeEntry)
	// replacedTree says that a new version of tree h was built: h may go once the group no
	// longer needs it, so that the cache holds the head's trees rather than old versions.
	replacedTree(h plumbing.Hash)
}

// treeEdit says how setEntry built a tree from the tree from: the entry of one name, at
// position at in from and to in the tree, changed; -1 where it is not (added or removed).
// diffTrees then compares that pair alone: walking both versions of a folder of 1,000
// entries, the top one at 100,000 memories, took 16 µs a write.
type treeEdit struct {
	from   plumbing.Hash
	at, to int
}

// editLog remembers the trees' edits that setEntry made, for diffTrees.
type editLog interface {
	keepEdit(h plumbing.Hash, e treeEdit)
	editOf(h plumbing.Hash) (treeEdit, bool)
}

// readTree decodes the tree h; the zero hash is the empty tree. The result must not be
// changed: it may be shared through a treeCache.
func readTree(or objectReader, h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	tc, cached := or.(treeCache)
	if cached {
		if entries, ok := tc.tree(h); ok {
			return entries, nil
		}
	}
	o, err := or.object(h)
	if err != nil {
		return nil, err
	}
	if o.Type() != plumbing.TreeObject {
		return nil, fmt.Errorf("decode tree %s: it is a %s", h, o.Type())
	}
	raw, err := readEncoded(o)
	if err != nil {
		return nil, err
	}
	entries, err := decodeTree(raw)
	if err != nil {
		return nil, fmt.Errorf("decode tree %s: %w", h, err)
	}
	if cached {
		tc.keepTree(h, entries)
	}
	return entries, nil
}

// decodeTree parses a tree's content, "<octal mode> <name>\0<20-byte hash>" an entry, as
// go-git's Tree.Decode does (modes made canonical, no empty name). The names are
// substrings of one copy of raw. go-git's Tree.Decode reads through a
// bufio.Reader and allocates each name: a profile of a catalog rebuild put half of its time
// in reading trees, most of it there.
func decodeTree(raw []byte) ([]object.TreeEntry, error) {
	s := string(raw)
	out := make([]object.TreeEntry, 0, len(s)/40+1)
	for len(s) > 0 {
		sp := strings.IndexByte(s, ' ')
		if sp < 0 {
			return nil, errors.New("an entry has no mode")
		}
		mode, err := strconv.ParseUint(s[:sp], 8, 32)
		if err != nil {
			return nil, fmt.Errorf("mode %q is not octal", s[:sp])
		}
		s = s[sp+1:]
		nul := strings.IndexByte(s, 0)
		switch {
		case nul < 0 || len(s)-nul-1 < len(plumbing.ZeroHash):
			return nil, errors.New("an entry is cut short")
		case nul == 0:
			return nil, errors.New("an entry has no name")
		}
		e := object.TreeEntry{Name: s[:nul], Mode: canonicalMode(filemode.FileMode(mode))}
		s = s[nul+1:]
		copy(e.Hash[:], s)
		s = s[len(e.Hash):]
		out = append(out, e)
	}
	return out, nil
}

// canonicalMode is the mode git reads for a tree entry's mode (a 100664 from old gits is a
// regular file, and anything but a folder, a file or a symlink a submodule), as go-git
// reads it.
func canonicalMode(m filemode.FileMode) filemode.FileMode {
	switch m & 0o170000 {
	case 0o040000:
		return filemode.Dir
	case 0o100000:
		if m&0o111 != 0 {
			return filemode.Executable
		}
		return filemode.Regular
	case 0o120000:
		return filemode.Symlink
	}
	return filemode.Submodule
}

// encodeTree builds the object of a tree, whose entries must be in git's order (see gitLess).
// It writes git's encoding itself ("<octal mode> <name>\0<20-byte hash>" per entry) into a
// slice of the exact size, which the object then holds: a write rewrites every tree on its
// path, a wide one thousands of entries long. go-git's encoder formats each entry with fmt
// and grows the object's buffer by doubling (a profile of 100,000 writes found it the
// largest live allocation at the heap's peak); appending into a reused buffer and copying it
// into a MemoryObject took 13 µs for a folder of 1,000 entries, against 4 µs so.
func encodeTree(entries []object.TreeEntry) (*builtTree, error) {
	content, err := encodeEntries(entries)
	if err != nil {
		return nil, err
	}
	return newBuiltTree(content), nil
}

// encodeEntries is encodeTree's content.
func encodeEntries(entries []object.TreeEntry) ([]byte, error) {
	n := 0
	for i := range entries {
		e := &entries[i]
		switch e.Mode {
		case filemode.Empty:
			return nil, fmt.Errorf("encode tree: entry %q has no mode", e.Name)
		case filemode.Regular:
			n += len("100644 ")
		case filemode.Dir:
			n += len("40000 ")
		default:
			n += len(strconv.FormatUint(uint64(e.Mode), 8)) + 1
		}
		n += len(e.Name) + 1 + len(e.Hash)
	}
	buf := make([]byte, 0, n)
	for i := range entries {
		e := &entries[i]
		switch e.Mode { // the two modes a store writes, without formatting each
		case filemode.Regular:
			buf = append(buf, "100644 "...)
		case filemode.Dir:
			buf = append(buf, "40000 "...)
		default:
			buf = strconv.AppendUint(buf, uint64(e.Mode), 8)
			buf = append(buf, ' ')
		}
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	return buf, nil
}

// entrySize is the length of e in a tree's encoding.
func entrySize(e *object.TreeEntry) int {
	n := len(e.Name) + 1 + len(e.Hash)
	switch e.Mode {
	case filemode.Regular:
		return n + len("100644 ")
	case filemode.Dir:
		return n + len("40000 ")
	}
	for m := uint64(e.Mode); m > 0; m >>= 3 { // its octal digits
		n++
	}
	return n + 1 // and a space
}

// adlerReplaced returns the Adler-32 of n bytes whose Adler-32 was sum, once the bytes from
// off, were, are now is (as long). Adler-32 (RFC 1950) is two sums modulo 65,521: a, one
// plus the bytes, and b, the sum of a after each byte, where byte i of n counts n-i times.
func adlerReplaced(sum uint32, n, off int, were, is []byte) uint32 {
	const mod = 65521
	a, b := int64(sum&0xffff), int64(sum>>16)
	for i := range is {
		d := int64(is[i]) - int64(were[i])
		a += d
		b += int64(n-off-i) * d
	}
	a, b = (a%mod+mod)%mod, (b%mod+mod)%mod
	return uint32(b<<16 | a)
}

// builtTree is a tree this store built: its content, which it owns, and its hash, computed
// once with crypto/sha1. go-git's objects hash with a collision-detecting SHA-1, which
// guards objects that others made: a tree built here holds only validated names and hashes,
// where no collision attack's blocks fit. For the 33 KB root folder that a write at 100,000
// memories rebuilds, 56 µs against 15 µs (a micro-benchmark). Blobs, whose bytes callers
// choose, keep go-git's.
//
// It is built whole and cannot change: SetType and SetSize keep what it is, and Writer fails.
// The pack writers take its bytes from Content, without a copy (odb.Whole).
type builtTree struct {
	content []byte
	h       plumbing.Hash
	// adler is the Adler-32 of content, if adlerKnown: a wide tree's (wideTree).
	adler      uint32
	adlerKnown bool
}

func (o *builtTree) Hash() plumbing.Hash         { return o.h }
func (o *builtTree) Type() plumbing.ObjectType   { return plumbing.TreeObject }
func (o *builtTree) SetType(plumbing.ObjectType) {}
func (o *builtTree) Size() int64                 { return int64(len(o.content)) }
func (o *builtTree) SetSize(int64)               {}
func (o *builtTree) Content() []byte             { return o.content }
func (o *builtTree) Adler32() (uint32, bool)     { return o.adler, o.adlerKnown }
func (o *builtTree) Writer() (io.WriteCloser, error) {
	return nil, errors.New("a built tree cannot change")
}
func (o *builtTree) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.content)), nil
}

// newBuiltTree returns the tree object holding content, which it keeps, hashed as git does.
func newBuiltTree(content []byte) *builtTree {
	h := sha1.New()
	h.Write(treeHeader(len(content)))
	h.Write(content)
	o := &builtTree{content: content}
	h.Sum(o.h[:0])
	return o
}

// treeHeader is what git hashes before a tree's content of n bytes: "tree <n>\x00".
func treeHeader(n int) []byte {
	return append(strconv.AppendInt([]byte("tree "), int64(n), 10), 0)
}

// gitLess orders tree entries as git does: by name, with a directory compared as if its
// name ended in "/". It allocates nothing: wide trees are sorted and merged on every write.
func gitLess(a, b object.TreeEntry) bool {
	n := min(len(a.Name), len(b.Name))
	if c := strings.Compare(a.Name[:n], b.Name[:n]); c != 0 {
		return c < 0
	}
	return sortByte(a, n) < sortByte(b, n)
}

// sortByte is the byte at i of the entry's sort key: the name, then "/" for a directory.
func sortByte(e object.TreeEntry, i int) int {
	switch {
	case i < len(e.Name):
		return int(e.Name[i])
	case i == len(e.Name) && e.Mode == filemode.Dir:
		return '/'
	default:
		return -1 // the key has ended
	}
}

// blobObject builds the object of a blob.
func blobObject(content []byte) plumbing.EncodedObject {
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.BlobObject)
	o.Write(content)
	return o
}

// treePath is a memory path's tree segments: "/a/b.md" is ["a", "b.md"].
func treePath(p string) []string { return strings.Split(strings.TrimPrefix(p, "/"), "/") }

// entryAt finds the entry at the tree path segs below root. found is false if a segment is
// missing; blocked is set, with the path of the file in the way, if an ancestor is a file.
func entryAt(or objectReader, root plumbing.Hash, segs []string) (e object.TreeEntry, found bool, blocked string, err error) {
	cur := root
	for i, s := range segs {
		entries, err := readTree(or, cur)
		if err != nil {
			return e, false, "", err
		}
		var hit *object.TreeEntry
		for k := range entries {
			if entries[k].Name == s {
				hit = &entries[k]
				break
			}
		}
		if hit == nil {
			return e, false, "", nil
		}
		if i == len(segs)-1 {
			return *hit, true, "", nil
		}
		if hit.Mode != filemode.Dir {
			return e, false, "/" + strings.Join(segs[:i+1], "/"), nil
		}
		cur = hit.Hash
	}
	return e, false, "", nil
}

// firstFile returns the tree path of the first file below tree h, in path order.
func firstFile(or objectReader, h plumbing.Hash, prefix string) (string, error) {
	shared, err := readTree(or, h)
	if err != nil {
		return "", err
	}
	entries := append([]object.TreeEntry(nil), shared...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	for _, e := range entries {
		if e.Mode == filemode.Dir {
			p, err := firstFile(or, e.Hash, prefix+"/"+e.Name)
			if err != nil || p != "" {
				return p, err
			}
			continue
		}
		return prefix + "/" + e.Name, nil
	}
	return "", nil
}

// setEntry returns the root of a tree equal to root with the file at segs set to blob (or
// removed, if blob is the zero hash). Only the trees on the path are rebuilt, so the cost
// grows with the path's depth and not with the size of the store. Emptied directories go
// away, as git has no empty trees. New objects are passed to emit.
func setEntry(or objectReader, root plumbing.Hash, segs []string, blob plumbing.Hash, emit func(plumbing.EncodedObject)) (plumbing.Hash, error) {
	entries, err := readTree(or, root)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	idx := -1
	for i := range entries {
		if entries[i].Name == segs[0] {
			idx = i
			break
		}
	}
	var child object.TreeEntry
	switch {
	case len(segs) == 1 && blob.IsZero():
		// remove below
	case len(segs) == 1:
		child = object.TreeEntry{Name: segs[0], Mode: filemode.Regular, Hash: blob}
	default:
		var sub plumbing.Hash
		if idx >= 0 && entries[idx].Mode == filemode.Dir {
			sub = entries[idx].Hash
		}
		h, err := setEntry(or, sub, segs[1:], blob, emit)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if !h.IsZero() {
			child = object.TreeEntry{Name: segs[0], Mode: filemode.Dir, Hash: h}
		}
	}
	var out []object.TreeEntry
	edit := treeEdit{from: root, at: idx, to: -1}
	inPlace := false // the entry's hash replaced, its name and mode as they were
	if idx >= 0 && child.Name != "" && child.Mode == entries[idx].Mode {
		// A new version of the entry, in its place: a memory written again, or a folder on
		// the path of one. One copy of the whole folder, which is 1,000 entries wide at the
		// top of a store of 100,000 memories.
		out = slices.Clone(entries)
		out[idx].Hash = child.Hash
		edit.to = idx
		inPlace = true
	} else {
		out = make([]object.TreeEntry, 0, len(entries)+1)
		for i, e := range entries {
			if i != idx {
				out = append(out, e)
			}
		}
		if child.Name != "" {
			// Insert in order: the entries of a git tree are sorted already.
			at := sort.Search(len(out), func(i int) bool { return !gitLess(out[i], child) })
			out = append(out, object.TreeEntry{})
			copy(out[at+1:], out[at:])
			out[at] = child
			edit.to = at
		}
	}
	if len(out) == 0 {
		return plumbing.ZeroHash, nil
	}
	var o *builtTree
	if wc, ok := or.(wideCache); ok && len(out) >= wideTree {
		changed := -1
		if inPlace {
			changed = idx
		}
		var sums *treeSums
		if o, sums, err = buildWide(out, wc.sumsOf(root), changed); err != nil {
			return plumbing.ZeroHash, err
		}
		wc.keepSums(o.h, sums)
	} else if o, err = encodeTree(out); err != nil {
		return plumbing.ZeroHash, err
	}
	emit(o)
	if el, ok := or.(editLog); ok && root != o.Hash() {
		el.keepEdit(o.Hash(), edit)
	}
	if tc, ok := or.(treeCache); ok {
		tc.keepTree(o.Hash(), out)
		if !root.IsZero() && root != o.Hash() {
			tc.replacedTree(root)
		}
	}
	return o.Hash(), nil
}

// fileChange is one file that differs between two trees. A zero From is an added file, a
// zero To a removed one.
type fileChange struct {
	Path     string // memory path, "/a/b.md"
	From, To plumbing.Hash
	ToMode   filemode.FileMode
}

// diffTrees lists the files that differ between trees a and b, in git's order. Both trees'
// entries are sorted, so it walks them side by side; subtrees with equal hashes are
// skipped, so the cost follows the size of the change. A tree that setEntry built from a
// (editLog) differs from it in one known entry, which is all it compares.
func diffTrees(or objectReader, a, b plumbing.Hash, prefix string, out []fileChange) ([]fileChange, error) {
	if a == b {
		return out, nil
	}
	ea, err := readTree(or, a)
	if err != nil {
		return nil, err
	}
	eb, err := readTree(or, b)
	if err != nil {
		return nil, err
	}
	if el, ok := or.(editLog); ok {
		if e, ok := el.editOf(b); ok && e.from == a && e.at < len(ea) && e.to < len(eb) {
			var x, y *object.TreeEntry
			if e.at >= 0 {
				x = &ea[e.at]
			}
			if e.to >= 0 {
				y = &eb[e.to]
			}
			return diffEntries(or, x, y, prefix, out)
		}
	}
	for i, j := 0, 0; i < len(ea) || j < len(eb); {
		var x, y *object.TreeEntry
		switch {
		case i < len(ea) && j < len(eb) && ea[i].Name == eb[j].Name && ea[i].Mode == eb[j].Mode:
			// The usual pair: a commit changes a few entries of a tree and keeps the rest,
			// names and all, so most pairs are equal and need no ordering.
			x, y = &ea[i], &eb[j]
			i, j = i+1, j+1
		case j == len(eb) || i < len(ea) && gitLess(ea[i], eb[j]):
			x = &ea[i]
			i++
		case i == len(ea) || gitLess(eb[j], ea[i]):
			y = &eb[j]
			j++
		default:
			x, y = &ea[i], &eb[j]
			i, j = i+1, j+1
		}
		if out, err = diffEntries(or, x, y, prefix, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// diffEntries adds to out the files that differ between x, an entry of a tree below prefix,
// and y, the entry of the same name in the other tree; either may be nil (none there).
func diffEntries(or objectReader, x, y *object.TreeEntry, prefix string, out []fileChange) ([]fileChange, error) {
	if x != nil && y != nil && x.Hash == y.Hash && x.Mode == y.Mode {
		return out, nil
	}
	var name string
	var xTree, yTree, xFile, yFile plumbing.Hash
	var yMode filemode.FileMode
	if x != nil {
		name = x.Name
		if x.Mode == filemode.Dir {
			xTree = x.Hash
		} else {
			xFile = x.Hash
		}
	}
	if y != nil {
		name = y.Name
		if y.Mode == filemode.Dir {
			yTree = y.Hash
		} else {
			yFile, yMode = y.Hash, y.Mode
		}
	}
	p := prefix + "/" + name
	if xFile != yFile || (x != nil && y != nil && x.Mode != y.Mode && !yFile.IsZero()) {
		out = append(out, fileChange{Path: p, From: xFile, To: yFile, ToMode: yMode})
	}
	if xTree != yTree {
		return diffTrees(or, xTree, yTree, p, out)
	}
	return out, nil
}
