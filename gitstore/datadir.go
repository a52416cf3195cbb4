package gitstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
	"github.com/gitmem/gitmem/internal/durable"
)

// DataDir is a data directory: one bare repository per store under stores/, and one catalog
// per store under catalog/. One process at a time has it open; that process owns the
// single writer of each store.
type DataDir struct {
	dir  string
	opts Options
	lock *os.File // holds the exclusive lock on gitmem.lock

	mu      sync.Mutex // guards stores, opening and closed
	stores  map[string]*Store
	opening map[string]*opening // stores being opened, outside mu
	closed  bool

	names sync.Mutex          // held from the check that a name is free to the commit that takes it
	held  map[string]heldName // names that pushes hold until main shows them (ReserveName); under names

	storesMoved headSignal // notified when a store is created, imported or deleted
}

// Open opens the data directory dir, creating it if needed, and takes its exclusive lock. A
// second process that opens the same directory fails at once with an error that names the
// process that has it.
func Open(ctx context.Context, dir string, opts Options) (_ *DataDir, err error) {
	defer func() { err = NoSpace(err, dir) }()
	opts = opts.withDefaults()
	opts.dataDir = dir
	opts.redactWrap = new(atomic.Pointer[RedactWrapper])
	l := Layout{Root: dir}
	opts.forkMarks = &forkMarks{layout: l}
	for _, sub := range []string{l.StoresDir(), l.CatalogDir()} {
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, fmt.Errorf("create data directory %s: %w", dir, err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	d := &DataDir{dir: dir, opts: opts, lock: lock, stores: map[string]*Store{}, opening: map[string]*opening{}}
	if err := d.cleanup(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Dir returns the data directory's path.
func (d *DataDir) Dir() string { return d.dir }

// Logger returns the logger of the data directory's stores (Options.Logger).
func (d *DataDir) Logger() *slog.Logger { return d.opts.Logger }

// Layout says where each thing is in the data directory.
func (d *DataDir) Layout() Layout { return Layout{Root: d.dir} }

// cleanup removes what an interrupted create or delete left: temporary and trashed
// repositories, and stale ref locks that only a crashed writer of ours can have left, since
// we hold the directory's lock.
func (d *DataDir) cleanup() error {
	entries, err := os.ReadDir(d.Layout().StoresDir())
	if err != nil {
		return fmt.Errorf("read %s: %w", d.dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(d.Layout().StoresDir(), e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("remove leftover %s: %w", p, err)
			}
			continue
		}
		d.cleanRepo(p)
	}
	return nil
}

// cleanRepo removes what a crash left in a repository that only this process writes: a
// main.lock, and packs and indexes half written, never published.
func (d *DataDir) cleanRepo(repo string) {
	lock := filepath.Join(repo, mainRef+".lock")
	if _, err := os.Stat(lock); err == nil {
		d.opts.Logger.Warn("removing a stale ref lock left by a crash", "path", lock)
		os.Remove(lock)
	}
	for _, pattern := range []string{"tmp_*", durable.TempPrefix + "*"} {
		tmps, _ := filepath.Glob(filepath.Join(repo, "objects", "pack", pattern))
		for _, tmp := range tmps {
			os.Remove(tmp)
		}
	}
}

func (d *DataDir) repoPath(id string) string {
	return d.Layout().StoreRepo(id)
}

func (d *DataDir) catalogPath(id string) string {
	return d.Layout().CatalogFile(id)
}

// Close stops every store's writer and releases the directory, once the stores being opened
// are open (and then closed by their openers).
func (d *DataDir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	// No opening starts once closed is set; those in flight end by removing themselves.
	pending := make([]*opening, 0, len(d.opening))
	for _, o := range d.opening {
		pending = append(pending, o)
	}
	d.mu.Unlock()
	for _, o := range pending {
		<-o.done
	}
	d.mu.Lock()
	var errs []error
	for _, s := range d.stores {
		errs = append(errs, s.close())
	}
	d.stores = nil
	errs = append(errs, unlockDir(d.lock))
	return errors.Join(errs...)
}

// CreateStore creates a store: a bare repository whose first commit holds
// .gitmem/store.json. The repository is built under a temporary name and renamed into place,
// so that a crash never leaves half a store.
func (d *DataDir) CreateStore(ctx context.Context, in CreateStoreInput) (_ *Store, err error) {
	if err := refuseTrial(ctx, "a store's creation"); err != nil {
		return nil, err
	}
	defer func() { err = NoSpace(err, d.dir) }()
	if err := validateStoreName(in.Name); err != nil {
		return nil, err
	}
	if err := validateDescription(in.Description); err != nil {
		return nil, err
	}
	if err := validateMetadata(in.Metadata); err != nil {
		return nil, err
	}
	if err := ValidatePolicy(in.Policy); err != nil {
		return nil, err
	}
	if err := validateActor(in.Actor); err != nil {
		return nil, err
	}
	d.names.Lock()
	defer d.names.Unlock()
	if err := d.checkNameFree(ctx, in.Name, ""); err != nil {
		return nil, err
	}
	now := d.opts.Clock().UTC()
	id := NewID(StorePrefix, now)
	tmpRepo := d.Layout().StoresTemp("." + id + ".git")
	tmpCatalog := d.catalogPath(id) + ".tmp"
	defer os.RemoveAll(tmpRepo)
	defer os.Remove(tmpCatalog)
	if err := odb.Init(tmpRepo); err != nil {
		return nil, err
	}
	s, err := openStore(id, tmpRepo, tmpCatalog, d.opts)
	if err != nil {
		return nil, err
	}
	info := StoreInfo{ID: id, Name: in.Name, Description: in.Description, Metadata: in.Metadata, Policy: in.Policy, CreatedAt: now, UpdatedAt: now}
	_, err = s.submit(ctx, func(b *batch) (any, error) {
		return nil, b.commitStoreInfo(info, fmt.Sprintf("create store %q", in.Name), "created", in.Actor)
	})
	if cerr := s.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	if err := os.Rename(tmpCatalog, d.catalogPath(id)); err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	if err := os.Rename(tmpRepo, d.repoPath(id)); err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	if err := durable.SyncDir(d.Layout().StoresDir()); err != nil {
		return nil, err
	}
	d.storesMoved.notify()
	return d.Store(ctx, id)
}

// StoresChanged returns a channel that is closed the next time a store is created, imported
// or deleted: what a follower of every store (an event stream, the webhooks) waits on to
// take up new stores. Take a new channel after each signal, then list the stores.
func (d *DataDir) StoresChanged() <-chan struct{} { return d.storesMoved.wait() }

// opening is a store being opened: whoever asks for it meanwhile waits for done.
type opening struct {
	done chan struct{}
	s    *Store
	err  error
}

// Store returns the open store with the given id, opening it on first use. The opening runs
// outside the data directory's lock, since it can take long (a catalog rebuilt after a
// change of its format: a minute for 100,000 memories): only the callers that want this
// store wait for it, and a caller that gives up (ctx) stops waiting, not the opening.
func (d *DataDir) Store(ctx context.Context, id string) (*Store, error) {
	if !validID(StorePrefix, id) {
		return nil, noStore(id)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrStoreClosed
	}
	if s, ok := d.stores[id]; ok {
		d.mu.Unlock()
		return s, nil
	}
	o, ok := d.opening[id]
	if !ok {
		if _, err := os.Stat(d.repoPath(id)); err != nil {
			d.mu.Unlock()
			if os.IsNotExist(err) {
				return nil, noStore(id)
			}
			return nil, fmt.Errorf("open store %s: %w", id, err)
		}
		o = &opening{done: make(chan struct{})}
		d.opening[id] = o
		go d.open(id, o)
	}
	d.mu.Unlock()
	select {
	case <-o.done:
		return o.s, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// open opens store id for o, and adds it to the open stores unless the directory was closed
// meanwhile.
func (d *DataDir) open(id string, o *opening) {
	s, err := openStore(id, d.repoPath(id), d.catalogPath(id), d.opts)
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.opening, id)
	if err == nil && d.closed {
		err = errors.Join(ErrStoreClosed, s.close())
		s = nil
	}
	if err == nil {
		d.stores[id] = s
	}
	o.s, o.err = s, err
	close(o.done)
}

// ListStores lists stores newest first.
func (d *DataDir) ListStores(ctx context.Context, opts StoreListOptions) (StorePage, error) {
	limit, err := checkLimit(opts.Limit, 20, 1000)
	if err != nil {
		return StorePage{}, err
	}
	var after string
	if opts.Cursor != "" {
		raw, err := decodeCursor('s', opts.Cursor)
		if err != nil {
			return StorePage{}, err
		}
		after = string(raw)
	}
	ids, err := d.Layout().StoreIDs()
	if err != nil {
		return StorePage{}, err
	}
	var page StorePage
	for _, id := range ids {
		if after != "" && id >= after {
			continue
		}
		s, err := d.Store(ctx, id)
		if IsKind(err, KindNotFound) {
			continue // deleted since it was listed; its error would name it
		}
		if err != nil {
			return StorePage{}, err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return StorePage{}, err
		}
		if info.ArchivedAt != nil && !opts.IncludeArchived ||
			!opts.CreatedAtGTE.IsZero() && info.CreatedAt.Before(opts.CreatedAtGTE) ||
			!opts.CreatedAtLTE.IsZero() && info.CreatedAt.After(opts.CreatedAtLTE) {
			continue
		}
		if len(page.Stores) == limit {
			page.NextCursor = encodeCursor('s', []byte(page.Stores[limit-1].ID))
			break
		}
		page.Stores = append(page.Stores, info)
	}
	return page, nil
}

// DeleteStore deletes a store with all its memories and versions, for good.
func (d *DataDir) DeleteStore(ctx context.Context, id string) error {
	if err := refuseTrial(ctx, "a store's deletion"); err != nil {
		return err
	}
	if _, err := d.Store(ctx, id); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stores[id]
	delete(d.stores, id)
	if s != nil {
		if err := s.close(); err != nil {
			return fmt.Errorf("delete store %s: %w", id, err)
		}
	}
	// Rename first: one atomic step after which the store is gone, even if the removal
	// below is interrupted (Open removes the leftover).
	trash := d.Layout().StoresTemp(".trash-" + id + "-" + base64.RawURLEncoding.EncodeToString([]byte(NewID("", d.opts.Clock()))))
	if err := os.Rename(d.repoPath(id), trash); err != nil {
		return fmt.Errorf("delete store %s: %w", id, err)
	}
	if err := durable.SyncDir(d.Layout().StoresDir()); err != nil {
		return err
	}
	d.storesMoved.notify()
	for _, p := range []string{d.catalogPath(id), sidePath(d.catalogPath(id))} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("delete catalog of %s: %w", id, err)
		}
	}
	// Its proposals go with it (whoever keeps them open closes them: proposals.Forget).
	if err := os.Remove(d.Layout().ProposalsFile(id)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("delete the proposals of %s: %w", id, err)
	}
	d.opts.forkMarks.mu.Lock() // not while a redaction lists its version for them (forkmarks.go)
	err := os.RemoveAll(d.Layout().ProposalForks(id))
	d.opts.forkMarks.mu.Unlock()
	if err != nil {
		return fmt.Errorf("delete the proposals of %s: %w", id, err)
	}
	return os.RemoveAll(trash)
}

// Reindex rebuilds a store's catalog from its history. progress, if not nil, is told how
// many commits are done.
func (d *DataDir) Reindex(ctx context.Context, id string, progress Progress) error {
	s, err := d.Store(ctx, id)
	if err != nil {
		return err
	}
	return s.runTask(ctx, func() error { return s.rebuild(progress) })
}
