package gitstore

import (
	"bytes"
	"crypto/sha1"
	"encoding"
	"hash/adler32"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A write rebuilds every folder on its path, and at 100,000 memories in folders of 100 the
// top one holds 1,000 entries (33 KB). Most writes change one entry's hash in place (a
// memory written again, or a folder on its path), so the new version is the one before with
// 20 bytes replaced. For such wide trees the writer keeps what it computed of the version
// before (treeSums) and builds the next from it:
//
//   - its bytes are copied and the 20 bytes replaced, rather than every entry encoded again
//     (7 µs against 14 µs for 1,000 entries, a micro-benchmark);
//   - its SHA-1 resumes from the state the hash had reached before the replaced bytes, kept
//     every sumStride bytes, since SHA-1 reads its input in order: half of the tree is
//     hashed on average, where the whole took 27 µs;
//   - its Adler-32, which a pack's entry of it ends with (odb.Summed), is the one before
//     updated for the 20 bytes (adlerReplaced): computing it over the whole took 17 µs.
//
// wideTree is the number of entries from which the writer keeps them.
const wideTree = 256

// sumStride is how many bytes of a wide tree's hashed form (its header, "tree <size>\0",
// and its content) lie between two of the SHA-1 states kept: a multiple of SHA-1's 64-byte
// block. A state is 96 bytes, so those of a 33 KB tree take 1.5 KB.
const sumStride = 2048

// treeSums is what the writer keeps of a wide tree that it built.
type treeSums struct {
	content []byte // the tree's encoding, shared with its object: never changed
	adler   uint32 // Adler-32 of content
	// states holds the SHA-1 states after each sumStride bytes of the hashed form, in order,
	// each as the hash's MarshalBinary gives it (stateSize bytes).
	states []byte
}

// stateSize is the length of a SHA-1 state in treeSums.states.
var stateSize = func() int {
	s, err := sha1.New().(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic(err)
	}
	return len(s)
}()

// wideCache keeps the treeSums of the wide trees that the writer built, by hash.
type wideCache interface {
	sumsOf(h plumbing.Hash) *treeSums
	keepSums(h plumbing.Hash, s *treeSums)
}

// buildWide builds the object of a wide tree from its entries, which must be in git's
// order. If prev, the sums of the version before, is known and the tree differs from it in
// the hash of the entry at changed alone (-1 if not so), it builds from prev; else from the
// entries. It returns the object and its sums.
func buildWide(entries []object.TreeEntry, prev *treeSums, changed int) (*builtTree, *treeSums, error) {
	if prev != nil && changed >= 0 {
		end := 0
		for i := range entries[:changed+1] {
			end += entrySize(&entries[i])
		}
		is := entries[changed].Hash[:]
		off := end - len(is)
		if end <= len(prev.content) {
			content := bytes.Clone(prev.content)
			copy(content[off:], is)
			sums := &treeSums{
				content: content,
				adler:   adlerReplaced(prev.adler, len(content), off, prev.content[off:end], is),
			}
			o := &builtTree{content: content, adler: sums.adler, adlerKnown: true}
			o.h, sums.states = sumTree(content, prev, off)
			return o, sums, nil
		}
	}
	content, err := encodeEntries(entries)
	if err != nil {
		return nil, nil, err
	}
	sums := &treeSums{content: content, adler: adler32.Checksum(content)}
	o := &builtTree{content: content, adler: sums.adler, adlerKnown: true}
	o.h, sums.states = sumTree(content, nil, 0)
	return o, sums, nil
}

// sumTree hashes the tree whose content is content, as git names objects, and returns the
// hash with its states every sumStride bytes (treeSums.states). With prev, the sums of a
// tree of the same size whose content is the same before byte changed, it resumes from the
// last of prev's states before that byte.
func sumTree(content []byte, prev *treeSums, changed int) (plumbing.Hash, []byte) {
	hdr := strconv.AppendInt(append(plumbing.TreeObject.Bytes(), ' '), int64(len(content)), 10)
	hdr = append(hdr, 0)
	total := len(hdr) + len(content)
	states := make([]byte, 0, total/sumStride*stateSize)
	d := sha1.New()
	at := 0 // bytes of the hashed form written to d
	if prev != nil && len(prev.content) == len(content) {
		if k := min((len(hdr)+changed)/sumStride, len(prev.states)/stateSize); k > 0 {
			if d.(encoding.BinaryUnmarshaler).UnmarshalBinary(prev.states[(k-1)*stateSize:k*stateSize]) == nil {
				states = append(states, prev.states[:k*stateSize]...)
				at = k * sumStride
			} else {
				d.Reset()
			}
		}
	}
	write := func(to int) { // the hashed form's bytes from at to to
		if at < len(hdr) {
			d.Write(hdr[at:min(to, len(hdr))])
			at = min(to, len(hdr))
		}
		if at < to {
			d.Write(content[at-len(hdr) : to-len(hdr)])
			at = to
		}
	}
	for next := at + sumStride; next <= total; next += sumStride {
		write(next)
		states, _ = d.(encoding.BinaryAppender).AppendBinary(states)
	}
	write(total)
	var h plumbing.Hash
	d.Sum(h[:0])
	return h, states
}
