package odb

import (
	"github.com/go-git/go-git/v5/plumbing"
)

// A group of commits makes a new version of each folder on each commit's path, and the
// versions of one folder within a group differ by an entry or a few. At 100,000 memories the
// 1,000-entry top folder is 33 KB, so a group of 64 writes held 64 whole copies of it (64 x
// 33 KB), which the journal, the syncer and the merges then all went through. Within a
// group's pack a folder's version is now written as a delta of its version before
// (OFS_DELTA: the pack stays self-contained, as git requires of the packs in a repository),
// found as merges find it, by the names its entries begin and end with (treedelta.go). A
// fill of 100,000 memories by 64 writers took 16.3-18.0 s with them, 18.7-20.6 s without
// (performance.md). A group of one commit has no version before to make a delta of.

// groupChain bounds the deltas in a row that a group's pack makes of one folder: a read of
// the last goes through that many, and a merge adds them to its own chains (maxDeltaChain).
const groupChain = 16

// groupTree is a version of a folder that a group's pack holds.
type groupTree struct {
	off   uint64
	data  []byte
	depth int
}

// groupDeltas makes the deltas of the trees of one group's pack.
type groupDeltas struct {
	// last holds, for each pair of names that trees begin and end with, the last maxKin
	// written, latest first: folders alike in their names (notes/ in every project) share
	// a pair, and a folder's version before is the likest of them.
	last  map[endNames][]groupTree
	delta deltaEntry
}

// worthDeltas tells whether objs, a group's objects, hold more than one commit.
func worthDeltas(objs []plumbing.EncodedObject) bool {
	commits := 0
	for _, o := range objs {
		if o.Type() == plumbing.CommitObject {
			if commits++; commits > 1 {
				return true
			}
		}
	}
	return false
}

// write writes the tree whose content is data at cw's offset: as a delta of the likest
// version written before with the same end names if that saves most of it, else whole. It
// returns the CRC-32 of the bytes written.
func (g *groupDeltas) write(cw *countingWriter, data []byte) (uint32, error) {
	at := cw.off
	first, last, named := treeEnds(data)
	key := endNames{string(first), string(last)}
	like, alike, prefix, suffix := -1, 0, 0, 0
	for i, b := range g.last[key] {
		if p, s := commonEnds(b.data, data); b.depth < groupChain && p+s > alike {
			like, alike, prefix, suffix = i, p+s, p, s
		}
	}
	if like >= 0 && 2*alike >= len(data) {
		b := g.last[key][like]
		worth, err := g.delta.make(b.data, data, prefix, suffix, at-b.off)
		if err != nil {
			return 0, err
		}
		if worth {
			crc, err := writeEntry(cw, g.delta.hdr, g.delta.z.Bytes())
			if err != nil {
				return 0, err
			}
			g.remember(key, groupTree{off: at, data: data, depth: b.depth + 1}, like)
			return crc, nil
		}
	}
	crc, err := writeTree(cw, data)
	if err != nil {
		return 0, err
	}
	if named {
		g.remember(key, groupTree{off: at, data: data}, -1)
	}
	return crc, nil
}

// remember puts t first among the trees of key, in place of the one at replaced (its version
// before), if not -1.
func (g *groupDeltas) remember(key endNames, t groupTree, replaced int) {
	kin := g.last[key]
	if replaced >= 0 {
		kin = append(kin[:replaced], kin[replaced+1:]...)
	}
	kin = append([]groupTree{t}, kin[:min(len(kin), maxKin-1)]...)
	g.last[key] = kin
}
