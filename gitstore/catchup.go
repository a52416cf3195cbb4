package gitstore

import (
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// newCommits lists the commits reachable from head and not from applied, parents before
// children, and for a merge the side of its first parent before the side of its second:
// the order in which the catalog applies them. found is false if applied is not in head's
// history (history was rewritten); the list then holds all of head's history.
//
// A linear history (every commit since applied has one parent) is walked back along first
// parents alone; only when a merge comes up are the ancestors of applied marked, so that
// the sides of merges stop where they join what the catalog has.
func (r *repo) newCommits(head, applied plumbing.Hash) (chain []*object.Commit, found bool, err error) {
	for h := head; !h.IsZero(); {
		if h == applied {
			slices.Reverse(chain) // parents first
			return chain, true, nil
		}
		c, err := r.commit(h)
		if err != nil {
			return nil, false, err
		}
		if len(c.ParentHashes) > 1 {
			break
		}
		chain = append(chain, c)
		if len(c.ParentHashes) == 1 {
			h = c.ParentHashes[0]
			continue
		}
		// The first commit, and no merge on the way: chain is all of head's history, which
		// the walks below would only read again (a rebuild, or applied rewritten away).
		slices.Reverse(chain)
		return chain, applied.IsZero(), nil
	}
	if applied.IsZero() {
		chain, _, err = r.topoOrder(head, nil, applied)
		return chain, true, err
	}
	known := map[plumbing.Hash]bool{}
	if err := r.ancestors(applied, known); err != nil {
		return nil, false, err
	}
	chain, found, err = r.topoOrder(head, known, applied)
	if err != nil || found {
		return chain, found, err
	}
	// applied is not in head's history (a forced push rewrote it): all of head's commits.
	chain, _, err = r.topoOrder(head, nil, applied)
	return chain, false, err
}

// ancestors marks h and every commit in its history in seen.
func (r *repo) ancestors(h plumbing.Hash, seen map[plumbing.Hash]bool) error {
	stack := []plumbing.Hash{h}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		// Only the parents are needed; a missing commit (a shallow history) ends the walk.
		c, err := r.commit(h)
		if err != nil {
			if _, ok := r.hasObject(h); !ok {
				continue
			}
			return err
		}
		seen[h] = true
		stack = append(stack, c.ParentHashes...)
	}
	return nil
}

// hasObject reports whether the repository holds the object h.
func (r *repo) hasObject(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	o, err := r.object(h)
	return o, err == nil
}

// topoOrder lists the commits of head's history that are not in skip, each after all of
// its parents, the first parent's side first (a depth-first walk, in post-order). reached
// tells whether the walk came to commit target. With skip the history of target, that is
// whether target is in head's history: the first commit of skip on any path from head to
// target is target itself, since the others are its ancestors.
func (r *repo) topoOrder(head plumbing.Hash, skip map[plumbing.Hash]bool, target plumbing.Hash) (out []*object.Commit, reached bool, err error) {
	type frame struct {
		c    *object.Commit
		next int // index of the next parent to visit
	}
	done := map[plumbing.Hash]bool{}
	push := func(stack []frame, h plumbing.Hash) ([]frame, error) {
		reached = reached || h == target
		if skip[h] || done[h] {
			return stack, nil
		}
		done[h] = true
		c, err := r.commit(h)
		if err != nil {
			return nil, err
		}
		return append(stack, frame{c: c}), nil
	}
	stack, err := push(nil, head)
	if err != nil {
		return nil, false, err
	}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.c.ParentHashes) {
			p := top.c.ParentHashes[top.next]
			top.next++
			if stack, err = push(stack, p); err != nil {
				return nil, false, err
			}
			continue
		}
		out = append(out, top.c)
		stack = stack[:len(stack)-1]
	}
	return out, reached, nil
}

// applyAny applies one commit of main's history to the catalog: a commit against its
// parent, a merge that gitmem made as the resolutions its trailers record (merge.go), and a
// merge made with plain git as its change against its first parent.
func (c catTx) applyAny(or objectReader, commit *object.Commit) error {
	return c.applyAfter(or, commit, nil)
}

// applyAfter is applyAny, where prev, if not nil, is the commit applied just before: when
// it is commit's parent, its tree is not read again.
func (c catTx) applyAfter(or objectReader, commit, prev *object.Commit) error {
	if len(commit.ParentHashes) > 1 && isGitmemMerge(commit.Message) {
		return c.applyMerge(or, commit)
	}
	var parentTree plumbing.Hash
	switch {
	case len(commit.ParentHashes) == 0:
	case prev != nil && prev.Hash == commit.ParentHashes[0]:
		parentTree = prev.TreeHash
	default:
		p, err := readCommit(or, commit.ParentHashes[0])
		if err != nil {
			return err
		}
		parentTree = p.TreeHash
	}
	return c.applyCommit(or, commit, parentTree)
}

// treeReader is an objectReader that keeps the trees it decoded, for a walk through
// history such as a catch-up: the trees of a commit's parent are those that the commit
// before made, and the wide folders near the root are decoded once, not for every commit.
// It holds at most maxCachedTrees trees and maxCachedEntries entries, as the writer's
// cache does.
type treeReader struct {
	objectReader
	trees   map[plumbing.Hash][]object.TreeEntry
	entries int
}

func newTreeReader(or objectReader) *treeReader {
	return &treeReader{objectReader: or, trees: map[plumbing.Hash][]object.TreeEntry{}}
}

func (t *treeReader) tree(h plumbing.Hash) ([]object.TreeEntry, bool) {
	e, ok := t.trees[h]
	return e, ok
}

func (t *treeReader) keepTree(h plumbing.Hash, entries []object.TreeEntry) {
	if len(t.trees) >= maxCachedTrees || t.entries+len(entries) > maxCachedEntries {
		clear(t.trees)
		t.entries = 0
	}
	t.trees[h] = entries
	t.entries += len(entries)
}

func (t *treeReader) replacedTree(plumbing.Hash) {}

// lastTouch asks the objectReader under it (touchFinder): embedded as an objectReader, the
// repository's lastTouch is not the treeReader's, and memoryAt (memoryBefore, for a commit
// made with git on a merge's second side) walked long unchanged stretches commit by commit.
func (t *treeReader) lastTouch(rev plumbing.Hash, path string) (plumbing.Hash, bool) {
	if f, ok := t.objectReader.(touchFinder); ok {
		return f.lastTouch(rev, path)
	}
	return plumbing.ZeroHash, false
}
