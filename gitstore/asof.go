package gitstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// As-of reads: the memories of a store as they were at a point of main's history, named by
// a time or by a commit. A Snapshot reads paths and contents from the tree of main's commit
// at that point and ids, versions and times from the catalog, whose versions are numbered
// in the order of main's first-parent history: the versions numbered up to the snapshot's
// are the ones that made its state.

// Snapshot is a store as of a point of main's history. It answers like the store does,
// with the memories that were live then.
type Snapshot struct {
	s *Store
	// Commit is the commit of main whose tree the snapshot reads; "" before the store had
	// any memory (or any commit, for a commit named by hash).
	Commit string
	tree   plumbing.Hash
	seq    uint64 // the versions numbered 1 to seq made the snapshot's state
}

// MemoryReader reads a store's memories: the Store as it is, or a Snapshot of it as of a
// point of its history. Store.ReaderAt gives the one that an "at" names; the API, the CLI
// and the tools read through it, so that they read the past as they read the present.
type MemoryReader interface {
	// Get returns the memory with an id, if it is (was) live; else a KindNotFound error.
	Get(ctx context.Context, id string, withContent bool) (Memory, error)
	// GetByPath returns the memory at a path; else a KindNotFound error.
	GetByPath(ctx context.Context, path string, withContent bool) (Memory, error)
	// List lists the memories and folders that opts selects, one page at a time.
	List(ctx context.Context, opts ListOptions) (ListPage, error)
}

var (
	_ MemoryReader = (*Store)(nil)
	_ MemoryReader = (*Snapshot)(nil)
)

// ReaderAt returns the store if at is "", else the store as of at (see At).
func (s *Store) ReaderAt(ctx context.Context, at string) (MemoryReader, error) {
	if at == "" {
		return s, nil
	}
	snap, err := s.At(ctx, at)
	if err != nil {
		return nil, err // not a nil *Snapshot in the interface
	}
	return snap, nil
}

// AtFormHint names the forms that At accepts, for error messages.
const AtFormHint = TimeFormHint + ", or a commit hash (at least 7 hex digits)"

// At returns the store as of at: an RFC 3339 time, for the state after the last version
// made at or before it (a time before the store's first version gives an empty store, one
// in the future the current state), or a commit hash, full or abbreviated to at least 7 hex
// digits, of a commit on main's first-parent history.
func (s *Store) At(ctx context.Context, at string) (*Snapshot, error) {
	if isHexPrefix(at) {
		return s.AtCommit(ctx, at)
	}
	if t, err := ParseTime(at, s.opts.Clock()); err == nil {
		return s.AtTime(ctx, t)
	}
	return nil, invalidf("at %q must be %s", at, AtFormHint)
}

// IsAtForm reports whether at has a form that At accepts (a time, or a commit hash), whether
// or not it names a point of a store's history: for a caller that names its own parameter in
// the error (the CLI's --at), as At's names the API's.
func IsAtForm(at string) bool {
	if isHexPrefix(at) {
		return true
	}
	_, err := ParseTime(at, time.Now())
	return err == nil
}

func isHexPrefix(s string) bool {
	if len(s) < 7 || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// AtTime returns the store as it was after the last version made at or before t. Version
// times have milliseconds, so t is cut to milliseconds.
func (s *Store) AtTime(ctx context.Context, t time.Time) (*Snapshot, error) {
	ms := t.UnixMilli()
	snap := &Snapshot{s: s}
	err := s.view(ctx, func(ct catTx) error {
		for v, err := range ct.versionsDown(everyVersion) {
			if err != nil {
				return err
			}
			if v.At <= ms {
				snap.seq, snap.Commit = v.seq, v.Commit
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, snap.loadTree()
}

// AtCommit returns the store as of a commit of main's first-parent history, named by its
// hash or an abbreviation of at least 7 hex digits.
func (s *Store) AtCommit(ctx context.Context, hash string) (*Snapshot, error) {
	if !isHexPrefix(hash) {
		return nil, invalidf("at %q is not a commit hash: %s", hash, AtFormHint)
	}
	hash = strings.ToLower(hash)
	snap := &Snapshot{s: s}
	err := s.view(ctx, func(ct catTx) error {
		if h, ok := parseHash(hash); ok {
			hash = ct.rewrittenTo(h).String() // a commit that a redaction rewrote
		}
		// Walk main's first parents back from the commit the catalog reflects, keeping the
		// commits newer than the one named: their versions are not the snapshot's.
		newer := map[string]bool{}
		var found plumbing.Hash
		var seen []string
		for h := ct.applied(); !h.IsZero(); {
			if strings.HasPrefix(h.String(), hash) {
				if !found.IsZero() {
					return invalidf("at %q is ambiguous: it abbreviates commits %s and %s", hash, found, h)
				}
				found = h
				if len(hash) == 40 {
					break
				}
			}
			if found.IsZero() {
				seen = append(seen, h.String())
			}
			c, err := s.repo.commit(h)
			if err != nil {
				return err
			}
			h = plumbing.ZeroHash
			if len(c.ParentHashes) > 0 {
				h = c.ParentHashes[0]
			}
		}
		if found.IsZero() {
			return &Error{Kind: KindInvalid, Rule: RuleAtCommit,
				Message: fmt.Sprintf("at %q names no commit of main's (first-parent) history", hash)}
		}
		for _, h := range seen {
			newer[h] = true
		}
		snap.Commit = found.String()
		for v, err := range ct.versionsDown(everyVersion) {
			if err != nil {
				return err
			}
			if !newer[v.Commit] {
				snap.seq = v.seq
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, snap.loadTree()
}

func (sn *Snapshot) loadTree() error {
	if sn.Commit == "" {
		return nil
	}
	c, err := sn.s.repo.commit(plumbing.NewHash(sn.Commit))
	if err != nil {
		return err
	}
	sn.tree = c.TreeHash
	return nil
}

// read runs fn on the catalog. The catalog only grows while main moves forward, so the
// snapshot's version numbers keep their meaning; a rewritten history (which rebuilds the
// catalog) can make an older snapshot answer wrongly, so snapshots are meant to be short-lived.
func (sn *Snapshot) read(fn func(ct catTx) error) error {
	return sn.s.readCatalog(fn)
}

// memoryAsOf returns the last version of memory id numbered at most sn.seq and the latest
// time of its versions up to it; ok is false if the memory had no version yet.
func (sn *Snapshot) memoryAsOf(ct catTx, id string) (v verRec, updated int64, ok bool, err error) {
	for w, err := range ct.memoryVersionsDown(id, sn.seq) {
		if err != nil {
			return v, 0, false, err
		}
		if !ok {
			v, ok = w, true
		}
		if w.At > updated {
			updated = w.At
		}
	}
	return v, updated, ok, nil
}

// memory builds the memory id as of the snapshot from its last version v, reading the
// content (if asked for) from the snapshot's tree.
func (sn *Snapshot) memory(ct catTx, id string, v verRec, updated int64, blob plumbing.Hash, withContent bool) (Memory, error) {
	rec, _, err := ct.memory(id)
	if err != nil {
		return Memory{}, err
	}
	m := Memory{ID: id, StoreID: sn.s.id, VersionID: v.ID, Path: v.Path, ContentSHA256: v.SHA, SizeBytes: v.Size,
		CreatedAt: msTime(rec.Created), UpdatedAt: msTime(updated)}
	if blob.String() != v.Blob {
		return Memory{}, fmt.Errorf("catalog version %s of memory %s has blob %s, but commit %s has %s at %s", v.ID, id, v.Blob, sn.Commit, blob, v.Path)
	}
	if withContent {
		m.Content, err = sn.s.loadContent(blob.String())
	}
	return m, err
}

// fileAt returns the blob of the memory file at path in the snapshot's tree.
func (sn *Snapshot) fileAt(path string) (plumbing.Hash, bool, error) {
	if sn.tree.IsZero() {
		return plumbing.ZeroHash, false, nil
	}
	e, found, _, err := entryAt(sn.s.repo, sn.tree, treePath(path))
	if err != nil || !found || !isMemoryFile(e.Mode) {
		return plumbing.ZeroHash, false, err
	}
	return e.Hash, true, nil
}

func isMemoryFile(m filemode.FileMode) bool { return m.IsFile() && m != filemode.Symlink }

// Get returns the memory with the given id as it was in the snapshot.
func (sn *Snapshot) Get(ctx context.Context, id string, withContent bool) (Memory, error) {
	var m Memory
	err := sn.read(func(ct catTx) error {
		v, updated, ok, err := sn.memoryAsOf(ct, id)
		if err != nil {
			return err
		}
		if !ok || v.Op == OpDeleted {
			return notFoundf("memory %s not found at %s", id, sn.where())
		}
		blob, found, err := sn.fileAt(v.Path)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("catalog has memory %s at %s, but commit %s has no file there", id, v.Path, sn.Commit)
		}
		m, err = sn.memory(ct, id, v, updated, blob, withContent)
		return err
	})
	return m, err
}

func (sn *Snapshot) where() string {
	if sn.Commit == "" {
		return "that point (the store had no memories yet)"
	}
	return "commit " + sn.Commit
}

// GetByPath returns the memory that was at path in the snapshot.
func (sn *Snapshot) GetByPath(ctx context.Context, path string, withContent bool) (Memory, error) {
	if err := ValidatePath(path); err != nil {
		return Memory{}, err
	}
	blob, found, err := sn.fileAt(path)
	if err != nil {
		return Memory{}, err
	}
	if !found {
		return Memory{}, notFoundf("no memory at %s at %s", path, sn.where())
	}
	var m Memory
	err = sn.read(func(ct catTx) error {
		ids, err := sn.idsAt(ct, []string{path})
		if err != nil {
			return err
		}
		a, ok := ids[path]
		if !ok {
			return fmt.Errorf("catalog knows no memory at %s as of commit %s", path, sn.Commit)
		}
		m, err = sn.memory(ct, a.id, a.v, a.updated, blob, withContent)
		return err
	})
	return m, err
}

type asOf struct {
	id      string
	v       verRec
	updated int64
}

// idsAt finds which memories were at paths (files of the snapshot's tree). A memory that is
// still at the same path today is found at once through the catalog's path index; the
// others by walking the versions back from the snapshot's: the newest version that wrote
// a path is the one of the memory that was there.
func (sn *Snapshot) idsAt(ct catTx, paths []string) (map[string]asOf, error) {
	out := make(map[string]asOf, len(paths))
	want := map[string]bool{}
	for _, p := range paths {
		if id, ok := ct.pathID(p); ok {
			v, updated, ok, err := sn.memoryAsOf(ct, id)
			if err != nil {
				return nil, err
			}
			if ok && v.Op != OpDeleted && v.Path == p {
				out[p] = asOf{id, v, updated}
				continue
			}
		}
		want[p] = true
	}
	if len(want) == 0 {
		return out, nil
	}
	for v, err := range ct.versionsDown(sn.seq) {
		if len(want) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
		if !want[v.Path] {
			continue
		}
		delete(want, v.Path)
		if v.Op == OpDeleted {
			continue
		}
		last, updated, ok, err := sn.memoryAsOf(ct, v.Memory)
		if err != nil {
			return nil, err
		}
		if ok && last.ID == v.ID {
			out[v.Path] = asOf{v.Memory, v, updated}
		}
	}
	return out, nil
}

// treeFiles lists the memory files below dir (a tree path such as "/a/b", "" for the
// root) of tree h, in path order.
func (sn *Snapshot) treeFiles(h plumbing.Hash, dir string, out []treeFile) ([]treeFile, error) {
	entries, err := readTree(sn.s.repo, h)
	if err != nil {
		return nil, err
	}
	for _, e := range entries { // git's order is path order: a directory sorts as "name/"
		p := dir + "/" + e.Name
		switch {
		case e.Mode == filemode.Dir:
			if p == "/"+reservedDir {
				continue
			}
			if out, err = sn.treeFiles(e.Hash, p, out); err != nil {
				return nil, err
			}
		case isMemoryFile(e.Mode):
			out = append(out, treeFile{p, e.Hash})
		}
	}
	return out, nil
}

type treeFile struct {
	path string
	blob plumbing.Hash
}

// List lists the memories of the snapshot below opts.PathPrefix in path order, one page at
// a time, as Store.List does.
func (sn *Snapshot) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	limit, prefix, rawAfter, err := opts.listing()
	if err != nil {
		return ListPage{}, err
	}
	after := string(rawAfter)
	var files []treeFile
	if !sn.tree.IsZero() {
		dir := strings.TrimSuffix(prefix, "/")
		root := sn.tree
		if dir != "" {
			e, found, _, err := entryAt(sn.s.repo, sn.tree, treePath(dir))
			if err != nil {
				return ListPage{}, err
			}
			if !found || e.Mode != filemode.Dir {
				return ListPage{}, nil
			}
			root = e.Hash
		}
		if files, err = sn.treeFiles(root, dir, nil); err != nil {
			return ListPage{}, err
		}
	}
	// Page as Store.List pages the catalog's path index, with the same cursors.
	var page ListPage
	var mems []int // indexes of page.Items that are memories
	var blobs []plumbing.Hash
	i := 0
	if after != "" {
		i = sort.Search(len(files), func(i int) bool { return files[i].path >= after })
		for i < len(files) && (files[i].path == after || strings.HasSuffix(after, "/") && strings.HasPrefix(files[i].path, after)) {
			i++
		}
	}
	for i < len(files) {
		if len(page.Items) == limit {
			page.NextCursor = encodeCursor('p', lastKey(page.Items))
			break
		}
		p := files[i].path
		rest := p[len(prefix):]
		if opts.Depth > 0 && strings.Count(rest, "/") >= opts.Depth {
			segs := strings.SplitN(rest, "/", opts.Depth+1)
			roll := prefix + strings.Join(segs[:opts.Depth], "/") + "/"
			page.Items = append(page.Items, ListItem{Prefix: roll})
			for i < len(files) && strings.HasPrefix(files[i].path, roll) {
				i++
			}
			continue
		}
		mems = append(mems, len(page.Items))
		blobs = append(blobs, files[i].blob)
		page.Items = append(page.Items, ListItem{Memory: &Memory{Path: p}})
		i++
	}
	if len(mems) == 0 {
		return page, nil
	}
	err = sn.read(func(ct catTx) error {
		paths := make([]string, len(mems))
		for j, k := range mems {
			paths[j] = page.Items[k].Memory.Path
		}
		ids, err := sn.idsAt(ct, paths)
		if err != nil {
			return err
		}
		for j, k := range mems {
			a, ok := ids[paths[j]]
			if !ok {
				return fmt.Errorf("catalog knows no memory at %s as of commit %s", paths[j], sn.Commit)
			}
			m, err := sn.memory(ct, a.id, a.v, a.updated, blobs[j], opts.WithContent)
			if err != nil {
				return err
			}
			page.Items[k].Memory = &m
		}
		return nil
	})
	if err != nil {
		return ListPage{}, err
	}
	return page, nil
}
