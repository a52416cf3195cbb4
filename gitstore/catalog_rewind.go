package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/internal/gitexec"
)

// A catalog whose commit main's history no longer holds is set back, when it can be, to the
// commit where the two histories part, and catches up from there: it then reads the commits
// since that point, not the whole history again. That is the case of every proposal's fork
// of a branch pushed with git (its catalog starts as a copy of the store's, at main, which
// has moved past the branch's base: the proposal's "opened" step, at least), and of a
// forced push that set main back. A rebuild took 20 s at 100,000 memories, and the opening
// of such a fork holds every proposal of the server until it is done.
//
// Setting back undoes the catalog records of the commits since the parting point, newest
// first: a version's record, and its memory's state, which the memory's versions before it
// give again (memRec.after, as record applies them). That holds when the records of those
// commits are the newest of the catalog, which the order of application (parents first)
// makes true when the commits since the parting point are one line, without merges; and
// when no merge of gitmem's set a state that no version gives (Gitmem-Merge-Gone, -Free) of
// a memory or path concerned. Otherwise the catalog is rebuilt, as before.

// errNoRewind says that the catalog cannot be set back: it is rebuilt instead.
var errNoRewind = errors.New("the catalog cannot be set back")

// parted tells whether main's history (head) no longer holds the catalog's commit
// (applied), by git's merge-base: finding it out by walking history reads all of it. It
// answers false without git, or when git cannot tell, and the catch-up finds out itself.
func (s *Store) parted(applied, head plumbing.Hash) bool {
	if needGit("setting a catalog back") != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := gitexec.In(ctx, s.repo.Path(), "merge-base", "--is-ancestor", applied.String(), head.String())
	return gitexec.ExitCode(err) == 1
}

// rewindTo finds where main's history (head) parts from the catalog's (applied) and sets
// the catalog back to that commit. It returns that commit, or false if the catalog must be
// rebuilt. It needs the git program (merge-base, log).
func (s *Store) rewindTo(applied, head plumbing.Hash) (plumbing.Hash, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := gitexec.In(ctx, s.repo.Path(), "merge-base", applied.String(), head.String())
	base, ok := parseHash(strings.TrimSpace(out))
	if err != nil || !ok {
		return plumbing.ZeroHash, false // no common history: rebuilt
	}
	undone := map[string]bool{}
	reused := map[string]bool{} // commits made with git whose ids derive from another hash
	for h := applied; h != base; {
		c, err := s.repo.commit(h)
		if err != nil || len(c.ParentHashes) != 1 {
			s.log.Info("the catalog cannot be set back: the commits since the parting point are not one line",
				"store", s.id, "commit", base, "at", h, "err", err)
			return plumbing.ZeroHash, false
		}
		undone[h.String()] = true
		if parseTrailers(c.Message).get(trailerDerivedFrom) != "" {
			reused[h.String()] = true
		}
		h = c.ParentHashes[0]
	}
	touched, err := s.mergesSetting(ctx, base)
	if err != nil {
		s.log.Warn("read the merges of history", "store", s.id, "err", err)
		return plumbing.ZeroHash, false
	}
	err = s.updateCatalog(func(ct catTx) error {
		if ct.applied() != applied {
			return fmt.Errorf("%w: the catalog moved to %s meanwhile", errNoRewind, ct.applied())
		}
		return ct.rewind(s.repo, base, undone, reused, touched)
	})
	if err != nil {
		if !errors.Is(err, errNoRewind) {
			s.log.Warn("set the catalog back", "store", s.id, "err", err)
		} else {
			s.log.Info("the catalog cannot be set back", "store", s.id, "commit", base, "reason", err)
		}
		return plumbing.ZeroHash, false
	}
	s.log.Info("catalog set back to where main's history parts from it", "store", s.id, "commit", base, "undone", len(undone))
	return base, true
}

// mergesSetting lists the memories and paths whose state a merge of gitmem's in the history
// of base set without a version: those that a setting back cannot give again.
func (s *Store) mergesSetting(ctx context.Context, base plumbing.Hash) (map[string]bool, error) {
	out, err := gitexec.In(ctx, s.repo.Path(), "log", "--merges", "--format=%B%x00", base.String())
	if err != nil {
		return nil, err
	}
	touched := map[string]bool{}
	for _, msg := range strings.Split(out, "\x00") {
		for _, kv := range parseTrailers(msg) {
			switch {
			case strings.EqualFold(kv.Key, trailerMergeFree):
				touched[kv.Value] = true
			case strings.EqualFold(kv.Key, trailerMergeGone):
				if g, ok := parseMergeGone(kv.Value); ok {
					touched[g.mem], touched[g.path] = true, true
				}
			}
		}
	}
	return touched, nil
}

// rewind sets the catalog back to base: it undoes the records of the commits undone (the
// commits after base up to the catalog's, by hash), which must be the newest of the catalog.
// reused are the undone commits made with git whose version ids derive from the hash of
// another commit (Gitmem-Derived-From), which history may hold too. touched are memory ids
// and paths that it must leave alone (mergesSetting). It returns errNoRewind, having changed
// nothing that the transaction keeps, when that cannot be done.
func (c catTx) rewind(or objectReader, base plumbing.Hash, undone, reused, touched map[string]bool) error {
	if c.rewritesStaged() {
		return errNoRewind // a redaction in the middle: its staged records concern the commits
	}
	// A live memory without a path entry: a commit named a memory other than the one at its
	// path (one pushed with another commit's trailers), whose record took the path from the
	// memory there. Its undoing cannot tell which memory to give the path back to.
	if live, paths := c.usage().Memories, c.tx.Bucket(bPath).Stats().KeyN; live != paths {
		return fmt.Errorf("%w: %d memories live, %d paths", errNoRewind, live, paths)
	}
	// The commit a record names as main has it: a record that a redaction left naming the
	// commit it replaced (before firstRecordOf) names the new one.
	commitOf := func(h string) string { return c.rewrittenTo(plumbing.NewHash(h)).String() }
	// The records to undo: the newest versions and store changes, down to the first of a
	// commit that stays.
	var gone []verRec
	var kept uint64
	for v, err := range c.versionsDown(everyVersion) {
		if err != nil {
			return err
		}
		if !undone[commitOf(v.Commit)] {
			kept = v.seq
			break
		}
		gone = append(gone, v)
	}
	var goneChanges []storeChgRec
	storeChanged := false
	for ch, err := range c.storeChangesFrom(0) {
		if err != nil {
			return err
		}
		if undone[commitOf(ch.Commit)] {
			goneChanges = append(goneChanges, ch)
			storeChanged = storeChanged || ch.Prop == ""
		} else {
			kept = max(kept, ch.seq)
		}
	}
	affected := map[string]bool{}
	for _, v := range gone {
		if v.seq <= kept || touched[v.Memory] {
			return errNoRewind
		}
		affected[v.Memory] = true
	}
	for _, ch := range goneChanges {
		if ch.seq <= kept {
			return errNoRewind
		}
	}

	// The memories' paths as they are now, freed; their records, gone.
	var memories, bytes int64
	for id := range affected {
		rec, ok, err := c.memory(id)
		if err != nil {
			return err
		}
		if ok && !rec.Deleted {
			if touched[rec.Path] {
				return errNoRewind
			}
			if err := c.freePath(rec.Path, id); err != nil {
				return err
			}
			memories, bytes = memories-1, bytes-int64(rec.Size)
		}
	}
	// lost are the version ids whose verid entry names a record undone: a version of the
	// same id that stays (history may hold an id twice: a commit that reuses another's
	// trailers) gets it back, as a rebuild, which numbers the newest, has it.
	lost := map[string]bool{}
	var lostElsewhere []string
	for _, v := range gone {
		k := seqKey(v.seq)
		if err := c.tx.Bucket(bVer).Delete(k); err != nil {
			return err
		}
		if string(c.versionKey(v.ID)) == string(k) {
			if err := c.tx.Bucket(bVerID).Delete([]byte(v.ID)); err != nil {
				return err
			}
			lost[v.ID] = true
			if reused[commitOf(v.Commit)] {
				lostElsewhere = append(lostElsewhere, v.ID)
			}
		}
		if err := c.unindexVersion(v); err != nil {
			return err
		}
	}
	for _, ch := range goneChanges {
		if err := c.tx.Bucket(bStore).Delete(seqKey(ch.seq)); err != nil {
			return err
		}
	}
	// Numbers above kept name no record now: the mark of sesver and keyver says nothing of
	// them.
	if err := c.lowerIndexMark(kept); err != nil {
		return err
	}

	// Each memory as its versions before leave it, live where base's tree holds its content:
	// a catalog where a memory lives at a path that base does not hold it at (a commit that
	// named another memory took the path, and left) is not one the undoing can give again.
	commit, err := readCommit(or, base)
	if err != nil {
		return err
	}
	trees := newTreeReader(or)
	for id := range affected {
		vs, err := c.memoryVersions(id)
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			if err := c.tx.Bucket(bMem).Delete([]byte(id)); err != nil {
				return err
			}
			continue
		}
		var rec memRec
		for i, v := range vs {
			if undone[commitOf(v.Commit)] {
				// Older than a record that stays: not the newest, as the undoing needs.
				return fmt.Errorf("%w: version %s of %s is numbered before a record that stays", errNoRewind, v.ID, v.Commit)
			}
			rec = rec.after(v, i > 0)
			if lost[v.ID] {
				if err := c.tx.Bucket(bVerID).Put([]byte(v.ID), seqKey(v.seq)); err != nil {
					return err
				}
			}
		}
		if !rec.Deleted {
			if touched[rec.Path] {
				return errNoRewind
			}
			if e, found, _, err := entryAt(trees, commit.TreeHash, treePath(rec.Path)); err != nil {
				return err
			} else if !found || !isMemoryFile(e.Mode) || e.Hash.String() != rec.Blob {
				return fmt.Errorf("%w: %s does not hold memory %s as its versions leave it", errNoRewind, rec.Path, id)
			}
			if other, ok := c.pathID(rec.Path); ok && other != id {
				return fmt.Errorf("%w: %s would hold memories %s and %s", errNoRewind, rec.Path, other, id)
			}
			if err := c.setPath(rec.Path, id); err != nil {
				return err
			}
			memories, bytes = memories+1, bytes+int64(rec.Size)
		}
		if err := c.putMemory(id, rec); err != nil {
			return err
		}
	}
	if err := c.addUsage(int(memories), bytes); err != nil {
		return err
	}
	if err := c.findLostVersions(lostElsewhere); err != nil {
		return err
	}
	// The store's metadata as base has it, if an undone commit changed it; a commit without
	// store.json keeps the metadata before it, which only a rebuild finds.
	if storeChanged {
		h, err := fileAt(or, commit.TreeHash, "/"+storeFile)
		if err != nil {
			return err
		}
		if h.IsZero() {
			return fmt.Errorf("%w: %s has no %s", errNoRewind, base, storeFile)
		}
		if err := c.applyStoreFile(or, h, nil); err != nil {
			return err
		}
	}
	return c.setApplied(base)
}

// findLostVersions gives each version id of ids the newest record of that id that the
// catalog holds, if any: a commit made with git that reuses another's ids
// (Gitmem-Derived-From: a cherry-pick of an approved or redacted one) may have made it for
// another memory than the undone one, which the memory's own versions do not show. It reads
// every version's id.
func (c catTx) findLostVersions(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	found := map[string][]byte{}
	cur := c.tx.Bucket(bVer).Cursor()
	for k, raw := cur.First(); k != nil; k, raw = cur.Next() {
		r := recReader{b: raw}
		if id := r.str(); r.err == nil && want[id] {
			found[id] = append([]byte(nil), k...)
		}
	}
	for id, k := range found {
		if err := c.tx.Bucket(bVerID).Put([]byte(id), k); err != nil {
			return err
		}
	}
	return nil
}
