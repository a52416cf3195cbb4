package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/gitmem/gitmem/gitstore"
)

// The index's own records, written with the documents in the same batch.
var (
	keyFormat  = []byte("gitmem.format")
	keyCommit  = []byte("gitmem.commit")  // the commit the index reflects
	keyPending = []byte("gitmem.pending") // JSON list of heads that an unfinished catch-up was going to
)

// storeIndex is the index of one store and its indexer goroutine (run), the only one that
// writes to it.
type storeIndex struct {
	svc  *Service
	st   *gitstore.Store
	path string

	view   sync.RWMutex // guards idx and commit: searches read-lock; publishing and applying lock
	idx    bleve.Index  // the published index; nil until it reflects a commit of the store
	commit string       // the commit idx reflects
	// published is commit, readable without waiting for a batch being applied.
	published atomic.Value

	mu       sync.Mutex // guards the fields below, between the indexer and searches
	want     uint64     // catch-ups asked for by searches
	done     uint64     // the last of them that finished, with its outcome in err
	err      error
	building bool          // the index is being built from nothing
	progress [2]int        // memories done and total of that build
	changed  chan struct{} // closed and replaced whenever done, building or progress change

	wake     chan struct{}       // a search asks the indexer to catch up now
	rebuilds chan rebuildRequest // Rebuild asks it to start over
	first    *rebuildRequest     // a rebuild to begin with, instead of a catch-up; set before run
	stopped  chan struct{}       // closed when run returns

	// The indexer goroutine's own state.
	cur        bleve.Index // the index being written: idx, or one being built
	curCommit  string      // the commit cur reflects, "" if it is empty or half built
	pending    []string    // heads of catch-ups that cur holds part of
	onProgress gitstore.Progress
}

type rebuildRequest struct {
	progress gitstore.Progress
	done     chan error
}

func newStoreIndex(s *Service, st *gitstore.Store) *storeIndex {
	x := &storeIndex{svc: s, st: st, path: s.IndexPath(st.ID()), changed: make(chan struct{}),
		wake: make(chan struct{}, 1), rebuilds: make(chan rebuildRequest), stopped: make(chan struct{})}
	x.published.Store("")
	return x
}

// run is the indexer: it catches the index up whenever main moves, a search asks, or after
// a failure (with backoff), until ctx ends.
func (x *storeIndex) run(ctx context.Context) {
	defer close(x.stopped)
	log := x.svc.log.With("store", x.st.ID())
	if r := x.first; r != nil {
		// Not a catch-up first: that would build a missing or damaged index only for the
		// rebuild to throw it away.
		x.first = nil
		x.startOver(ctx, *r)
	}
	var backoff time.Duration
	for {
		moved := x.st.Moved() // before reading the head, so that no move goes unnoticed
		x.mu.Lock()
		gen := x.want
		x.mu.Unlock()
		err := x.catchUp(ctx)
		x.finish(gen, err)
		if err != nil && ctx.Err() == nil {
			if _, serr := x.svc.data.Store(ctx, x.st.ID()); gitstore.IsKind(serr, gitstore.KindNotFound) {
				log.Info("store deleted: removing its search index")
				x.svc.forget(x)
				x.closeIndex()
				os.RemoveAll(x.path)
				return
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 30*time.Second)
			log.Error("search index could not catch up; retrying", "err", err, "retry_in", backoff)
		} else {
			backoff = 0
		}
		var retry <-chan time.Time
		if backoff > 0 {
			retry = time.After(backoff)
		}
		select {
		case <-ctx.Done():
			return
		case r := <-x.rebuilds:
			x.startOver(ctx, r)
		case <-x.wake:
		case <-retry:
		case <-moved:
			// Let a burst of writes gather into one batch, unless a search asks now.
			t := time.NewTimer(x.svc.opts.Delay)
			select {
			case <-t.C:
			case <-x.wake:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
}

// startOver throws the index away and builds it from the store's head, for a rebuild request.
func (x *storeIndex) startOver(ctx context.Context, r rebuildRequest) {
	x.onProgress = r.progress
	err := x.reset()
	if err == nil {
		err = x.catchUp(ctx)
	}
	x.onProgress = nil
	r.done <- err
}

// finish records the outcome of the catch-up that served the searches up to gen.
func (x *storeIndex) finish(gen uint64, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.done, x.err = gen, err
	x.signalLocked()
}

func (x *storeIndex) signalLocked() {
	close(x.changed)
	x.changed = make(chan struct{})
}

func (x *storeIndex) setBuilding(building bool, done, total int) {
	x.mu.Lock()
	x.building, x.progress = building, [2]int{done, total}
	x.signalLocked()
	x.mu.Unlock()
	if x.onProgress != nil && building {
		x.onProgress(done, total)
	}
}

// waitFresh asks the indexer to catch up and waits until it has, from a point after the
// call began. While the index is being built from nothing it gives up after
// Options.RebuildWait with an *UnavailableError.
func (x *storeIndex) waitFresh(ctx context.Context) error {
	x.mu.Lock()
	x.want++
	my := x.want
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
	timer := time.NewTimer(x.svc.opts.RebuildWait)
	defer timer.Stop()
	for {
		x.mu.Lock()
		done, err, changed := x.done, x.err, x.changed
		building, progress := x.building, x.progress
		x.mu.Unlock()
		if done >= my {
			return err
		}
		select {
		case <-changed:
		case <-timer.C:
			if building {
				return &UnavailableError{StoreID: x.st.ID(), Done: progress[0], Total: progress[1]}
			}
			timer.Reset(x.svc.opts.RebuildWait)
		case <-x.stopped:
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// rebuild has the running indexer build the index again from nothing, and waits for it.
func (x *storeIndex) rebuild(ctx context.Context, r rebuildRequest) error {
	select {
	case x.rebuilds <- r:
	case <-x.stopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return x.awaitRebuild(r)
}

// awaitRebuild waits for the outcome of a rebuild request.
func (x *storeIndex) awaitRebuild(r rebuildRequest) error {
	select {
	case err := <-r.done:
		return err
	case <-x.stopped:
		return ErrClosed
	}
}

// open opens the index on disk, or creates an empty one if it is missing, unreadable or of
// another format. Indexer only.
func (x *storeIndex) open() error {
	log := x.svc.log.With("store", x.st.ID(), "path", x.path)
	idx, err := bleve.Open(x.path)
	if err != nil {
		idx = nil // bleve returns a typed nil with its errors
	}
	switch {
	case err == nil:
		if f, ferr := idx.GetInternal(keyFormat); ferr != nil || string(f) != indexFormat {
			log.Info("search index has another format; rebuilding it", "format", string(f))
			idx.Close()
			idx = nil
		}
	case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
		log.Info("building the search index")
	case gitstore.IsNoSpace(err):
		// Not damaged: the disk is full. Keep it, and open it again once there is space.
		return fmt.Errorf("open search index %s: %w", x.path, err)
	default:
		log.Warn("search index unreadable; rebuilding it", "err", err)
	}
	if idx == nil {
		if err := os.RemoveAll(x.path); err != nil {
			return fmt.Errorf("remove search index %s: %w", x.path, err)
		}
		if err := os.MkdirAll(filepath.Dir(x.path), 0o755); err != nil {
			return fmt.Errorf("create search directory: %w", err)
		}
		m, err := newMapping()
		if err != nil {
			return err
		}
		if idx, err = bleve.New(x.path, m); err != nil {
			return fmt.Errorf("create search index %s: %w", x.path, err)
		}
		if err := idx.SetInternal(keyFormat, []byte(indexFormat)); err != nil {
			idx.Close()
			return fmt.Errorf("create search index %s: %w", x.path, err)
		}
	}
	commit, err := idx.GetInternal(keyCommit)
	if err != nil {
		idx.Close()
		return fmt.Errorf("read search index %s: %w", x.path, err)
	}
	var pending []string
	if raw, err := idx.GetInternal(keyPending); err != nil {
		idx.Close()
		return fmt.Errorf("read search index %s: %w", x.path, err)
	} else if raw != nil {
		if err := json.Unmarshal(raw, &pending); err != nil {
			// An unreadable record of our own: nothing in the index can be trusted.
			idx.Close()
			os.RemoveAll(x.path)
			return fmt.Errorf("search index %s: bad pending record: %w", x.path, err)
		}
	}
	x.cur, x.curCommit, x.pending = idx, string(commit), pending
	return nil
}

// reset throws the index away: it is unpublished, closed and removed. Indexer only.
func (x *storeIndex) reset() error {
	x.closeIndex()
	if err := os.RemoveAll(x.path); err != nil {
		return fmt.Errorf("remove search index %s: %w", x.path, err)
	}
	return nil
}

// closeIndex unpublishes and closes the index. Indexer only, or after it stopped.
func (x *storeIndex) closeIndex() error {
	x.view.Lock()
	x.idx, x.commit = nil, ""
	x.published.Store("")
	x.view.Unlock()
	var err error
	if x.cur != nil {
		err = x.cur.Close()
	}
	x.cur, x.curCommit, x.pending = nil, "", nil
	return err
}

// close stops the indexer and closes the index.
func (x *storeIndex) close() error {
	<-x.stopped
	return x.closeIndex()
}

// brokenError is a failure of the index itself (not of the store): the index is rebuilt.
type brokenError struct{ err error }

// failed classifies a failure to open or write the index: a full disk is a storage error
// (see catchUp), anything else means the index is broken and is rebuilt.
func (x *storeIndex) failed(err error) error {
	if gitstore.IsNoSpace(err) {
		rel, _ := filepath.Rel(x.svc.data.Dir(), x.path)
		return &gitstore.Error{Kind: gitstore.KindStorage, Err: err, Message: fmt.Sprintf(
			"the search index cannot be brought up to date: %s in the data directory, writing %s; free space on that disk and search again (the index is kept and catches up then)",
			gitstore.NoSpaceCause(err), filepath.ToSlash(rel))}
	}
	return &brokenError{err}
}

func (e *brokenError) Error() string { return "search index: " + e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }

// catchUp brings the index to the store's head: it opens the index if needed, lists the
// paths that changed since the commit the index reflects (and since the heads of an
// unfinished catch-up), indexes them and publishes the result. Indexer only.
func (x *storeIndex) catchUp(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := x.tryCatchUp(ctx)
		var broken *brokenError
		switch {
		case gitstore.IsKind(err, gitstore.KindStorage):
			// The disk is full: the index is not damaged. It is closed as it is on disk
			// (bleve keeps the failed segment in memory, and its next batch then panicked in
			// zapx: seen in TestDiskFull) and opened again
			// by the next catch-up, which the indexer retries with backoff.
			if cerr := x.closeIndex(); cerr != nil {
				x.svc.log.Warn("close search index after a write error", "store", x.st.ID(), "err", cerr)
			}
			return err
		case err == nil || attempt > 0 || ctx.Err() != nil:
			return err
		case errors.As(err, &broken):
			x.svc.log.Warn("search index failed; rebuilding it", "store", x.st.ID(), "err", err)
		case gitstore.IsKind(err, gitstore.KindNotFound) && x.curCommit != "":
			// The commit the index reflects is gone: history was rewritten and the store
			// cannot say what took its place (a redaction can: Changes follows it). What
			// the index holds may be what was removed: start over.
			x.svc.log.Warn("search index reflects a commit that history no longer has; rebuilding it", "store", x.st.ID(), "commit", x.curCommit)
		default:
			return err
		}
		if err := x.reset(); err != nil {
			return err
		}
	}
}

func (x *storeIndex) tryCatchUp(ctx context.Context) error {
	if x.cur == nil {
		if err := x.open(); err != nil {
			return x.failed(err)
		}
	}
	from := append([]string{x.curCommit}, x.pending...)
	head, changes, err := x.st.Changes(ctx, from...)
	if err != nil {
		return err
	}
	fromScratch := x.curCommit == ""
	if fromScratch {
		x.setBuilding(true, 0, len(changes))
		defer x.setBuilding(false, 0, 0)
	}
	if head != x.curCommit || len(x.pending) > 0 {
		// Searches see the index before or after a catch-up, never halfway: the published
		// index is locked while it changes. One being built is not published yet.
		x.view.RLock()
		live := x.idx != nil
		x.view.RUnlock()
		if live {
			x.view.Lock()
			defer x.view.Unlock()
		}
		if err := x.apply(ctx, head, changes, fromScratch); err != nil {
			return err
		}
		if !live {
			x.view.Lock()
			defer x.view.Unlock()
		}
	} else {
		x.view.Lock()
		defer x.view.Unlock()
	}
	x.idx, x.commit = x.cur, x.curCommit
	x.published.Store(x.commit)
	return nil
}

// apply indexes changes and records head as the commit the index reflects. Changes that
// take more than one batch first record head as pending, so that a crash halfway is
// repaired by the next catch-up: it also re-indexes what changed between head and the
// index's commit.
func (x *storeIndex) apply(ctx context.Context, head string, changes []gitstore.Change, fromScratch bool) error {
	size := x.svc.opts.BatchSize
	for start := 0; start == 0 || start < len(changes); start += size {
		b := x.cur.NewBatch()
		if start == 0 && len(changes) > size {
			raw, err := json.Marshal(append(x.pending, head))
			if err != nil {
				return err
			}
			b.SetInternal(keyPending, raw)
		}
		end := min(start+size, len(changes))
		for _, c := range changes[start:end] {
			if c.MemoryID == "" {
				b.Delete(c.Path)
				continue
			}
			content, err := x.st.Blob(ctx, c.Blob)
			if err != nil {
				return fmt.Errorf("index %s: %w", c.Path, err)
			}
			if err := b.Index(c.Path, document(c.MemoryID, c.Path, c.Blob, content)); err != nil {
				return &brokenError{fmt.Errorf("index %s: %w", c.Path, err)}
			}
		}
		last := end == len(changes)
		if last {
			b.SetInternal(keyCommit, []byte(head))
			b.DeleteInternal(keyPending)
		}
		if err := x.cur.Batch(b); err != nil {
			return x.failed(err)
		}
		if start == 0 && !last {
			x.pending = append(x.pending, head)
		}
		if fromScratch {
			x.setBuilding(true, end, len(changes))
		}
		if hook := x.svc.opts.afterBatch; hook != nil {
			hook(end, len(changes))
		}
		if err := ctx.Err(); err != nil && !last {
			return err
		}
	}
	x.curCommit, x.pending = head, nil
	return nil
}
