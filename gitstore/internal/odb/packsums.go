package odb

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/internal/sha1resume"
)

// A pack ends with the SHA-1 of all its bytes. At 100,000 memories in folders of 100, a
// write's pack is about 36 KB, 33 KB of it the top folder's new version, which differs from
// the one in the pack before by an entry's hash. So a pack of one commit's objects begins
// with its widest tree, and two such packs in a row are the same bytes up to the entry that
// changed: the pack's header, the tree's, and the entries before. The writer keeps the bytes
// of the pack before up to the end of that tree, with the SHA-1 states within them
// (sha1resume), and resumes the checksum from the last state before the first byte that
// differs. States past that tree could never serve, since no pack is compared beyond it:
// they are not kept, so that what is kept follows the widest tree, not the largest pack (a
// group of many writers' commits, megabytes).

// packSums is what the writer keeps of its last pack for the next one's checksum. The
// writer's goroutine alone uses it.
type packSums struct {
	prefix []byte // the pack's bytes up to the end of its first object, if a wide tree
	states []byte // the SHA-1 states within prefix
}

// widestFirst returns objs with the widest tree first, if one is at least sha1resume.Stride
// bytes, else objs as they are. encodeAfter asks it only for a group whose pack makes no
// deltas (one commit), whose objects may come in any order.
func widestFirst(objs []plumbing.EncodedObject) ([]plumbing.EncodedObject, bool) {
	widest := -1
	for i, o := range objs {
		if o.Type() == plumbing.TreeObject && o.Size() >= sha1resume.Stride && (widest < 0 || o.Size() > objs[widest].Size()) {
			widest = i
		}
	}
	if widest < 0 {
		return objs, false
	}
	out := make([]plumbing.EncodedObject, 0, len(objs))
	out = append(out, objs[widest])
	out = append(out, objs[:widest]...)
	return append(out, objs[widest+1:]...), true
}

// sum returns the checksum of pack (its bytes before the checksum), whose first object ends
// at first if widestFirst put a tree there (else 0), and keeps what the next pack's needs.
func (s *packSums) sum(pack []byte, first int) plumbing.Hash {
	sum, states := sha1resume.Sum(s.states, nil, pack, s.states, commonPrefix(pack, s.prefix), first)
	s.prefix, s.states = append(s.prefix[:0], pack[:first]...), states
	return plumbing.Hash(sum)
}
