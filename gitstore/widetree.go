package gitstore

import (
	"bytes"
	"hash/adler32"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/internal/sha1resume"
)

// A write rebuilds every folder on its path, and at 100,000 memories in folders of 100 the
// top one holds 1,000 entries (33 KB). Most writes change one entry's hash in place (a
// memory written again, or a folder on its path), so the new version is the one before with
// 20 bytes replaced. For such wide trees the writer keeps what it computed of the version
// before (treeSums) and builds the next from it:
//
//   - its bytes are copied and the 20 bytes replaced, rather than every entry encoded again
//     (7 µs against 14 µs for 1,000 entries, a micro-benchmark);
//   - its SHA-1 resumes from the state the hash had reached before the replaced bytes
//     (sha1resume): half of the tree is hashed on average, where the whole took 27 µs;
//   - its Adler-32, which a pack's entry of it ends with (odb.Summed), is the one before
//     updated for the 20 bytes (adlerReplaced): computing it over the whole took 17 µs.
//
// wideTree is the number of entries from which the writer keeps them.
const wideTree = 256

// treeSums is what the writer keeps of a wide tree that it built.
type treeSums struct {
	content []byte // the tree's encoding, shared with its object: never changed
	adler   uint32 // Adler-32 of content
	// states are the SHA-1 states of its hashed form (sha1resume.Sum): the header "tree
	// <size>\0", then content.
	states []byte
}

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
	sums := &treeSums{}
	var from *treeSums // prev, if built from it
	off := 0           // where the replaced bytes begin
	if prev != nil && changed >= 0 {
		end := 0
		for i := range entries[:changed+1] {
			end += entrySize(&entries[i])
		}
		is := entries[changed].Hash[:]
		if off = end - len(is); end <= len(prev.content) {
			sums.content = bytes.Clone(prev.content)
			copy(sums.content[off:], is)
			sums.adler = adlerReplaced(prev.adler, len(sums.content), off, prev.content[off:end], is)
			from = prev
		}
	}
	if from == nil {
		content, err := encodeEntries(entries)
		if err != nil {
			return nil, nil, err
		}
		sums.content, sums.adler = content, adler32.Checksum(content)
	}
	o := &builtTree{content: sums.content, adler: sums.adler, adlerKnown: true}
	o.h, sums.states = sumTree(sums.content, from, off)
	return o, sums, nil
}

// sumTree hashes the tree whose content is content, as git names objects, and returns the
// hash with its SHA-1 states. With prev, the sums of a tree of the same size whose content is
// the same before byte changed, it resumes from prev's states.
func sumTree(content []byte, prev *treeSums, changed int) (plumbing.Hash, []byte) {
	hdr := treeHeader(len(content))
	var before []byte
	same := 0
	if prev != nil && len(prev.content) == len(content) {
		before, same = prev.states, len(hdr)+changed
	}
	sum, states := sha1resume.Sum(nil, hdr, content, before, same, len(hdr)+len(content))
	return plumbing.Hash(sum), states
}
