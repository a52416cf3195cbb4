package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	bolt "go.etcd.io/bbolt"
)

// maxGroup bounds how many queued mutations share one durable ref update.
const maxGroup = 256

// request is one mutation queued to the store's writer. fn runs in the writer goroutine
// against the batch; it checks what it needs (preconditions are atomic with the write
// because nothing else writes meanwhile) and then commits through the batch.
type request struct {
	ctx  context.Context
	fn   func(b *batch) (any, error)
	task func() error // instead of fn: work that runs alone, outside any batch (reindex)
	// trial, for a mutation made with a context from Trial, runs fn alone and makes nothing.
	trial *TrialResult
	done  chan result
}

// TrialResult is what a trial write found (Trial).
type TrialResult struct {
	// Changes tells whether the write would have made a commit: false for one that leaves
	// the store as it is (the content it already has, say).
	Changes bool
	// Head is main's commit that the trial ran on. A proposal that the write opens starts
	// from it if main moves before the proposal opens (proposals.Manager.WritesTried), so that the
	// write meets on the proposal's fork the store that the trial saw.
	Head string
}

type trialKey struct{}

// Trial returns a context whose writes are tried and not made: each is checked, against
// the store as it is, by everything that checks a write (its preconditions, paths, policy,
// quotas), as a proposal of the store would take it (the review policy, which sends a change
// to a proposal, aside); it returns what it would return, and commits nothing. res says
// whether the write would change the store. A propose key's first write tries it on main
// before opening the proposal that it goes to, so that a refused write opens none.
//
// The writes that can be tried are those that the writer makes in its groups (Write,
// UpdateMemory, Delete, DeletePath, MovePath, Restore, Revert, Expire, UpdateInfo, Archive,
// RecordProposal). What runs outside them (git, files, the writer's tasks: Fork, ForkBranch,
// TakeBranch, SetBranch, UndoBranch, ReceivePush, StampApproval, Integrate, Redact, GC,
// Reindex, CreateStore, ImportStore, DeleteStore) refuses a trial's context rather than act.
func Trial(ctx context.Context, res *TrialResult) context.Context {
	return context.WithValue(ctx, trialKey{}, res)
}

// refuseTrial refuses ctx if it is a trial's (Trial): what cannot be tried must not be done
// for real by a caller that meant to try it.
func refuseTrial(ctx context.Context, what string) error {
	if ctx.Value(trialKey{}) == nil {
		return nil
	}
	return fmt.Errorf("%s cannot be tried (gitstore.Trial): only the writer's own writes can", what)
}

type result struct {
	v   any
	err error
}

// submit queues fn to the writer and waits for its outcome. Once the writer has taken the
// request up it runs to the end, whatever happens to ctx, so that an answered write is never
// half done.
func (s *Store) submit(ctx context.Context, fn func(b *batch) (any, error)) (any, error) {
	trial, _ := ctx.Value(trialKey{}).(*TrialResult)
	return s.enqueue(ctx, &request{ctx: ctx, fn: fn, trial: trial, done: make(chan result, 1)})
}

// submitAs is submit for a mutation whose result has type T.
func submitAs[T any](ctx context.Context, s *Store, fn func(b *batch) (T, error)) (T, error) {
	v, err := s.submit(ctx, func(b *batch) (any, error) { return fn(b) })
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// runTask runs task in the writer goroutine, alone. A trial's context is refused: a task
// does what it does.
func (s *Store) runTask(ctx context.Context, task func() error) error {
	if err := refuseTrial(ctx, "a task of the writer"); err != nil {
		return err
	}
	_, err := s.enqueue(ctx, &request{ctx: ctx, task: task, done: make(chan result, 1)})
	return err
}

func (s *Store) enqueue(ctx context.Context, r *request) (any, error) {
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.quit:
		return nil, ErrStoreClosed
	}
	// The queue may take a request after the writer has answered its last one and gone (the
	// select above picks at random when both cases are ready): then no answer comes.
	var res result
	select {
	case res = <-r.done:
	case <-s.done:
		select {
		case res = <-r.done:
		default:
			return nil, ErrStoreClosed
		}
	}
	return res.v, NoSpace(res.err, s.opts.dataDir)
}

// run is the writer goroutine: the only one that writes to the store's repository and
// catalog. It takes the queued mutations in groups, gives each its own commit, and makes the
// whole group durable with one ref update.
func (s *Store) run() {
	defer close(s.done)
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		select {
		case r := <-s.reqs:
			s.settleUnsettled()
			group := []*request{r}
		drain:
			for len(group) < maxGroup {
				select {
				case r := <-s.reqs:
					group = append(group, r)
				default:
					break drain
				}
			}
			// Trials run after the rest, each alone: taken in turn, each would end the group
			// of the writes queued before it, and a client whose writes are all tried (a
			// propose key's first ones) would cost the others' writes a journal sync each.
			var trials []*request
			rest := group[:0]
			for _, r := range group {
				if r.trial != nil {
					trials = append(trials, r)
				} else {
					rest = append(rest, r)
				}
			}
			for group = rest; len(group) > 0; {
				n := 0
				for n < len(group) && group[n].task == nil {
					n++
				}
				if n > 0 {
					s.runGroup(group[:n])
					group = group[n:]
					continue
				}
				group[0].done <- result{err: s.runTaskNow(group[0].task)}
				group = group[1:]
			}
			for _, r := range trials {
				r.done <- s.runTrial(r)
			}
			s.afterGroup()
			idle.Reset(s.opts.IdlePack)
		case <-idle.C:
			s.checkpoint(true)
			s.indexActorsIdle()
			if err := s.db.sync(); err != nil { // what the last groups committed, durable while idle
				s.log.Error("sync the catalog", "store", s.id, "err", err)
			}
			s.askMaintain(idlePacks)
		case <-s.quit:
			// Answer what is still queued, so that no caller waits forever.
			for {
				select {
				case r := <-s.reqs:
					r.done <- result{err: ErrStoreClosed}
				default:
					return
				}
			}
		}
	}
}

func (s *Store) runGroup(group []*request) {
	var results []result
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		results, err = s.tryGroup(group)
		if !errors.Is(err, errRefMoved) {
			break
		}
		// Someone else moved main (a push): catch up and build on the new head.
	}
	for i, r := range group {
		if err != nil {
			r.done <- result{err: err}
			continue
		}
		r.done <- results[i]
	}
}

// tryGroup applies the group on top of main. It returns errRefMoved if main moved before the
// group could be published; then nothing was published and the group can be tried again.
func (s *Store) tryGroup(group []*request) ([]result, error) {
	if err := s.catchUp(nil); err != nil {
		return nil, err
	}
	tx, err := s.db.Begin(true)
	if err != nil {
		return nil, fmt.Errorf("begin catalog update: %w", err)
	}
	defer tx.Rollback()
	b, err := s.newBatch(tx)
	if err != nil {
		return nil, err
	}
	defer b.forgetReplaced()
	start := b.head
	results := make([]result, len(group))
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			results[i] = result{err: err}
			continue
		}
		v, err := r.fn(b)
		if b.broken != nil {
			return nil, b.broken
		}
		results[i] = result{v: v, err: err}
	}
	if b.head == start {
		return results, nil
	}
	s.publishing.Store(b.head)
	t, err := s.repo.publish(b.pending, start, b.head)
	if err != nil {
		return nil, err
	}
	s.head = commitTree{b.head, b.root}
	s.opts.Observer.GroupCommitted(s.id, len(group), t.Pack, t.Durable)
	if err := tx.Commit(); err != nil {
		// The commits are published and durable (the journal); the catalog catches up from
		// history on the next write or at the next open.
		s.log.Error("update catalog after commit", "store", s.id, "err", err)
		s.db.commitFailed(err)
	}
	s.moved.notify()
	return results, nil
}

// runTrial runs a trial write (Trial) as a group of its own, and rolls back all it did.
func (s *Store) runTrial(r *request) result {
	if err := r.ctx.Err(); err != nil {
		return result{err: err}
	}
	if err := s.catchUp(nil); err != nil {
		return result{err: err}
	}
	tx, err := s.db.Begin(true)
	if err != nil {
		return result{err: fmt.Errorf("begin catalog update: %w", err)}
	}
	defer tx.Rollback()
	b, err := s.newBatch(tx)
	if err != nil {
		return result{err: err}
	}
	b.trial = true
	start, last := b.head, s.lastTime
	v, err := r.fn(b)
	// Nothing of it stays: the writer's clock, which dates the next versions, and the trees
	// it built, which main does not hold.
	s.lastTime = last
	for h := range b.edits {
		s.forgetTree(h)
	}
	if b.broken != nil {
		return result{err: b.broken}
	}
	r.trial.Changes, r.trial.Head = b.head != start, start.String()
	return result{v: v, err: err}
}

// batch is the state that a group of mutations builds on: the head commit, its tree, the
// objects made so far, and the catalog transaction that each commit is applied to.
type batch struct {
	s       *Store
	ct      catTx
	head    plumbing.Hash
	root    plumbing.Hash
	pending []plumbing.EncodedObject
	byHash  map[plumbing.Hash]plumbing.EncodedObject
	last    time.Time
	broken  error // an I/O error that aborts the whole group
	// replaced are the trees that the group's commits made new versions of (replacedTree)
	// and that no later commit of the group built again (keepTree).
	replaced map[plumbing.Hash]bool
	edits    map[plumbing.Hash]treeEdit // how the group's trees were built (editLog)
	// approver, while a write that a person approved in review runs, is recorded in its
	// commit (Gitmem-Approved-By).
	approver *Actor
	// trial: the batch is a trial write's (Trial), checked as a proposal would take it.
	trial bool
}

func (s *Store) newBatch(tx *bolt.Tx) (*batch, error) {
	b := &batch{s: s, ct: writeTx(tx), byHash: map[plumbing.Hash]plumbing.EncodedObject{}, last: s.lastTime}
	b.head = b.ct.applied()
	switch {
	case b.head.IsZero():
	case b.head == s.head.commit:
		b.root = s.head.tree
	default:
		c, err := s.repo.commit(b.head)
		if err != nil {
			return nil, err
		}
		b.root = c.TreeHash
		s.head = commitTree{b.head, b.root}
	}
	return b, nil
}

// The writer's tree cache is emptied when it holds maxCachedTrees trees or
// maxCachedEntries entries. Every commit makes a new version of each tree on its path, and
// the versions it replaces leave the cache at the end of the group (forgetReplaced), so that
// it holds the head's trees: at 100,000 memories in folders of 100, all of them fit. Before,
// a count alone let the versions of a wide folder fill it (4,096 versions of a 1,000-entry
// folder are about 230 MB); a tree not cached is read back from the packs.
const (
	maxCachedTrees   = 4096
	maxCachedEntries = 1 << 18 // about 15 MB
)

func (b *batch) tree(h plumbing.Hash) ([]object.TreeEntry, bool) {
	e, ok := b.s.trees[h]
	return e, ok
}

func (b *batch) replacedTree(h plumbing.Hash) {
	if b.replaced == nil {
		b.replaced = map[plumbing.Hash]bool{}
	}
	b.replaced[h] = true
}

// forgetReplaced drops from the tree cache the trees that the group made new versions of:
// the group's commits and their catalog updates have read them by now.
func (b *batch) forgetReplaced() {
	for h := range b.replaced {
		b.s.forgetTree(h)
	}
}

// forgetTree drops tree h from the writer's caches: its entries and its sums.
func (s *Store) forgetTree(h plumbing.Hash) {
	if e, ok := s.trees[h]; ok {
		s.treeEntries -= len(e)
		delete(s.trees, h)
	}
	if ts, ok := s.sums[h]; ok {
		s.sumsBytes -= len(ts.content)
		delete(s.sums, h)
	}
}

func (b *batch) keepEdit(h plumbing.Hash, e treeEdit) {
	if b.edits == nil {
		b.edits = map[plumbing.Hash]treeEdit{}
	}
	b.edits[h] = e
}

func (b *batch) editOf(h plumbing.Hash) (treeEdit, bool) {
	e, ok := b.edits[h]
	return e, ok
}

func (b *batch) keepTree(h plumbing.Hash, entries []object.TreeEntry) {
	delete(b.replaced, h) // built again (a group that went A, B, A): current, not replaced
	if _, ok := b.s.trees[h]; ok {
		return
	}
	if len(b.s.trees) >= maxCachedTrees || b.s.treeEntries+len(entries) > maxCachedEntries {
		clear(b.s.trees)
		b.s.treeEntries = 0
	}
	b.s.trees[h] = entries
	b.s.treeEntries += len(entries)
}

func (b *batch) sumsOf(h plumbing.Hash) *treeSums { return b.s.sums[h] }

// maxSumsBytes bounds the bytes of wide trees whose sums the writer keeps, which are
// emptied past it as the tree cache is: the head's wide trees are a few, but a store may
// have many wide folders.
const maxSumsBytes = 16 << 20

func (b *batch) keepSums(h plumbing.Hash, ts *treeSums) {
	if b.s.sums == nil || b.s.sumsBytes+len(ts.content) > maxSumsBytes {
		b.s.sums, b.s.sumsBytes = map[plumbing.Hash]*treeSums{}, 0
	}
	if _, ok := b.s.sums[h]; !ok {
		b.s.sumsBytes += len(ts.content)
	}
	b.s.sums[h] = ts
}

// object implements objectReader: pending objects first, then the repository.
func (b *batch) object(h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := b.byHash[h]; ok {
		return o, nil
	}
	return b.s.repo.object(h)
}

func (b *batch) emit(o plumbing.EncodedObject) {
	if _, ok := b.byHash[o.Hash()]; ok {
		return
	}
	b.byHash[o.Hash()] = o
	b.pending = append(b.pending, o)
}

// now returns a time not before the last one used, so that versions are in time order.
func (b *batch) now() time.Time {
	t := b.s.opts.Clock().UTC()
	if t.Before(b.last) {
		t = b.last
	}
	b.last = t
	b.s.lastTime = t
	return t
}

// fail marks the group as broken by an internal error and returns it.
func (b *batch) fail(err error) error {
	if b.broken == nil {
		b.broken = err
	}
	return err
}

// commit makes one commit of tree on top of the batch's head and applies it to the catalog.
func (b *batch) commit(tree plumbing.Hash, subject string, t trailers, actor Actor, when time.Time) error {
	tree, err := b.gitTree(tree)
	if err != nil {
		return b.fail(err)
	}
	name, email := authorOf(actor)
	c := &object.Commit{
		Author:    object.Signature{Name: name, Email: email, When: when},
		Committer: object.Signature{Name: "gitmem", Email: "gitmem@localhost", When: when},
		Message:   formatMessage(subject, t),
		TreeHash:  tree,
	}
	if !b.head.IsZero() {
		c.ParentHashes = []plumbing.Hash{b.head}
	}
	o := &plumbing.MemoryObject{}
	if err := c.Encode(o); err != nil {
		return b.fail(fmt.Errorf("encode commit: %w", err))
	}
	c.Hash = o.Hash()
	b.emit(o)
	if err := b.ct.applyCommit(b, c, b.root); err != nil {
		return b.fail(err)
	}
	b.head, b.root = c.Hash, tree
	return nil
}

// gitTree is tree as a commit can name it: setEntry gives the zero hash for a tree left
// empty (the last file of a store whose store.json a push removed), and git reads no such
// tree; the commit names git's empty tree, emitted.
func (b *batch) gitTree(tree plumbing.Hash) (plumbing.Hash, error) {
	if !tree.IsZero() {
		return tree, nil
	}
	o, err := encodeTree(nil)
	if err != nil {
		return tree, err
	}
	b.emit(o)
	return o.Hash(), nil
}

// setFile returns the batch's tree with the file at path set to content (or removed, if
// content is nil).
func (b *batch) setFile(root plumbing.Hash, path string, content *string) (plumbing.Hash, error) {
	var blob plumbing.Hash
	if content != nil {
		o := blobObject([]byte(*content))
		b.emit(o)
		blob = o.Hash()
	}
	h, err := setEntry(b, root, treePath(path), blob, b.emit)
	if err != nil {
		return h, b.fail(err)
	}
	return h, nil
}

// checkPathFree returns a path conflict if, in tree root, path is taken, lies below a
// memory, or is a directory that holds memories.
func (b *batch) checkPathFree(root plumbing.Hash, path string) error {
	e, found, blocked, err := entryAt(b, root, treePath(path))
	if err != nil {
		return b.fail(err)
	}
	conflict := blocked
	if found {
		conflict = path
		if !e.Mode.IsFile() {
			if conflict, err = firstFile(b, e.Hash, path); err != nil {
				return b.fail(err)
			}
		}
	}
	if conflict == "" {
		return nil
	}
	id, _, _, err := b.ct.live(conflict)
	if err != nil {
		return b.fail(err)
	}
	return pathConflict(path, id, conflict)
}

// checkNewNames checks the names that writing path would bring into the tree root: each
// segment not there yet must be a portable name (ValidateNewSegment), and must not differ only
// in case from an entry beside it, which a clone on a case-insensitive file system (macOS,
// Windows) cannot hold together with it. Segments already in the tree are not checked, so
// that names from before the rule stay writable in place.
func (b *batch) checkNewNames(root plumbing.Hash, path string) error {
	segs := treePath(path)
	cur := root
	for i, seg := range segs {
		entries, err := readTree(b, cur)
		if err != nil {
			return b.fail(err)
		}
		var exact *object.TreeEntry
		twin, twinDir := "", false
		for k := range entries {
			switch n := entries[k].Name; {
			case n == seg:
				exact = &entries[k]
			case twin == "" && strings.EqualFold(n, seg):
				twin, twinDir = n, entries[k].Mode == filemode.Dir
			}
		}
		if exact != nil {
			if exact.Mode != filemode.Dir {
				return nil // the path itself, or a file above it (checkPathFree says so)
			}
			cur = exact.Hash
			continue
		}
		for j := i; j < len(segs); j++ {
			if err := ValidateNewSegment(path, segs[j], j == 0); err != nil {
				return err
			}
		}
		if twin != "" {
			other := "/" + strings.Join(append(segs[:i:i], twin), "/")
			if twinDir {
				other += "/"
			}
			return invalidf("path %s differs only in case from %s, which exists: a clone on macOS or Windows (whose file systems ignore case) cannot hold both, so names that break clones are refused",
				path, other)
		}
		return nil
	}
	return nil
}

// content reads the content of a live memory.
func (b *batch) content(rec memRec) (string, error) {
	o, err := b.object(plumbing.NewHash(rec.Blob))
	if err != nil {
		return "", b.fail(err)
	}
	raw, err := readEncoded(o)
	if err != nil {
		return "", b.fail(err)
	}
	return string(raw), nil
}

// storeInfo returns the store's metadata as of the batch, refusing writes once archived.
func (b *batch) writableStore() (StoreInfo, error) {
	info, err := b.ct.storeInfo()
	if err != nil {
		return info, b.fail(err)
	}
	if info.ArchivedAt != nil {
		return info, &Error{Kind: KindArchived, Message: fmt.Sprintf("memory store %s is archived and read-only", info.ID)}
	}
	return info, nil
}
