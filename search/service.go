// Package search is gitmem's full-text search: one bleve index per memory store, a view of
// the store's head kept outside the repository (DATA/search/<memstore_id>.bleve), updated
// from tree diffs and rebuilt from git at any time.
//
// Each watched store has an indexer goroutine that wakes when main moves and indexes the
// paths that changed since the commit the index reflects, in batches, off the write's path.
// A search first brings the index up to the store's head (read your writes), which costs a
// file read and a key lookup when nothing changed. A missing, damaged or outdated index is
// rebuilt from the store; searches say so meanwhile with an *UnavailableError.
package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// Options tune a Service. The zero value is ready to use.
type Options struct {
	// Logger receives the indexers' logs; slog.Default() if nil.
	Logger *slog.Logger
	// Delay is how long an indexer waits after main moved before it indexes, so that a burst
	// of writes shares one batch (default 250ms). A search never waits for it: it catches the
	// index up itself. Each batch costs bleve a segment, its fsync and merges: in
	// BenchmarkWriteCost a single writer kept 0.75 of its throughput at 100ms and 0.83 at
	// 250ms, and at 20ms search cost it about twice the CPU per write that it did at 100ms.
	Delay time.Duration
	// RebuildWait is how long a search waits for an index that is being built from nothing
	// before it answers an *UnavailableError (default 2s).
	RebuildWait time.Duration
	// BatchSize is how many memories go into one index batch (default 500).
	BatchSize int
	// Timeout is the time budget of one search once its index is fresh (default
	// DefaultTimeout). A search over it is stopped and answered with a KindInvalid error.
	// bleve looks at it every 1,024 candidate memories; the query bounds keep the steps
	// between small.
	Timeout time.Duration

	// Observe, if set, is told how long each search took once its index was fresh and
	// whether it failed (for metrics).
	Observe func(took time.Duration, err error)

	// afterBatch, if set, is called by an indexer after each batch it applied: done of
	// total changes. Tests use it to kill a process in the middle of a catch-up.
	afterBatch func(done, total int)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Delay <= 0 {
		o.Delay = 250 * time.Millisecond
	}
	if o.RebuildWait <= 0 {
		o.RebuildWait = 2 * time.Second
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Service keeps the search indexes of a data directory's stores. Its methods are safe for
// concurrent use. Close it before the DataDir.
type Service struct {
	data *gitstore.DataDir
	dir  string
	opts Options
	log  *slog.Logger

	ctx    context.Context // ends at Close: stops the indexers
	cancel context.CancelFunc

	mu      sync.Mutex // guards indexes and closed
	indexes map[string]*storeIndex
	closed  bool
}

// New returns the search service of a data directory. It indexes a store from the first
// time the store is searched or watched (see Watch and WatchAll).
func New(data *gitstore.DataDir, opts Options) *Service {
	ctx, cancel := context.WithCancel(context.Background())
	opts = opts.withDefaults()
	return &Service{data: data, dir: data.Layout().SearchDir(), opts: opts, log: opts.Logger,
		ctx: ctx, cancel: cancel, indexes: map[string]*storeIndex{}}
}

// Dir returns the directory that holds the indexes.
func (s *Service) Dir() string { return s.dir }

// IndexPath returns the directory of a store's index.
func (s *Service) IndexPath(storeID string) string { return s.data.Layout().SearchIndex(storeID) }

// Close stops the indexers and closes the indexes. An index batch in flight completes first.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	idxs := s.indexes
	s.indexes = nil
	s.mu.Unlock()
	s.cancel()
	var errs []error
	for _, x := range idxs {
		errs = append(errs, x.close())
	}
	return errors.Join(errs...)
}

// ErrClosed is the error of a search or watch after the service or a store's index closed
// (the server is shutting down): KindUnavailable, a retry may reach a server that runs.
var ErrClosed = &gitstore.Error{Kind: gitstore.KindUnavailable, Message: "the search service is closed" + gitstore.RetryHint}

// Watch starts keeping the index of a store up to date in the background, opening (or
// building) it if needed. It returns at once.
func (s *Service) Watch(ctx context.Context, storeID string) error {
	_, err := s.index(ctx, storeID)
	return err
}

// WatchAll watches every store of the data directory, and removes the indexes of stores
// that no longer exist.
func (s *Service) WatchAll(ctx context.Context) error {
	var cursor string
	for {
		page, err := s.data.ListStores(ctx, gitstore.StoreListOptions{IncludeArchived: true, Limit: 1000, Cursor: cursor})
		if err != nil {
			return fmt.Errorf("list stores to index: %w", err)
		}
		for _, info := range page.Stores {
			if err := s.Watch(ctx, info.ID); err != nil {
				return err
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("list search indexes: %w", err)
	}
	for _, e := range entries {
		id, ok := s.data.Layout().SearchIndexStore(e.Name())
		if !ok {
			continue
		}
		if _, err := s.data.Store(ctx, id); gitstore.IsKind(err, gitstore.KindNotFound) {
			s.log.Info("removing the search index of a deleted store", "store", id)
			if err := os.RemoveAll(s.IndexPath(id)); err != nil {
				return fmt.Errorf("remove index of deleted store %s: %w", id, err)
			}
		}
	}
	return nil
}

// index returns the index of a store, starting its indexer on first use.
func (s *Service) index(ctx context.Context, storeID string) (*storeIndex, error) {
	x, _, err := s.start(ctx, storeID, nil)
	return x, err
}

// start returns the index of a store and whether this call started its indexer. An indexer
// that it starts begins with the rebuild first, if not nil, instead of a catch-up.
func (s *Service) start(ctx context.Context, storeID string, first *rebuildRequest) (*storeIndex, bool, error) {
	st, err := s.data.Store(ctx, storeID)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, ErrClosed
	}
	if x, ok := s.indexes[storeID]; ok {
		return x, false, nil
	}
	x := newStoreIndex(s, st)
	x.first = first
	s.indexes[storeID] = x
	go x.run(s.ctx)
	return x, true, nil
}

// forget drops a store's index after its store was deleted.
func (s *Service) forget(x *storeIndex) {
	s.mu.Lock()
	if s.indexes[x.st.ID()] == x {
		delete(s.indexes, x.st.ID())
	}
	s.mu.Unlock()
}

// Search searches a store. See Request for the query syntax. A request over the bounds of
// a query (MaxQueryBytes and the limits beside it) is refused with a KindInvalid error
// that names the limit, and costs next to nothing. The search stops when ctx ends, and at
// Options.Timeout.
func (s *Service) Search(ctx context.Context, storeID string, req Request) (*Result, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	p := parseQuery(req.Query)
	if err := p.check(); err != nil {
		return nil, err
	}
	x, err := s.index(ctx, storeID)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := x.search(ctx, req, p)
	if s.opts.Observe != nil {
		s.opts.Observe(time.Since(start), err)
	}
	return res, err
}

// Rebuild throws a store's index away and builds it again from the store's head. progress,
// if not nil, is told how many memories are indexed of how many. Searches meanwhile wait
// for it, up to Options.RebuildWait, and then answer an *UnavailableError.
func (s *Service) Rebuild(ctx context.Context, storeID string, progress gitstore.Progress) error {
	r := rebuildRequest{progress: progress, done: make(chan error, 1)}
	x, started, err := s.start(ctx, storeID, &r)
	if err != nil {
		return err
	}
	if started {
		return x.awaitRebuild(r) // the store's first use: its indexer begins with r
	}
	return x.rebuild(ctx, r)
}

// Reindex rebuilds the search index of one store of a data directory from nothing, for
// "gitmem reindex": it opens a Service, rebuilds, and closes it.
func Reindex(ctx context.Context, data *gitstore.DataDir, storeID string, progress gitstore.Progress) error {
	s := New(data, Options{})
	err := s.Rebuild(ctx, storeID, progress)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

// UnavailableError is the answer of a search while the store's index is being built from
// nothing (it was missing, damaged, or of an older format, or history was rewritten).
// Writes and reads of the store are not affected; try the search again shortly.
type UnavailableError struct {
	StoreID     string
	Done, Total int // memories indexed so far, of Total (0 if not known yet)
}

func (e *UnavailableError) Error() string {
	if e.Total > 0 {
		return fmt.Sprintf("the search index of memory store %s is being rebuilt (%d of %d memories); search again in a moment", e.StoreID, e.Done, e.Total)
	}
	return fmt.Sprintf("the search index of memory store %s is being rebuilt; search again in a moment", e.StoreID)
}

// Unwrap makes the error one of gitstore's KindUnavailable, which each interface maps once
// (HTTP: 503 overloaded_error, retried by the SDKs).
func (e *UnavailableError) Unwrap() error {
	return &gitstore.Error{Kind: gitstore.KindUnavailable, Message: e.Error()}
}

// Ready answers how many indexes are open, or ErrClosed once the service is closed.
func (s *Service) Ready() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	return len(s.indexes), nil
}

// Behind answers how many open indexes do not reflect their store's head yet (an indexer
// waits a little after writes, so a few are behind for a moment under load).
func (s *Service) Behind() int {
	s.mu.Lock()
	idxs := make([]*storeIndex, 0, len(s.indexes))
	for _, x := range s.indexes {
		idxs = append(idxs, x)
	}
	s.mu.Unlock()
	n := 0
	for _, x := range idxs {
		if c, _ := x.published.Load().(string); c != x.st.Head() {
			n++
		}
	}
	return n
}
