package gitstore

import (
	"context"
	"time"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// ObjectStats is the size of a repository's object database.
type ObjectStats = odb.ObjectStats

// GCResult is what GC did.
type GCResult struct {
	Before, After ObjectStats
	// KeptOldPacks is set when main moved while git repacked (a push): the old packs were
	// kept, as they may hold the pushed objects; running GC again removes them.
	KeptOldPacks bool
	Took         time.Duration
}

// needGit returns nil if git is installed, and otherwise an error of KindUnsupported that
// says what needs it and is ErrNoGit.
func needGit(what string) error {
	if err := gitexec.Need(what); err != nil {
		return &Error{Kind: KindUnsupported, Message: err.Error(), Err: err}
	}
	return nil
}

// pruneGrace is how old an unreachable loose object must be for GC to delete it: objects
// that a push is adding are unreachable until its ref update, a moment later.
const pruneGrace = "10.minutes.ago"

// GC packs the repository's objects into one pack with fresh deltas (git repack -a -f)
// and deletes the old packs, the loose objects now packed and unreachable loose objects
// older than a few minutes. It runs in the store's writer, so no write happens meanwhile;
// readers keep reading throughout: the old packs are removed only once the set of packs that
// reads look in holds the new one instead. Without the git
// program its error is ErrNoGit (of KindUnsupported).
func (s *Store) GC(ctx context.Context) (GCResult, error) {
	if err := needGit("gc"); err != nil {
		return GCResult{}, err
	}
	var res GCResult
	err := s.runTask(ctx, func() error {
		start := time.Now()
		r := s.repo
		var err error
		if res.Before, err = r.Stats(); err != nil {
			return err
		}
		// -f: compute deltas afresh (git's default window and depth).
		if res.KeptOldPacks, err = r.RepackAll(ctx, "-f"); err != nil {
			return err
		}
		if err := r.Git(ctx, "prune-packed", "-q"); err != nil {
			return err
		}
		if err := r.Git(ctx, "prune", "--expire="+pruneGrace); err != nil {
			return err
		}
		if err := r.CountPacks(); err != nil {
			return err
		}
		if res.After, err = r.Stats(); err != nil {
			return err
		}
		res.Took = time.Since(start)
		return nil
	})
	return res, err
}
