package gitstore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Revert undoes what one session, or one API key, changed in a time range, as new commits
// on top of history (nothing is reset). A memory that someone else changed after the
// reverted actor first touched it in the range is left alone and reported, never clobbered.

// RevertInput selects the versions to revert: those made by session SessionID, or by the
// API key APIKeyID (directly or through a session that used it) — exactly one of the two —
// with created_at in [Since, Until]; a zero time leaves that end open. DryRun reports what
// would happen and writes nothing.
type RevertInput struct {
	SessionID string
	APIKeyID  string
	Since     time.Time
	Until     time.Time
	DryRun    bool
	Actor     Actor
}

// RevertAction is what a revert did to one memory.
type RevertAction string

// The actions of a revert.
const (
	// RevertRestored: content and/or path back to the state before the range.
	RevertRestored RevertAction = "restored"
	// RevertDeleted: the range created the memory; it is deleted.
	RevertDeleted RevertAction = "deleted"
	// RevertRecreated: the range deleted the memory; it comes back with its id.
	RevertRecreated RevertAction = "recreated"
)

// SkipReason says why a revert left a memory alone.
type SkipReason string

// The reasons a memory is skipped.
const (
	// SkipChangedLater: a version by another actor came after the reverted actor's first
	// version of the memory in the range.
	SkipChangedLater SkipReason = "changed_later"
	// SkipPathTaken: the path the memory had before the range is now another memory's (or
	// lies below or above one).
	SkipPathTaken SkipReason = "path_taken"
	// SkipRedacted: the state before the range is a redacted version, whose content is gone.
	SkipRedacted SkipReason = "redacted"
	// SkipReviewed: the memory is in a folder that the store changes only through review
	// (Policy.ReviewPaths), and the actor reverting may not change it directly.
	SkipReviewed SkipReason = "reviewed"
)

// RevertedMemory is a memory that a revert changed (or, in a dry run, would change).
type RevertedMemory struct {
	MemoryID string
	Path     string // after the revert; for a deletion, the path it was deleted from
	FromPath string // before the revert; "" for a recreated memory
	Action   RevertAction
	// RevertedTo is the version whose state came back: the memory's last version before the
	// range ("" when the range created the memory).
	RevertedTo string
	VersionID  string // the version the revert made; "" in a dry run
}

// SkippedMemory is a memory that a revert left alone.
type SkippedMemory struct {
	MemoryID string
	Path     string // the memory's current path (or last path, if deleted)
	Reason   SkipReason
	Message  string
	// Blocking is the version that blocks the revert: the later change by another actor, or
	// the version that holds the memory that took the path. Nil when the path is taken by a
	// memory that the revert itself moves there.
	Blocking *Version
	// ConflictingMemoryID is, for SkipPathTaken, the memory that holds the path.
	ConflictingMemoryID string
}

// UnchangedMemory is a memory that the range touched and that is already in the state
// before the range.
type UnchangedMemory struct {
	MemoryID string
	Path     string
}

// RevertResult is the outcome of a revert. Each list is in path order (then id order).
type RevertResult struct {
	DryRun    bool
	Reverted  []RevertedMemory
	Skipped   []SkippedMemory
	Unchanged []UnchangedMemory
}

// memState is the state of a memory at one point: absent, or content at a path.
type memState struct {
	exists bool
	path   string
	blob   string
	sha    string
}

// revertStep is one planned change.
type revertStep struct {
	id       string
	action   RevertAction
	from     string // current path ("" if the memory is deleted now)
	to       memState
	prevVer  string
	moveOnly bool // to.path differs from from (a recreate counts as a move)
}

// Revert reverts what in.SessionID or in.APIKeyID changed between in.Since and in.Until.
// For each memory that the selected versions touched, the state just before its first
// selected version (content and path, or absent) comes back as a new version made by
// in.Actor: a rename is undone keeping the id, a memory the range created is deleted, and
// one it deleted comes back with its id (as Restore brings it). A memory already in that
// state is unchanged. A memory with a version by another actor after the first selected
// one is skipped (the versions of the same session or key count as its own, inside the
// range and after it), as is one whose earlier path another memory has taken.
//
// All the changes are made by the writer in one group, one commit and version per memory,
// published with one ref update: a reader sees all of them or none. Deletions go first, then
// content changes, then moves, in an order that frees each path before it is taken again.
func (s *Store) Revert(ctx context.Context, in RevertInput) (RevertResult, error) {
	if (in.SessionID == "") == (in.APIKeyID == "") {
		return RevertResult{}, invalidf("revert needs exactly one of a session id and an API key id")
	}
	if !in.Since.IsZero() && !in.Until.IsZero() && in.Until.Before(in.Since) {
		return RevertResult{}, invalidf("the end of the range (%s) is before its start (%s)", fmtTime(in.Until), fmtTime(in.Since))
	}
	if err := validateActor(in.Actor); err != nil {
		return RevertResult{}, err
	}
	return submitAs(ctx, s, func(b *batch) (RevertResult, error) {
		if !in.DryRun {
			if _, err := b.writableStore(); err != nil {
				return RevertResult{}, err
			}
		}
		return b.revert(in)
	})
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// revertLabel is what a revert reverts, for commit subjects and the trailer.
func (in RevertInput) label() string {
	if in.SessionID != "" {
		return "session " + in.SessionID
	}
	return "api_key " + in.APIKeyID
}

// own reports whether version v was made by the reverted session or key.
func (in RevertInput) own(v verRec) bool {
	a := v.actor()
	if in.SessionID != "" {
		return a.SessionID() == in.SessionID
	}
	return a.KeyID() == in.APIKeyID
}

// revert selects the memories that the versions of in touched, classifies each (unchanged,
// skipped, or a step: a deletion, a content change or a move), plans the order of the moves,
// and applies the steps as commits (none in a dry run). Errors of the catalog abort the group.
func (b *batch) revert(in RevertInput) (RevertResult, error) {
	res := RevertResult{DryRun: in.DryRun}
	// Select: the memories the selected versions touched, in the order of their first
	// selected version, with that version's number.
	filter := VersionFilter{SessionID: in.SessionID, APIKeyID: in.APIKeyID, CreatedAtGTE: in.Since, CreatedAtLTE: in.Until}
	order, first, err := b.ct.firstMatchingVersions(filter)
	if err != nil {
		return res, b.fail(err)
	}
	var deletes, contents, moves []revertStep
	for _, id := range order {
		st, ok, err := b.revertClassify(in, id, first[id], &res)
		switch {
		case err != nil:
			return res, b.fail(err)
		case !ok:
		case st.action == RevertDeleted:
			deletes = append(deletes, st)
		case st.moveOnly:
			moves = append(moves, st)
		default:
			contents = append(contents, st)
		}
	}
	planned, err := b.revertPlan(deletes, moves, &res)
	if err != nil {
		return res, b.fail(err)
	}
	if err := b.revertApply(in, append(append(deletes, contents...), planned...), &res); err != nil {
		return res, err
	}
	res.sort()
	return res, nil
}

// revertHistory is what a memory's versions say around its first selected version.
type revertHistory struct {
	before   memState // the state just before it (absent if it created the memory)
	prevVer  string   // the version that made before; "" if none
	redacted *verRec  // that version, if it is redacted
	blocking *verRec  // the first later version by another actor
}

// historyAround reads a memory's versions (oldest first) around the version firstID.
func historyAround(in RevertInput, versions []verRec, firstID string) revertHistory {
	var h revertHistory
	at := -1
	for i, v := range versions {
		if v.ID == firstID {
			at = i
			if i > 0 {
				p := versions[i-1]
				h.prevVer = p.ID
				if p.Op != OpDeleted && p.Blob != "" {
					h.before = memState{exists: true, path: p.Path, blob: p.Blob, sha: p.SHA}
				}
				if p.Redacted != nil {
					h.redacted = &versions[i-1]
				}
			}
			continue
		}
		if at >= 0 && h.blocking == nil && !in.own(v) {
			h.blocking = &versions[i]
		}
	}
	return h
}

// revertClassify compares memory id now with its state before its first selected version
// (number first). A memory already in that state goes to res.Unchanged, one that may not be
// reverted to res.Skipped; otherwise it returns the step that reverts it, and true.
func (b *batch) revertClassify(in RevertInput, id string, first []byte, res *RevertResult) (revertStep, bool, error) {
	rec, ok, err := b.ct.memory(id)
	if err != nil {
		return revertStep{}, false, err
	}
	if !ok {
		return revertStep{}, false, fmt.Errorf("catalog version names unknown memory %s", id)
	}
	now := memState{exists: !rec.Deleted, path: rec.Path, blob: rec.Blob, sha: rec.SHA}
	versions, err := b.ct.memoryVersions(id)
	if err != nil {
		return revertStep{}, false, err
	}
	firstVer, err := b.ct.versionBySeq(first)
	if err != nil {
		return revertStep{}, false, err
	}
	h := historyAround(in, versions, firstVer.ID)
	before := h.before
	switch {
	case before.exists == now.exists && (!now.exists || before.path == now.path && before.sha == now.sha):
		res.Unchanged = append(res.Unchanged, UnchangedMemory{MemoryID: id, Path: rec.Path})
		return revertStep{}, false, nil
	case h.blocking != nil:
		ver := versionFrom(b.s.id, *h.blocking)
		a := h.blocking.actor()
		res.Skipped = append(res.Skipped, SkippedMemory{MemoryID: id, Path: rec.Path, Reason: SkipChangedLater, Blocking: &ver,
			Message: fmt.Sprintf("changed later by %s %s (version %s at %s)", a.Type, a.ID, h.blocking.ID, fmtTime(ver.CreatedAt))})
		return revertStep{}, false, nil
	case h.redacted != nil:
		ver := versionFrom(b.s.id, *h.redacted)
		res.Skipped = append(res.Skipped, SkippedMemory{MemoryID: id, Path: rec.Path, Reason: SkipRedacted, Blocking: &ver,
			Message: fmt.Sprintf("its state before the range is version %s, which was redacted: its content is gone", ver.ID)})
		return revertStep{}, false, nil
	}
	st := revertStep{id: id, to: before, prevVer: h.prevVer}
	if now.exists {
		st.from = now.path
	}
	switch {
	case !before.exists:
		st.action = RevertDeleted
		st.to.path = now.path
	case !now.exists:
		st.action = RevertRecreated
		st.moveOnly = true
	default:
		st.action = RevertRestored
		st.moveOnly = before.path != now.path
	}
	return st, true, nil
}

// revertPlan orders the moves against the paths as the deletions and earlier moves leave
// them: each pass takes the moves whose destination is free, until none is left or none can
// go; those go to res.Skipped.
func (b *batch) revertPlan(deletes, moves []revertStep, res *RevertResult) ([]revertStep, error) {
	sim := &pathSim{ct: b.ct, gone: map[string]bool{}, added: map[string]string{}}
	for _, st := range deletes {
		sim.remove(st.from)
	}
	var planned []revertStep
	for len(moves) > 0 {
		var rest []revertStep
		for _, st := range moves {
			if st.from != "" {
				sim.remove(st.from)
			}
			cid, _, err := sim.conflict(st.to.path)
			if err != nil {
				return nil, err
			}
			if cid != "" {
				if st.from != "" {
					sim.add(st.from, st.id)
				}
				rest = append(rest, st)
				continue
			}
			sim.add(st.to.path, st.id)
			planned = append(planned, st)
		}
		if len(rest) == len(moves) {
			return planned, b.skipStuckMoves(sim, rest, res)
		}
		moves = rest
	}
	return planned, nil
}

// skipStuckMoves reports the moves that no order lets go, with the memory in each one's way.
func (b *batch) skipStuckMoves(sim *pathSim, stuck []revertStep, res *RevertResult) error {
	for _, st := range stuck {
		if st.from != "" {
			sim.remove(st.from)
		}
		cid, cpath, err := sim.conflict(st.to.path)
		if st.from != "" {
			sim.add(st.from, st.id)
		}
		if err != nil {
			return err
		}
		res.Skipped = append(res.Skipped, b.pathTaken(st, cid, cpath))
	}
	return nil
}

// revertApply makes the commit of each step, in order (none in a dry run), and lists it in
// res.Reverted, or in res.Skipped if its commit found the path taken after all.
func (b *batch) revertApply(in RevertInput, steps []revertStep, res *RevertResult) error {
	info, err := b.writableStore()
	if err != nil {
		return err
	}
	for _, st := range steps {
		if err := b.review(info.Policy, in.Actor, false, st.from, st.to.path); err != nil {
			path := st.from
			if path == "" {
				path = st.to.path
			}
			res.Skipped = append(res.Skipped, SkippedMemory{MemoryID: st.id, Path: path, Reason: SkipReviewed, Message: err.Error()})
			continue
		}
		r := RevertedMemory{MemoryID: st.id, Path: st.to.path, FromPath: st.from, Action: st.action, RevertedTo: st.prevVer}
		if !in.DryRun {
			verID, skip, err := b.revertCommit(in, st)
			if err != nil {
				return err
			}
			if skip != nil {
				res.Skipped = append(res.Skipped, *skip)
				continue
			}
			r.VersionID = verID
		}
		res.Reverted = append(res.Reverted, r)
	}
	return nil
}

// sort puts each list in path order, then id order.
func (res *RevertResult) sort() {
	less := func(p1, id1, p2, id2 string) bool { return p1 < p2 || p1 == p2 && id1 < id2 }
	sort.Slice(res.Reverted, func(i, j int) bool {
		return less(res.Reverted[i].Path, res.Reverted[i].MemoryID, res.Reverted[j].Path, res.Reverted[j].MemoryID)
	})
	sort.Slice(res.Skipped, func(i, j int) bool {
		return less(res.Skipped[i].Path, res.Skipped[i].MemoryID, res.Skipped[j].Path, res.Skipped[j].MemoryID)
	})
	sort.Slice(res.Unchanged, func(i, j int) bool {
		return less(res.Unchanged[i].Path, res.Unchanged[i].MemoryID, res.Unchanged[j].Path, res.Unchanged[j].MemoryID)
	})
}

// pathTaken reports a move whose destination memory cid holds (at cpath).
func (b *batch) pathTaken(st revertStep, cid, cpath string) SkippedMemory {
	path := st.from
	if path == "" {
		rec, _, _ := b.ct.memory(st.id)
		path = rec.Path
	}
	sk := SkippedMemory{MemoryID: st.id, Path: path, Reason: SkipPathTaken, ConflictingMemoryID: cid,
		Message: pathConflict(st.to.path, cid, cpath).Error()}
	if rec, ok, err := b.ct.memory(cid); err == nil && ok && !rec.Deleted && rec.Path == cpath {
		if v, ok, err := b.ct.version(rec.Version); err == nil && ok {
			ver := versionFrom(b.s.id, v)
			sk.Blocking = &ver
		}
	}
	return sk
}

// revertCommit makes the commit of one step. A destination path that the tree refuses
// although the plan found it free (a file that is not a memory) skips the step.
func (b *batch) revertCommit(in RevertInput, st revertStep) (string, *SkippedMemory, error) {
	root := b.root
	var err error
	if st.from != "" && st.from != st.to.path || st.action == RevertDeleted {
		if root, err = b.setFile(root, st.from, nil); err != nil {
			return "", nil, err
		}
	}
	var subject string
	op := OpModified
	switch st.action {
	case RevertDeleted:
		op = OpDeleted
		subject = "delete " + st.from
	case RevertRecreated:
		subject = fmt.Sprintf("recreate %s as of version %s", st.to.path, st.prevVer)
	default:
		subject = fmt.Sprintf("restore %s to version %s", st.to.path, st.prevVer)
		if st.from != st.to.path {
			subject = fmt.Sprintf("restore %s to version %s (from %s)", st.to.path, st.prevVer, st.from)
		}
	}
	if st.action != RevertDeleted {
		if st.from != st.to.path {
			if err := b.checkPathFree(root, st.to.path); err != nil {
				if e, ok := err.(*Error); ok && e.Kind == KindPathConflict {
					sk := b.pathTaken(st, e.ConflictingMemoryID, e.ConflictingPath)
					return "", &sk, nil
				}
				return "", nil, err
			}
		}
		o, err := b.object(plumbing.NewHash(st.to.blob))
		if err != nil {
			return "", nil, b.fail(err)
		}
		raw, err := readEncoded(o)
		if err != nil {
			return "", nil, b.fail(err)
		}
		content := string(raw)
		if root, err = b.setFile(root, st.to.path, &content); err != nil {
			return "", nil, err
		}
	}
	when := b.now()
	verID := NewID(VersionPrefix, when)
	t := trailers{{trailerMemory, st.id}, {trailerVersion, verID}, {trailerOperation, string(op)}}
	if st.action != RevertDeleted {
		t = append(t, struct{ Key, Value string }{trailerRestoredFrom, st.prevVer})
	}
	t = append(t, struct{ Key, Value string }{trailerReverts, in.trailer()})
	t = append(t, actorTrailers(in.Actor)...)
	if err := b.commit(root, "revert "+in.label()+": "+subject, t, in.Actor, when); err != nil {
		return "", nil, err
	}
	return verID, nil, nil
}

// pathSim answers path conflicts for a planned set of moves: the catalog's live paths, less
// the paths the plan frees, plus those it takes.
type pathSim struct {
	ct    catTx
	gone  map[string]bool
	added map[string]string // path -> memory id
}

func (p *pathSim) remove(path string) {
	if _, ok := p.added[path]; ok {
		delete(p.added, path)
		return
	}
	p.gone[path] = true
}

func (p *pathSim) add(path, id string) { p.added[path] = id }

// at returns the memory that lives at path in the plan.
func (p *pathSim) at(path string) (string, error) {
	if id, ok := p.added[path]; ok {
		return id, nil
	}
	if p.gone[path] {
		return "", nil
	}
	id, _, _, err := p.ct.live(path)
	return id, err
}

// conflict returns the memory that keeps path from being taken: the one at path, at a
// parent of it, or below it; "" if path is free.
func (p *pathSim) conflict(path string) (string, string, error) {
	if id, err := p.at(path); err != nil || id != "" {
		return id, path, err
	}
	for i := 1; i < len(path); i++ {
		if path[i] == '/' {
			if id, err := p.at(path[:i]); err != nil || id != "" {
				return id, path[:i], err
			}
		}
	}
	prefix := path + "/"
	for k, v := range p.ct.pathsBelow(prefix) {
		if !p.gone[k] {
			return v, k, nil
		}
	}
	for q, id := range p.added {
		if strings.HasPrefix(q, prefix) {
			return id, q, nil
		}
	}
	return "", "", nil
}
