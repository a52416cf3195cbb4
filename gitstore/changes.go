package gitstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// This file serves views derived from main outside this package (the search index): the
// memory paths that changed between commits, the blobs they hold, and a signal when main
// moves.

// Change is a memory path whose state at the head differs from its state at an older commit.
type Change struct {
	Path string
	// MemoryID and Blob are the memory at Path as of the head. Both are "" when no memory
	// lives at Path there (it was deleted or renamed away): the path is to be forgotten.
	MemoryID string
	Blob     string
}

// Latest makes reads reflect main (catching up with pushes and commits made with git) and
// returns the commit they reflect, "" for a store without commits. It reads one file and
// one catalog key when nothing changed.
func (s *Store) Latest(ctx context.Context) (string, error) {
	if err := s.fresh(ctx); err != nil {
		return "", err
	}
	return commitName(s.headHash()), nil
}

func (s *Store) headHash() plumbing.Hash {
	var h plumbing.Hash
	s.readCatalog(func(ct catTx) error { h = ct.applied(); return nil })
	return h
}

func commitName(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// Changes returns the head that reads reflect and the memory paths whose state differs
// between any of the commits in from and that head, each path once, in path order (by bytes). A from
// of "" stands for the empty tree, so Changes(ctx, "") lists every memory. The cost follows
// the size of the change, not the size of the store. A from commit that the repository no
// longer has (history was rewritten and pruned) is a KindNotFound error, unless a redaction
// rewrote it: then the commit that took its place stands for it.
func (s *Store) Changes(ctx context.Context, from ...string) (head string, changes []Change, err error) {
	if err := s.fresh(ctx); err != nil {
		return "", nil, err
	}
	err = s.readCatalog(func(ct catTx) error {
		h := ct.applied()
		head = commitName(h)
		var root plumbing.Hash
		if !h.IsZero() {
			c, err := s.repo.commit(h)
			if err != nil {
				return err
			}
			root = c.TreeHash
		}
		seen := map[string]bool{}
		var all []fileChange
		for _, f := range from {
			if f == head {
				continue
			}
			var tree plumbing.Hash
			if f != "" {
				fh, ok := parseHash(f)
				if !ok {
					return invalidf("%q is not a commit hash", f)
				}
				// A commit that a redaction rewrote stands for the commit that took its place.
				if fh = ct.rewrittenTo(fh); fh == h {
					continue
				}
				c, err := s.repo.commit(fh)
				if err != nil {
					return &Error{Kind: KindNotFound, Message: fmt.Sprintf("commit %s is not in the history of memory store %s", f, s.id), Err: err}
				}
				tree = c.TreeHash
			}
			diff, err := diffTrees(s.repo, tree, root, "", nil)
			if err != nil {
				return fmt.Errorf("diff %s..%s: %w", f, head, err)
			}
			for _, ch := range diff {
				if strings.HasPrefix(ch.Path, "/"+reservedDir+"/") {
					continue
				}
				if !seen[ch.Path] {
					seen[ch.Path] = true
					all = append(all, ch)
				}
			}
		}
		changes = make([]Change, 0, len(all))
		for _, ch := range all {
			c := Change{Path: ch.Path}
			// The catalog decides what is a memory: .gitmem/, symlinks and submodules never are.
			if id, rec, ok, err := ct.live(ch.Path); err != nil {
				return err
			} else if ok {
				c.MemoryID, c.Blob = id, rec.Blob
			}
			changes = append(changes, c)
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	sortChanges(changes)
	return head, changes, nil
}

// Blob returns the content of a blob of the store's repository, such as Change.Blob. Blobs
// never change, so a blob read after main moved on is still the one that was named.
func (s *Store) Blob(ctx context.Context, hash string) (string, error) {
	h, ok := parseHash(hash)
	if !ok {
		return "", invalidf("%q is not a blob hash", hash)
	}
	b, err := s.repo.Blob(h)
	if err != nil {
		return "", &Error{Kind: KindNotFound, Message: fmt.Sprintf("blob %s is not in memory store %s", hash, s.id), Err: err}
	}
	return string(b), nil
}

// Moved returns a channel that is closed the next time the commit that reads reflect
// changes: after the writer published a group of commits, or after it caught up with commits
// made outside (a push, the git CLI). Take a new channel after each signal; a change between
// two calls may be signalled to the older channel only, so read Latest after taking one.
func (s *Store) Moved() <-chan struct{} { return s.moved.wait() }

// headSignal is a broadcast: every channel handed out before notify is closed by it.
type headSignal struct {
	mu sync.Mutex // guards ch
	ch chan struct{}
}

func (h *headSignal) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch == nil {
		h.ch = make(chan struct{})
	}
	return h.ch
}

func (h *headSignal) notify() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ch != nil {
		close(h.ch)
		h.ch = nil
	}
}

func sortChanges(cs []Change) {
	slices.SortFunc(cs, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
}
