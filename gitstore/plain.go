package gitstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/internal/gitexec"
)

// Commits made with plain git carry no ids: the ids of their changes are derived from the
// commit and the path, and the memory that a changed path holds is found in history. The
// catalog (as it applies commits) and the merger (as it resolves paths) both read them
// here, so that they agree with each other, on every replica, and after a redaction rewrote
// the commits.

// plainRenames pairs the files that a commit made with plain git adds with files that it
// removes with the same content: each pair is a rename of one memory. It maps the index (in
// changes, as onlyMemories leaves them) of the addition to that of the removal; additions
// take the removals of their content in order. The renames that the commit's trailers t
// record (Gitmem-Renamed, where a redaction changed one side's content) are paired first.
// The marker of a redaction pairs with nothing by content: it stands for any content, and
// the redactions that put it on a rename's side record the rename (renameAtPath).
func plainRenames(changes []fileChange, t trailers) map[int]int {
	renamedFrom := map[int]int{}
	paired := map[int]bool{}
	for _, kv := range t {
		from, to, ok := parseRenamed(kv.Value)
		if !ok || !strings.EqualFold(kv.Key, trailerRenamed) {
			continue
		}
		a := slices.IndexFunc(changes, func(ch fileChange) bool { return ch.Path == to && ch.From.IsZero() && !ch.To.IsZero() })
		r := slices.IndexFunc(changes, func(ch fileChange) bool { return ch.Path == from && !ch.From.IsZero() && ch.To.IsZero() })
		if a >= 0 && r >= 0 && !paired[a] && !paired[r] {
			renamedFrom[a], paired[a], paired[r] = r, true, true
		}
	}
	mark := redactionMarker()
	removed := map[plumbing.Hash][]int{}
	for i, ch := range changes {
		if ch.To.IsZero() && !paired[i] && ch.From != mark {
			removed[ch.From] = append(removed[ch.From], i)
		}
	}
	for i, ch := range changes {
		if ch.From.IsZero() && !ch.To.IsZero() && !paired[i] {
			if rs := removed[ch.To]; len(rs) > 0 {
				renamedFrom[i] = rs[0]
				removed[ch.To] = rs[1:]
			}
		}
	}
	return renamedFrom
}

// plainVersionID and plainMemoryID are the ids of the change to path in commit c, made with
// plain git: its version's, and its memory's where the change makes a new memory. Every
// reader of history derives them here (the catalog as it applies a commit, the merger as it
// looks for the memory at a path), so that they agree with each other and on every replica:
// from the time of the commit and the hash it has, or, once a redaction rewrote it, the hash
// it had before (derivationSource).
func plainVersionID(c *object.Commit, path string) string {
	return derivedID(VersionPrefix, c.Author.When, "version", derivationSource(c), path)
}

func plainMemoryID(c *object.Commit, path string) string {
	return derivedID(MemoryPrefix, c.Author.When, "memory", derivationSource(c), path)
}

// derivationSource is what the ids of a commit made with plain git derive from: its hash,
// or the hash it had before a redaction rewrote it.
func derivationSource(c *object.Commit) string {
	if h := parseTrailers(c.Message).get(trailerDerivedFrom); h != "" {
		return h
	}
	return c.Hash.String()
}

// memoryAt returns the memory that path holds in the history of rev (as the catalog reads
// that history) and the version of the change that last touched the path: from a gitmem
// commit's trailers or a gitmem merge's, or for a commit made with plain git as
// applyPlainCommit reads it. mem is "" if no change in that history made path a memory.
// Like git log -- path, it follows a merge's parent whose file at path is the merge's.
func memoryAt(or objectReader, rev plumbing.Hash, path string) (mem, ver string, err error) {
	segs := treePath(path)
	at := func(tree plumbing.Hash) (object.TreeEntry, error) {
		e, found, _, err := entryAt(or, tree, segs)
		if !found {
			e = object.TreeEntry{}
		}
		return e, err
	}
	c, err := readCommit(or, rev)
	if err != nil {
		return "", "", err
	}
	own, err := at(c.TreeHash)
	if err != nil {
		return "", "", err
	}
	finder, _ := or.(touchFinder)
	for steps := 1; ; steps++ {
		if steps%gitWalkAfter == 0 && finder != nil {
			// Far down an unchanged stretch: git finds the next change sooner.
			if h, ok := finder.lastTouch(c.Hash, path); ok {
				if h.IsZero() {
					return "", "", nil
				}
				if c, err = readCommit(or, h); err != nil {
					return "", "", err
				}
				if own, err = at(c.TreeHash); err != nil {
					return "", "", err
				}
			}
		}
		// The parent (and its file at path) becomes the commit looked at next: each commit
		// and tree is read once on the way down.
		var next *object.Commit
		var nextOwn object.TreeEntry
		var parentTree plumbing.Hash
		for i, p := range c.ParentHashes {
			pc, err := readCommit(or, p)
			if err != nil {
				return "", "", err
			}
			if i == 0 {
				parentTree = pc.TreeHash
			}
			e := own
			if pc.TreeHash != c.TreeHash {
				if e, err = at(pc.TreeHash); err != nil {
					return "", "", err
				}
			}
			if e.Hash == own.Hash && e.Mode == own.Mode {
				next, nextOwn = pc, e // unchanged on this side: look there
				break
			}
		}
		if next != nil {
			c, own = next, nextOwn
			continue
		}
		if own.Hash.IsZero() && len(c.ParentHashes) == 0 {
			return "", "", nil
		}
		t := parseTrailers(c.Message)
		if len(c.ParentHashes) > 1 && isGitmemMerge(c.Message) {
			return mergedAt(or, c, t, path)
		}
		if mem, ver, ok := t.version(); ok {
			return mem, ver, nil
		}
		return plainChangeAt(or, c, parentTree, path)
	}
}

// gitWalkAfter is how many commits memoryAt walks itself before it asks git (through a
// touchFinder) for the commit that last changed the path: go-git reads each object from
// disk at some 30 µs, git walks ten times faster, but a git process costs about 2 ms.
const gitWalkAfter = 64

// touchFinder is an objectReader that can ask git for the commit of rev's history that last
// changed path (git log -1 -- path, which follows a merge's parent that has the same file,
// as memoryAt does): the zero hash if none did. ok is false if git cannot answer (no git
// program, or an object only in memory); memoryAt then walks on by itself.
type touchFinder interface {
	lastTouch(rev plumbing.Hash, path string) (h plumbing.Hash, ok bool)
}

func (r *repo) lastTouch(rev plumbing.Hash, path string) (plumbing.Hash, bool) {
	if _, err := gitexec.Path(); err != nil {
		return plumbing.ZeroHash, false
	}
	out, err := r.GitOutput(context.Background(), "log", "-1", "--format=%H", rev.String(), "--", strings.TrimPrefix(path, "/"))
	if err != nil {
		return plumbing.ZeroHash, false
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		h, ok := parseHash(s)
		return h, ok
	}
	return plumbing.ZeroHash, true
}

func (b *batch) lastTouch(rev plumbing.Hash, path string) (plumbing.Hash, bool) {
	return b.s.repo.lastTouch(rev, path)
}

// mergedAt reads the memory at path from the trailers of a merge that gitmem made, or, if
// they do not name path, from the history of its parents.
func mergedAt(or objectReader, c *object.Commit, t trailers, path string) (mem, ver string, err error) {
	for _, kv := range t {
		live, isLive := parseMergeLive(kv.Value)
		gone, isGone := parseMergeGone(kv.Value)
		switch {
		case strings.EqualFold(kv.Key, trailerMergeLive) && isLive && live.path == path:
			mem, ver = live.mem, live.ver
		case strings.EqualFold(kv.Key, trailerMergeGone) && isGone && gone.path == path:
			mem, ver = gone.mem, gone.ver
		}
	}
	if mem != "" {
		return mem, ver, nil
	}
	for _, p := range c.ParentHashes {
		if mem, ver, err = memoryAt(or, p, path); err != nil || mem != "" {
			return mem, ver, err
		}
	}
	return "", "", nil
}

// plainChangeAt reads the change to path in commit c made with plain git (against its
// first parent, whose tree is parentTree) as applyPlainCommit does.
func plainChangeAt(or objectReader, c *object.Commit, parentTree plumbing.Hash, path string) (mem, ver string, err error) {
	changes, err := diffTrees(or, parentTree, c.TreeHash, "", nil)
	if err != nil {
		return "", "", err
	}
	changes = onlyMemories(changes)
	renamedFrom := plainRenames(changes, parseTrailers(c.Message))
	src, made := path, false
	for i, ch := range changes {
		if ch.Path != path {
			continue
		}
		ver, made = plainVersionID(c, path), !ch.To.IsZero()
		if ch.From.IsZero() && !ch.To.IsZero() {
			r, ok := renamedFrom[i]
			if !ok {
				return plainMemoryID(c, path), ver, nil
			}
			src = changes[r].Path
		}
	}
	if len(c.ParentHashes) > 0 {
		if mem, _, err = memoryAt(or, c.ParentHashes[0], src); err != nil {
			return "", "", err
		}
	}
	if mem == "" && made {
		// No memory lived there before (a file the catalog never read as one).
		return plainMemoryID(c, path), ver, nil
	}
	return mem, ver, nil
}

// readCommit decodes the commit h.
func readCommit(or objectReader, h plumbing.Hash) (*object.Commit, error) {
	o, err := or.object(h)
	if err != nil {
		return nil, err
	}
	c := &object.Commit{}
	if err := c.Decode(o); err != nil {
		return nil, fmt.Errorf("decode commit %s: %w", h, err)
	}
	return c, nil
}
