package proposals

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/suspect"
	"github.com/gitmem/gitmem/secrets"
)

// Change is a memory path that a proposal changes, against main as it is now.
type Change struct {
	Path      string `json:"path"`
	Operation string `json:"operation"` // created, modified or deleted
	MemoryID  string `json:"memory_id"`
	// Before is main's content now ("" and Created for none); After the proposal's ("" for
	// a delete). Diff is a unified diff of the two. All three are left out past
	// MaxDiffBytes of content in one answer, or past MaxDiffTime of diffing (Truncated).
	Before    *string `json:"before,omitempty"`
	After     *string `json:"after,omitempty"`
	Diff      string  `json:"diff,omitempty"`
	Truncated bool    `json:"truncated,omitempty"`
	// Conflict: main holds another memory at the path than the proposal changes (both made
	// one there), which an approval keeps apart as a conflict.
	Conflict bool `json:"conflict,omitempty"`
}

// MaxDiffBytes bounds the content that one Diff answers; the changes past it are listed
// without content.
const MaxDiffBytes = 8 << 20

// MaxDiffTime bounds the time that one Diff spends diffing: each read of a proposal makes
// it, and one line diff of 100 KB can take a quarter of a second (gitstore.DiffTimeout bounds
// each). The changes past it are listed without content, as past MaxDiffBytes.
const MaxDiffTime = 2 * time.Second

// Diff returns what proposal id changes, path by path, against main as it is now.
func (m *Manager) Diff(ctx context.Context, st *gitstore.Store, id string) ([]Change, error) {
	unlock, err := m.lock(st.ID())
	if err != nil {
		return nil, err
	}
	p, err := m.get(st.ID(), id)
	var f *gitstore.Store
	switch {
	case err != nil || p.State == Approved:
	case p.State == Open:
		f, err = m.fork(p)
	case p.Dropped:
		err = &gitstore.Error{Kind: gitstore.KindNotFound, Message: fmt.Sprintf("proposal %s was rejected and its changes are no longer kept (only the newest %d rejected proposals keep theirs)", id, MaxKeptRejected)}
	default: // rejected: its fork is opened for this diff only
		if f, err = m.data.OpenFork(p.StoreID, m.data.Layout().ProposalFork(p.StoreID, p.ID)); err == nil {
			defer f.CloseFork()
		}
	}
	if err == nil && p.State == Open && p.Branch == "" {
		// The proposal is also the branch proposals/<id> of the store's repository, as of
		// the last time it was read: people can fetch it with git. Best effort. Under the store's lock,
		// so that it is not the fork's history from before a redaction (redact.go) that
		// lands after the store's redaction has moved the branches.
		st.TakeBranch(ctx, m.data.Layout().ProposalFork(st.ID(), p.ID), branchOf(p))
	}
	unlock()
	if err != nil {
		return nil, err
	}
	if p.State == Approved {
		return nil, &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("proposal %s was approved: its changes are main's versions (merge %s)", id, p.Merge)}
	}
	return diff(ctx, st, f, p)
}

// branchOf is the branch of the store's repository that holds proposal p.
func branchOf(p Proposal) string {
	if p.Branch != "" {
		return p.Branch
	}
	return gitstore.ProposalBranches + p.ID
}

// diff is Diff of proposal p, whose fork is f.
func diff(ctx context.Context, st, f *gitstore.Store, p Proposal) ([]Change, error) {
	_, changed, err := f.Changes(ctx, p.Base)
	if err != nil {
		return nil, err
	}
	out := make([]Change, 0, len(changed))
	budget := MaxDiffBytes
	start := time.Now()
	for _, ch := range changed {
		c := Change{Path: ch.Path, MemoryID: ch.MemoryID}
		var before, after *string
		if cur, err := st.GetByPath(ctx, ch.Path, true); err == nil {
			before = cur.Content
			if c.MemoryID == "" {
				c.MemoryID = cur.ID
			}
			// Main made another memory at the path since: not the same memory modified.
			c.Conflict = ch.MemoryID != "" && ch.MemoryID != cur.ID
		} else if !gitstore.IsKind(err, gitstore.KindNotFound) {
			return nil, err
		}
		if ch.Blob != "" {
			s, err := f.Blob(ctx, ch.Blob)
			if err != nil {
				return nil, err
			}
			after = &s
		}
		switch {
		case before == nil && after == nil:
			continue // made and deleted again in the proposal
		case before == nil:
			c.Operation = "created"
		case after == nil:
			c.Operation = "deleted"
		case *before == *after:
			continue // main has it already
		default:
			c.Operation = "modified"
		}
		size := len(deref(before)) + len(deref(after))
		if size > budget || time.Since(start) > MaxDiffTime {
			c.Truncated = true
		} else {
			budget -= size
			c.Before, c.After = before, after
			a, b := "a"+ch.Path, "b"+ch.Path
			if before == nil {
				a = "/dev/null"
			}
			if after == nil {
				b = "/dev/null"
			}
			c.Diff = gitstore.UnifiedDiff(a, b, deref(before), deref(after))
		}
		out = append(out, c)
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ApproveOptions change an approval.
type ApproveOptions struct {
	// AllowConflicts approves a proposal whose merge with main conflicts: the conflicts are
	// kept as sync keeps them (both versions, one at a conflict path). Without it, such an
	// approval is refused with the conflicts, and nothing is written.
	AllowConflicts bool
	// Paths, if set, approves only the changes of these memory paths (as Diff names them):
	// each becomes a version in main by the proposal's author, and the other changes are
	// dropped with the proposal. A path that main changed since the proposal opened is a
	// conflict, refused unless AllowConflicts (then the proposal's content wins).
	Paths []string
}

// ConflictError refuses an approval whose merge would conflict.
type ConflictError struct {
	ID        string
	Conflicts []gitstore.Conflict
}

func (e *ConflictError) Error() string {
	paths := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		paths[i] = c.Path
	}
	return fmt.Sprintf("proposal %s conflicts with main at %s; nothing was written: approve with allow_conflicts to keep both sides, or reject it", e.ID, strings.Join(paths, ", "))
}

// Unwrap makes a ConflictError a KindConflict error for gitstore.ErrorKind's callers.
func (e *ConflictError) Unwrap() error {
	return &gitstore.Error{Kind: gitstore.KindConflict, Message: e.Error()}
}

// Approve merges proposal id into main by the rules sync has: a fast-forward if main has not
// moved since the proposal opened, else a merge. Its versions are main's afterwards, by
// their authors, each with the approver (Version.ApprovedBy). A merge that would conflict is
// refused (ConflictError) unless opts allow it, decided inside the store's writer.
func (m *Manager) Approve(ctx context.Context, st *gitstore.Store, id string, by gitstore.Actor, opts ApproveOptions) (Proposal, gitstore.MergeResult, error) {
	unlock, err := m.lock(st.ID())
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	defer unlock()
	p, err := m.get(st.ID(), id)
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	if p.State != Open {
		return Proposal{}, gitstore.MergeResult{}, &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("proposal %s is %s already", id, p.State)}
	}
	if len(opts.Paths) > 0 {
		return m.approveSome(ctx, st, p, by, opts)
	}
	dir := m.data.Layout().ProposalFork(st.ID(), id)
	// Closed first: a write that comes now fails (and is not acknowledged) instead of going
	// to a fork that the approval has already taken.
	if f := m.takeFork(st.ID(), id); f != nil {
		if err := f.CloseFork(); err != nil {
			return Proposal{}, gitstore.MergeResult{}, err
		}
	}
	f, err := m.fork(p) // reopened to read: the checks, then closed again
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	err = m.admissible(ctx, st, f, p, by)
	m.takeFork(st.ID(), id)
	if cerr := f.CloseFork(); err == nil {
		err = cerr
	}
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	head, err := st.TakeBranch(ctx, dir, gitstore.ProposalBranches+id)
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	if head, err = st.StampApproval(ctx, p.Base, head, by); err != nil { // each version says who approved it
		return Proposal{}, gitstore.MergeResult{}, err
	}
	// Conflicts are refused inside the store's writer, so that no write between a check
	// and the merge can make one.
	res, err := st.IntegrateWith(ctx, "proposal "+id, head, gitstore.IntegrateOptions{RefuseConflicts: !opts.AllowConflicts})
	var mc *gitstore.MergeConflictError
	if errors.As(err, &mc) {
		return Proposal{}, gitstore.MergeResult{}, &ConflictError{ID: id, Conflicts: mc.Conflicts}
	}
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	// main holds the proposal now: what records that runs to its end, whatever the caller's
	// context does (a client gone, the answer's deadline), or the proposal would stay open.
	ctx = context.WithoutCancel(ctx)
	if err := st.SetBranch(ctx, gitstore.ProposalBranches+id, head); err != nil { // its commits as approved
		return Proposal{}, res, err
	}
	if err := st.RecordProposal(ctx, id, "approved", p.Title, by); err != nil {
		return Proposal{}, res, err
	}
	res.After = st.Head()
	now := time.Now().UTC()
	by2 := ActorOf(by)
	p, err = m.update(st.ID(), id, func(p *Proposal) error {
		p.State, p.DecidedBy, p.DecidedAt, p.Merge = Approved, &by2, &now, res.After
		return nil
	})
	if err != nil {
		return Proposal{}, res, err
	}
	if err := os.RemoveAll(dir); err != nil { // its commits are main's now
		return p, res, err
	}
	m.supersede(ctx, st, p.ID, by)
	return p, res, nil
}

// supersede marks the store's other open proposals that main now holds whole (they changed
// something, and nothing of it differs from main) as superseded, after approval of approved.
// The store's lock is held. It is best effort: a proposal it cannot read stays open.
func (m *Manager) supersede(ctx context.Context, st *gitstore.Store, approved string, by gitstore.Actor) {
	l, err := m.list(st.ID())
	if err != nil {
		return
	}
	for _, p := range l {
		if p.State != Open || p.ID == approved {
			continue
		}
		f, err := m.fork(p)
		if err != nil {
			continue
		}
		_, own, err := f.Changes(ctx, p.Base)
		if err != nil || len(own) == 0 {
			continue // nothing proposed yet
		}
		left, err := diff(ctx, st, f, p)
		if err != nil || len(left) > 0 {
			continue
		}
		if err := st.RecordProposal(ctx, p.ID, "superseded", p.Title, by); err != nil {
			continue
		}
		st.SetBranch(ctx, branchOf(p), "")
		m.takeFork(st.ID(), p.ID)
		f.CloseFork()
		now := time.Now().UTC()
		by2 := ActorOf(by)
		m.update(st.ID(), p.ID, func(q *Proposal) error {
			q.State, q.DecidedBy, q.DecidedAt = Superseded, &by2, &now
			if len(q.Comments) < MaxComments {
				q.Comments = append(q.Comments, Comment{Author: by2, CreatedAt: now,
					Body: "Superseded: the store holds everything it proposes since proposal " + approved + " was approved."})
			}
			return nil
		})
	}
}

// Reject closes proposal id without merging it; its fork is kept, so that its changes can
// still be read.
func (m *Manager) Reject(ctx context.Context, st *gitstore.Store, id string, by gitstore.Actor) (Proposal, error) {
	return m.reject(ctx, st, id, by, nil)
}

// RejectWithComment is Reject with a comment by by, the thread's last, checked as
// AddComment checks one: the proposal's record is read and written once for both, and a
// comment refused leaves the proposal open.
func (m *Manager) RejectWithComment(ctx context.Context, st *gitstore.Store, id string, by gitstore.Actor, comment string) (Proposal, error) {
	if err := checkText("comment", comment, MaxComment, suspect.TextError); err != nil {
		return Proposal{}, err
	}
	return m.reject(ctx, st, id, by, &comment)
}

// reject is Reject, with comment if it is not nil.
func (m *Manager) reject(ctx context.Context, st *gitstore.Store, id string, by gitstore.Actor, comment *string) (Proposal, error) {
	unlock, err := m.lock(st.ID())
	if err != nil {
		return Proposal{}, err
	}
	defer unlock()
	p, err := m.get(st.ID(), id)
	if err != nil {
		return Proposal{}, err
	}
	if p.State != Open {
		return Proposal{}, &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("proposal %s is %s already", id, p.State)}
	}
	if comment != nil {
		if err := roomForComment(p); err != nil { // before anything is rejected
			return Proposal{}, err
		}
	}
	if f := m.takeFork(st.ID(), id); f != nil {
		if err := f.CloseFork(); err != nil {
			return Proposal{}, err
		}
	}
	if err := st.RecordProposal(ctx, id, "rejected", p.Title, by); err != nil {
		return Proposal{}, err
	}
	st.SetBranch(ctx, branchOf(p), "") // its content leaves the repository that clones see; its fork keeps it for reading
	now := time.Now().UTC()
	by2 := ActorOf(by)
	return m.update(st.ID(), id, func(p *Proposal) error {
		if comment != nil {
			p.Comments = append(p.Comments, Comment{Author: by2, Body: *comment, CreatedAt: now})
		}
		p.State, p.DecidedBy, p.DecidedAt = Rejected, &by2, &now
		return nil
	})
}

// approvable refuses an approval by by of a change of path, in a folder that the store's
// policy reviews, unless the policy exempts by (gitstore.Policy.ReviewedBy): a write of a key
// under review goes to its own proposal, which it could otherwise approve.
func approvable(p gitstore.Policy, path string, by gitstore.Actor) error {
	if !p.Reviews(path, by) {
		return nil
	}
	return p.ReviewedBy(by, "approving the change of "+path+", in a folder that this store changes only through review")
}

// MaxApprovePaths bounds the paths of one approval of some of a proposal's changes.
const MaxApprovePaths = 10_000

// approveSome approves the changes of opts.Paths: each is written to main (or deleted) as the
// proposal has it, as a version by the proposal's author, after checking that main has not
// changed the path since the proposal opened; the rest are dropped. A memory that the
// proposal created keeps its id. The store's lock is held.
func (m *Manager) approveSome(ctx context.Context, st *gitstore.Store, p Proposal, by gitstore.Actor, opts ApproveOptions) (Proposal, gitstore.MergeResult, error) {
	if len(opts.Paths) > MaxApprovePaths {
		return Proposal{}, gitstore.MergeResult{}, &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("%d paths; one approval takes at most %d", len(opts.Paths), MaxApprovePaths)}
	}
	f, err := m.fork(p)
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	changes, err := diff(ctx, st, f, p)
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	byPath := map[string]Change{}
	for _, c := range changes {
		byPath[c.Path] = c
	}
	base, err := st.ReaderAt(ctx, p.Base)
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return Proposal{}, gitstore.MergeResult{}, err
	}
	type step struct {
		c     Change
		now   *gitstore.Memory // main's memory at the path now
		after *string          // the proposal's content, nil for a delete
	}
	var steps []step
	var conflicts []gitstore.Conflict
	for _, path := range opts.Paths {
		c, ok := byPath[path]
		if !ok {
			return Proposal{}, gitstore.MergeResult{}, &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("proposal %s does not change %s", p.ID, path)}
		}
		if err := approvable(info.Policy, path, by); err != nil {
			return Proposal{}, gitstore.MergeResult{}, err
		}
		s := step{c: c}
		if mine, err := f.GetByPath(ctx, path, true); err == nil {
			s.after = mine.Content // read whole: Diff leaves large contents out
		} else if !gitstore.IsKind(err, gitstore.KindNotFound) {
			return Proposal{}, gitstore.MergeResult{}, err
		}
		if cur, err := st.GetByPath(ctx, path, false); err == nil {
			s.now = &cur
		} else if !gitstore.IsKind(err, gitstore.KindNotFound) {
			return Proposal{}, gitstore.MergeResult{}, err
		}
		var baseSHA, nowSHA string
		if was, err := base.GetByPath(ctx, path, false); err == nil {
			baseSHA = was.ContentSHA256
		} else if !gitstore.IsKind(err, gitstore.KindNotFound) {
			return Proposal{}, gitstore.MergeResult{}, err
		}
		if s.now != nil {
			nowSHA = s.now.ContentSHA256
		}
		if nowSHA != baseSHA {
			conflicts = append(conflicts, gitstore.Conflict{Path: path, MemoryID: c.MemoryID})
		}
		steps = append(steps, s)
	}
	if len(conflicts) > 0 && !opts.AllowConflicts {
		return Proposal{}, gitstore.MergeResult{}, &ConflictError{ID: p.ID, Conflicts: conflicts}
	}
	if err := f.CloseFork(); err != nil { // its other changes are dropped
		return Proposal{}, gitstore.MergeResult{}, err
	}
	m.takeFork(p.StoreID, p.ID)
	// From here the approved paths reach main one by one: they and the decision run to the
	// end whatever the caller's context does, so that none is left half approved.
	ctx = context.WithoutCancel(ctx)
	res := gitstore.MergeResult{Outcome: "some", Before: st.Head(), Conflicts: conflicts}
	author := p.Author.Store()
	for _, s := range steps {
		var err error
		switch {
		case s.after == nil && s.now != nil:
			_, err = st.Delete(ctx, gitstore.DeleteInput{ID: s.now.ID, ExpectedSHA256: s.now.ContentSHA256, Actor: author, ApprovedBy: &by})
		case s.after != nil:
			in := gitstore.WriteInput{Path: s.c.Path, Content: *s.after, Actor: author, ApprovedBy: &by}
			if s.now != nil {
				in.Precondition = &gitstore.Precondition{Type: gitstore.ContentSHA256, ContentSHA256: s.now.ContentSHA256}
			} else {
				// A memory the proposal made keeps the id it has there, as a whole approval keeps it.
				in.Precondition, in.MemoryID = &gitstore.Precondition{Type: gitstore.NotExists}, s.c.MemoryID
			}
			_, err = st.Write(ctx, in)
		}
		if err != nil {
			return Proposal{}, res, fmt.Errorf("approve %s of proposal %s: %w (the paths before it are approved)", s.c.Path, p.ID, err)
		}
	}
	if err := st.RecordProposal(ctx, p.ID, "approved", p.Title, by); err != nil {
		return Proposal{}, res, err
	}
	res.After = st.Head()
	now := time.Now().UTC()
	by2 := ActorOf(by)
	note := fmt.Sprintf("Approved %d of its %d changes: %s; the others were dropped.", len(steps), len(changes), strings.Join(opts.Paths, ", "))
	p, err = m.update(st.ID(), p.ID, func(p *Proposal) error {
		p.State, p.DecidedBy, p.DecidedAt, p.Merge = Approved, &by2, &now, res.After
		if len(p.Comments) < MaxComments {
			p.Comments = append(p.Comments, Comment{Author: by2, Body: oneLine(note, MaxComment), CreatedAt: now})
		}
		return nil
	})
	if err != nil {
		return p, res, err
	}
	// Its branch still holds the changes that were dropped: it leaves the repository that
	// clones see, as a rejected proposal's does (the approved ones are main's now).
	if err := st.SetBranch(ctx, branchOf(p), ""); err != nil {
		m.data.Logger().Error("remove the branch of a partly approved proposal", "store", st.ID(), "proposal", p.ID, "err", err)
	}
	err = os.RemoveAll(m.data.Layout().ProposalFork(st.ID(), p.ID))
	m.supersede(ctx, st, p.ID, by)
	return p, res, err
}

func oneLine(s string, max int) string {
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return s
}

// admissible checks a proposal against the store as it is now, before an approval takes
// it: the store is not archived, its history was not rewritten under the proposal (a
// redaction: taking the proposal would bring the redacted content back), and the proposal's
// contents keep the store's current secrets policy and quotas (the fork has the policy of
// when it opened).
func (m *Manager) admissible(ctx context.Context, st, f *gitstore.Store, p Proposal, by gitstore.Actor) error {
	info, err := st.Info(ctx)
	if err != nil {
		return err
	}
	if info.ArchivedAt != nil {
		return &gitstore.Error{Kind: gitstore.KindArchived, Message: fmt.Sprintf("memory store %s is archived: nothing can be approved into it", st.ID())}
	}
	if _, rewritten, err := st.RewrittenTo(ctx, p.Base); err != nil {
		return err
	} else if rewritten {
		return &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("the store's history was rewritten (a redaction) since proposal %s opened: approving it could bring back what was redacted; reject it, and let the agent propose again", p.ID)}
	}
	_, changed, err := f.Changes(ctx, p.Base)
	if err != nil {
		return err
	}
	u, err := st.Usage(ctx)
	if err != nil {
		return err
	}
	secretsOn := info.Policy.Secrets.Effective() != gitstore.SecretsOff
	for _, ch := range changed {
		if err := approvable(info.Policy, ch.Path, by); err != nil {
			return err
		}
		after := ""
		if ch.Blob != "" {
			if after, err = f.Blob(ctx, ch.Blob); err != nil {
				return err
			}
		}
		if cur, err := st.GetByPath(ctx, ch.Path, false); err == nil {
			u.Memories--
			u.Bytes -= int64(cur.SizeBytes)
		} else if !gitstore.IsKind(err, gitstore.KindNotFound) {
			return err
		}
		if ch.Blob == "" {
			continue
		}
		u.Memories++
		u.Bytes += int64(len(after))
		if secretsOn {
			found, err := secrets.Scan(after)
			if err != nil {
				return err
			}
			if len(found) > 0 {
				return &gitstore.Error{Kind: gitstore.KindInvalid, Rule: gitstore.RuleSecret, Message: fmt.Sprintf("proposal %s writes %s holding %s, which the store's secrets policy (%s) does not let in: reject it", p.ID, ch.Path, secrets.Describe(found), info.Policy.Secrets.Effective())}
			}
		}
	}
	pol := info.Policy
	if pol.MaxMemories > 0 && u.Memories > pol.MaxMemories || pol.MaxBytes > 0 && u.Bytes > pol.MaxBytes {
		return &gitstore.Error{Kind: gitstore.KindInvalid, Rule: gitstore.RuleQuota, Message: fmt.Sprintf("approving proposal %s would make the store hold %d memories and %d bytes, past its quota: approve some of it, or raise the quota", p.ID, u.Memories, u.Bytes)}
	}
	return nil
}
