package gitstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Store is one memory store: a bare repository and its catalog. Mutations go through the
// store's single writer goroutine; reads use a catalog snapshot and need no lock.
type Store struct {
	// fork: a proposal's copy of a store (fork.go), whose changes are reviewed when taken in.
	fork bool
	id   string
	opts Options
	log  *slog.Logger
	repo *repo
	db   *catalogDB

	reqs chan *request
	quit chan struct{}
	done chan struct{}
	stop sync.Once

	// Pack maintenance runs beside the writer (maintain.go): maint asks for a merge down
	// to that many packs, maintainers counts the maintainers running, and maintMu keeps
	// merges (read) and the writer's tasks (gc, redaction) apart.
	maint       chan int
	maintainers sync.WaitGroup
	maintMu     sync.RWMutex

	lastTime time.Time // writer goroutine only
	// indexedAt is when the writer last added versions to sesver and keyver (writer only).
	indexedAt time.Time
	// head is the last head commit that the writer read or made, and its tree, so that a
	// group need not read the commit back from the packs (18-30 µs a write). Writer only.
	head commitTree
	// unsettled is set when a redaction moved main but the catalog did not record its
	// rewrites: the writer settles them before anything else (redact.go). Writer only.
	unsettled bool
	trees     map[plumbing.Hash][]object.TreeEntry // writer goroutine only: decoded trees
	// treeEntries is how many entries trees holds, all told (writer goroutine only).
	treeEntries int
	// sums are the wide trees' (wideCache), sumsBytes their contents' bytes (writer only).
	sums      map[plumbing.Hash]*treeSums
	sumsBytes int

	// publishing is the head of the group the writer is publishing (a plumbing.Hash): main
	// may be there before the catalog is.
	publishing atomic.Value

	reads readLog // read times not yet in the catalog (expire.go)

	moved headSignal // closed when the commit that reads reflect changes (changes.go)
}

// commitTree is a commit and its tree.
type commitTree struct{ commit, tree plumbing.Hash }

func openStore(id, repoPath, catalogPath string, opts Options) (*Store, error) {
	return openStoreProgress(id, repoPath, catalogPath, opts, nil)
}

// openStoreProgress opens a store and tells progress how far the catalog's catch-up with
// main is (all of history, for a new catalog).
func openStoreProgress(id, repoPath, catalogPath string, opts Options, progress Progress) (_ *Store, err error) {
	r, err := openRepoOf(repoPath, opts.fork)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if opts.checkpointBytes > 0 {
		r.SetCheckpointBytes(opts.checkpointBytes)
	}
	log := opts.Logger.With("store", id)
	db, err := openCatalog(catalogPath, log)
	if err != nil && damagedCatalog(err) {
		// The catalog is derived from history: a damaged one is set aside and rebuilt.
		log.Warn("catalog unreadable; rebuilding it from history", "err", err)
		if rerr := os.Rename(catalogPath, catalogPath+".damaged"); rerr != nil {
			return nil, fmt.Errorf("set aside damaged catalog: %w (after: %v)", rerr, err)
		}
		db, err = openCatalog(catalogPath, log)
	}
	if err != nil {
		return nil, NoSpace(err, opts.dataDir)
	}
	s := &Store{id: id, opts: opts, log: opts.Logger, repo: r, db: db,
		reqs: make(chan *request, maxGroup), quit: make(chan struct{}), done: make(chan struct{}),
		maint: make(chan int, 1),
		trees: map[plumbing.Hash][]object.TreeEntry{}}
	if err := s.catchUp(progress); err != nil {
		db.Close()
		return nil, NoSpace(fmt.Errorf("open store %s: %w", id, err), opts.dataDir)
	}
	// Versions that sesver and keyver lack (the last session's newest, all of a catalog of
	// format 4) would be walked in ver by every listing by session or key.
	if err := s.indexActors(nil); err != nil {
		db.Close()
		return nil, NoSpace(fmt.Errorf("open store %s: %w", id, err), opts.dataDir)
	}
	go s.run()
	for range maintainers {
		s.maintainers.Add(1)
		go s.maintainer()
	}
	if err := s.runTask(context.Background(), func() error { return s.finishPendingPrune(context.Background()) }); err != nil {
		// The store works; the objects stay listed, for the next redaction or opening.
		s.log.Error("finish an interrupted redaction", "store", id, "err", err)
	}
	return s, nil
}

// close stops the writer after it has answered every queued request.
func (s *Store) close() error {
	s.stop.Do(func() { close(s.quit) })
	<-s.done
	s.maintainers.Wait()
	return errors.Join(s.repo.Close(), s.flushReads(), s.db.Close())
}

// ID returns the store's id.
func (s *Store) ID() string { return s.id }

// RepoPath returns the path of the store's bare repository.
func (s *Store) RepoPath() string { return s.repo.Path() }

// Head returns the commit that reads currently reflect.
func (s *Store) Head() string {
	var h plumbing.Hash
	s.readCatalog(func(ct catTx) error { h = ct.applied(); return nil })
	return h.String()
}

// Progress is told how far a long operation is: done of total steps.
type Progress func(done, total int)

// catchUp applies to the catalog the commits of main that it has not applied yet: after a
// crash, a push, or a commit made with the git CLI. If main no longer contains the applied
// commit (history was rewritten), it rebuilds the catalog from the first commit.
func (s *Store) catchUp(progress Progress) error {
	head, err := s.repo.ReadRef()
	if err != nil {
		return err
	}
	var applied plumbing.Hash
	if err := s.readCatalog(func(ct catTx) error { applied = ct.applied(); return nil }); err != nil {
		return err
	}
	if head == applied {
		return nil
	}
	// main moved without our writer: a git process may have added packs that go-git's
	// storage does not know of yet (go-git#2242: it does not rescan the pack directory).
	s.repo.Reload()
	if !applied.IsZero() && s.parted(applied, head) {
		if base, ok := s.rewindTo(applied, head); ok {
			applied = base
		}
	}
	chain, found, err := s.repo.newCommits(head, applied)
	if err != nil {
		return err
	}
	reset := !found && !applied.IsZero()
	if reset {
		s.log.Warn("history no longer contains the catalog's commit; rebuilding the catalog", "store", s.id, "applied", applied)
	}
	const perTx = 1000
	trees := newTreeReader(s.repo)
	for done := 0; done < len(chain) || reset; {
		err := s.updateCatalog(func(ct catTx) error {
			if reset {
				reset = false
				if err := ct.reset(); err != nil {
					return err
				}
			}
			for n := 0; n < perTx && done < len(chain); n++ {
				var prev *object.Commit
				if done > 0 {
					prev = chain[done-1]
				}
				if err := ct.applyAfter(trees, chain[done], prev); err != nil {
					return err
				}
				done++
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("catch up catalog of %s: %w", s.id, err)
		}
		if progress != nil {
			progress(done, len(chain))
		}
	}
	s.moved.notify()
	// What it applied, in sesver and keyver at once: a push or a rebuild can bring many
	// versions, which listings would walk in ver until the writer's steps had them.
	return s.indexActors(nil)
}

// rebuild empties the catalog and reads the whole history again.
func (s *Store) rebuild(progress Progress) error {
	if err := s.updateCatalog(catTx.reset); err != nil {
		return fmt.Errorf("reset catalog of %s: %w", s.id, err)
	}
	return s.catchUp(progress)
}

// Refresh makes reads reflect commits that reached main from outside (a push, the git
// CLI). The writer does it before each write anyway.
func (s *Store) Refresh(ctx context.Context) error {
	_, err := s.submit(ctx, func(b *batch) (any, error) { return nil, nil })
	return err
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
