package gitstore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Expiry deletes the memories of a store that nobody has read or written for the store's
// Policy.ExpireAfter. Writes are in the catalog (a memory's updated time); reads are tracked
// here, outside the repository, so that reading makes no commit.

// readFlushEvery bounds how many distinct memories are read before their read times are
// written to the catalog, and readFlushAfter how long a read time waits at most; expiry and
// close write them too. A crash loses at most those unwritten read times: such a memory
// may then expire early, as a versioned delete that Restore undoes.
const (
	readFlushEvery = 1024
	readFlushAfter = 5 * time.Minute
)

// readLog holds read times not yet written to the catalog.
type readLog struct {
	mu      sync.Mutex       // guards the following
	pending map[string]int64 // memory id -> unix ms of its last read
	since   time.Time        // when the oldest pending read happened
}

// touch records that memory id was read now. It writes to the catalog only once many
// reads are pending or the oldest is old, never once per read.
func (s *Store) touch(id string) {
	now := s.opts.Clock()
	r := &s.reads
	r.mu.Lock()
	if r.pending == nil {
		r.pending = map[string]int64{}
	}
	if len(r.pending) == 0 {
		r.since = now
	}
	r.pending[id] = now.UnixMilli()
	due := len(r.pending) >= readFlushEvery || now.Sub(r.since) >= readFlushAfter
	r.mu.Unlock()
	if due {
		if err := s.flushReads(); err != nil {
			s.log.Error("record read times", "store", s.id, "err", err)
		}
	}
}

// flushReads writes the pending read times to the catalog.
func (s *Store) flushReads() error {
	r := &s.reads
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := s.updateCatalog(func(ct catTx) error { return ct.putReadTimes(pending) })
	if err != nil {
		// Put them back, so that the next flush tries again.
		r.mu.Lock()
		for id, ms := range pending {
			if r.pending == nil {
				r.pending = map[string]int64{}
			}
			if r.pending[id] < ms {
				r.pending[id] = ms
			}
		}
		r.mu.Unlock()
		return fmt.Errorf("write read times: %w", err)
	}
	return nil
}

// lastRead is when memory id was last read, as far as the catalog and the pending reads know.
func (s *Store) lastRead(ct catTx, id string) int64 {
	ms := ct.readTime(id)
	s.reads.mu.Lock()
	if p := s.reads.pending[id]; p > ms {
		ms = p
	}
	s.reads.mu.Unlock()
	return ms
}

// Expired is a memory that expiry deleted, or would delete.
type Expired struct {
	MemoryID  string
	Path      string
	SizeBytes int
	LastUsed  time.Time // its last read or write
	VersionID string    // the delete's version; "" in a dry run
}

// ExpireReport is what one run of Expire did.
type ExpireReport struct {
	ExpireAfter Duration  // the store's policy; 0 if it has none (and nothing expires)
	Cutoff      time.Time // memories last used before it expire
	Expired     []Expired // in path order
	DryRun      bool
}

// Expire deletes the memories that nobody has read or written for the store's
// Policy.ExpireAfter, each as an ordinary versioned delete made by SystemActor, so that
// Restore brings it back. With dryRun it only reports what would go. A store without an
// expiry policy, or an archived one, expires nothing. The check of each memory and its
// delete happen in the writer, so a memory written meanwhile is kept.
func (s *Store) Expire(ctx context.Context, dryRun bool) (ExpireReport, error) {
	if err := s.flushReads(); err != nil {
		return ExpireReport{}, err
	}
	rep := ExpireReport{DryRun: dryRun}
	candidates := func(ct catTx) ([]Expired, error) {
		info, err := ct.storeInfo()
		if err != nil || info.Policy.ExpireAfter == 0 || info.ArchivedAt != nil {
			return nil, err
		}
		rep.ExpireAfter = info.Policy.ExpireAfter
		rep.Cutoff = s.opts.Clock().UTC().Add(-time.Duration(info.Policy.ExpireAfter))
		var out []Expired
		for _, id := range ct.pathsBelow("") {
			var rec memRec
			var ok bool
			if rec, ok, err = ct.memory(id); err != nil {
				break
			}
			if !ok {
				continue
			}
			last := max(rec.Updated, s.lastRead(ct, id))
			if last < rep.Cutoff.UnixMilli() {
				out = append(out, Expired{MemoryID: id, Path: rec.Path, SizeBytes: rec.Size, LastUsed: msTime(last)})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
		return out, err
	}
	if dryRun {
		err := s.view(ctx, func(ct catTx) error {
			var err error
			rep.Expired, err = candidates(ct)
			return err
		})
		return rep, err
	}
	if err := s.fresh(ctx); err != nil {
		return rep, err
	}
	done, err := submitAs(ctx, s, func(b *batch) ([]Expired, error) {
		list, err := candidates(b.ct)
		if err != nil {
			return nil, b.fail(err)
		}
		for i := range list {
			res, err := b.put(SystemActor, list[i].MemoryID, OpDeleted, list[i].Path, "", nil)
			if err != nil {
				return nil, err
			}
			list[i].VersionID = res.Version.ID
		}
		return list, nil
	})
	rep.Expired = done
	return rep, err
}

// ExpireAll runs Expire on every store that has an expiry policy and is not archived, and
// returns the reports of the stores where memories expired (or would).
func (d *DataDir) ExpireAll(ctx context.Context, dryRun bool) (map[string]ExpireReport, error) {
	ids, err := d.Layout().StoreIDs()
	if err != nil {
		return nil, err
	}
	out := map[string]ExpireReport{}
	for _, id := range ids {
		s, err := d.Store(ctx, id)
		if err != nil {
			return out, err
		}
		rep, err := s.Expire(ctx, dryRun)
		if err != nil {
			return out, fmt.Errorf("expire memories of %s: %w", id, err)
		}
		if len(rep.Expired) > 0 {
			out[id] = rep
		}
	}
	return out, nil
}
