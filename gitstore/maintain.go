package gitstore

import "time"

// The writer writes one pack per group, and packs must be merged now and then, or reads
// would look through hundreds of indexes. A merge of large packs takes hundreds of
// milliseconds: made by the writer, it stalled every write queued behind it (at 64
// concurrent writers, the p99 of a write was 7 times its p50, and each stall began with a
// merge). So merges run in goroutines of their own, beside the writer, which only asks
// for them; odb keeps a merge and the writer's pack writes and pack listings apart where
// they touch the same state. Tasks that rewrite the pack directory whole (gc, the prune of
// a redaction) hold maintMu, so that no merge runs beside them.

// maintainers is how many goroutines merge packs when the writer asks; merges run at once
// on packs apart (odb.Repo.MergePacks), and the writer past its backlog makes a third. A
// merge that takes in a store's largest packs lasts about a second at 100,000 memories,
// and the writer, which adds a pack a group, reached its backlog meanwhile and waited for
// it. The second maintainer merges the packs written since.
const maintainers = 2

// idlePacks is how many packs a repository keeps once the writer has been idle.
const idlePacks = 8

// backlogFactor bounds how far packs may pile up while the maintainers are busy: past
// MaxPacks times this, the writer merges the packs that they have not taken before its
// next group, so that reads look through no more indexes than that, besides the packs that
// running merges are replacing.
const backlogFactor = 4

// afterGroup adds the versions written lately to sesver and keyver (indexActorsDue), asks
// for a merge when packs have piled up, and merges itself when the maintainers have fallen
// far behind.
func (s *Store) afterGroup() {
	s.checkpoint(false)
	s.indexActorsDue()
	if err := s.db.maybeSync(); err != nil {
		s.log.Error("sync the catalog", "store", s.id, "err", err)
	}
	n := s.repo.Packs()
	switch {
	case n > backlogFactor*s.opts.MaxPacks:
		s.maintain(s.opts.MaxPacks)
	case n > s.opts.MaxPacks:
		s.askMaintain(s.opts.MaxPacks)
	}
}

// checkpoint drops the journal's records that the packs and main now hold durably
// (odb.Repo.Checkpoint). A failure costs nothing but a longer journal: it is logged.
func (s *Store) checkpoint(force bool) {
	if err := s.repo.Checkpoint(force); err != nil {
		s.log.Error("checkpoint the journal", "store", s.id, "err", err)
	}
}

// askMaintain asks the maintainer to merge down to maxPacks, unless it has a request
// waiting already.
func (s *Store) askMaintain(maxPacks int) {
	select {
	case s.maint <- maxPacks:
	default:
	}
}

// maintainer merges packs when the writer asks, until the store closes.
func (s *Store) maintainer() {
	defer s.maintainers.Done()
	for {
		select {
		case n := <-s.maint:
			s.maintain(n)
		case <-s.quit:
			return
		}
	}
}

// runTaskNow runs a writer task (gc, a redaction, a merge with a remote) with no pack
// maintenance beside it.
func (s *Store) runTaskNow(task func() error) error {
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	return task()
}

// maintain packs loose objects and merges packs down to maxPacks, beside other merges but
// not beside the writer's tasks (maintMu); a failure is logged and tried again later, never
// fatal.
func (s *Store) maintain(maxPacks int) {
	s.maintMu.RLock()
	defer s.maintMu.RUnlock()
	s.packAndMerge(maxPacks)
}

// packAndMerge is maintain's work; the caller holds maintMu.
func (s *Store) packAndMerge(maxPacks int) {
	start := time.Now()
	// What was done is reported, also before an error.
	merged := 0
	loose, err := s.repo.PackLoose()
	if err != nil {
		s.log.Error("pack loose objects", "store", s.id, "err", err)
	} else if merged, err = s.repo.MergePacks(maxPacks); err != nil {
		s.log.Error("merge packs", "store", s.id, "err", err)
	}
	if loose == 0 && merged == 0 {
		// Not reported: most of the writer's asks find nothing to take while another merge
		// runs (takePacks), and each would count in the merges metric as a merge.
		return
	}
	s.log.Debug("packed objects", "store", s.id, "loose", loose, "merged", merged, "packs", s.repo.Packs(), "took", time.Since(start))
	s.opts.Observer.PacksMerged(s.id, s.repo.Packs(), time.Since(start))
}
