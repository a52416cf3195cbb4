package proposals

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// A redaction reaches the proposals. A fork is a copy of the store's history, so a version
// that the store redacts is in every fork made since it was written: the proposer reads it
// there, and reading or approving the proposal would put it back in the store's repository
// as a branch. The manager wraps every redaction of its data directory's stores
// (gitstore.DataDir.WrapRedact): once the store has redacted the version (in main and in
// every other ref of its repository), each fork that holds it, open or rejected and kept,
// redacts it too, with the same actor and time. A redaction is deterministic, so the
// forks' rewritten history is the very same commits as the store's, as a replica's is
// (docs/history.md): the proposal keeps its changes, its diff, and its approval, from its
// base as rewritten. Where the version is the proposal's current one (it forked before main
// changed the memory), its memory holds the marker.
//
// Why not reject those proposals instead: it costs the agents' work on every proposal
// opened since the leak, which for an old leak is every proposal. Redacting a fork costs
// about what redacting the store does (a repack of a copy of it): measured on the 2-core
// machine with 8 open proposals of a store of 1,000 versions, see docs/proposals.md. A fork
// whose redaction fails is closed instead (its changes removed, an open proposal rejected),
// so that the content goes either way; the answer and the thread say which.
//
// Crash safety: gitstore lists the version for the forks (DataDir.ForksRedacting) before
// the store's redaction starts, whoever runs it, and the wrapper takes it off once every fork
// has it. A crash in between, or a redaction in a process with no manager, leaves it
// listed, and the first use of the store's proposals after it (list) finishes the forks,
// from the redaction that the store recorded.

// redact is the data directory's gitstore.RedactWrapper: the store's redaction, then its
// forks'. The store's lock is held throughout, so that no fork is made from the old history
// meanwhile.
func (m *Manager) redact(ctx context.Context, st *gitstore.Store, in gitstore.RedactInput, next func(gitstore.RedactInput) (gitstore.RedactResult, error)) (gitstore.RedactResult, error) {
	unlock, err := m.lock(st.ID())
	if err != nil { // closed
		return next(in) // the version stays listed; the next manager finishes the forks
	}
	defer unlock()
	if _, err := m.list(st.ID()); err != nil { // finishes an interrupted one first
		return gitstore.RedactResult{}, err
	}
	res, err := next(in)
	// From here on the forks follow to the end, as the store's redaction runs to its end: a
	// caller that went away must not leave them behind, nor close them for it.
	ctx = context.WithoutCancel(ctx)
	v := res.Version
	if err != nil {
		// Refused, or failed: the forks get it all the same if the store has it (a pruning
		// that failed once main had moved, say). If the catalog does not say so, gitstore
		// took a refused one off the list, and left a failed one listed (main may have moved
		// with the catalog behind it) for the next manager to finish or take off.
		got, verr := st.Version(ctx, in.VersionID, false)
		if verr != nil || got.RedactedAt == nil {
			return res, err
		}
		v = got
	}
	forks, ferr := m.redactForks(ctx, st, v)
	res.Forks = forks
	if ferr == nil {
		ferr = m.data.ForksCaughtUp(st.ID(), in.VersionID)
	}
	return res, errors.Join(err, ferr)
}

// finishRedactions redacts in the forks of store storeID the versions that its
// ForksRedacting list names: a crash came between the store's redaction and theirs, or the
// store was redacted where no manager was. A version that the store has not redacted (the
// crash came before) is taken off the list. The store's lock is held, and the store's list
// is loaded.
func (m *Manager) finishRedactions(ctx context.Context, storeID string) error {
	ids, err := m.data.ForksRedacting(storeID)
	if err != nil || len(ids) == 0 {
		return err
	}
	st, err := m.data.Store(ctx, storeID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		v, err := st.Version(ctx, id, false)
		if err != nil && !gitstore.IsKind(err, gitstore.KindNotFound) {
			return err
		}
		if err == nil && v.RedactedAt != nil {
			m.data.Logger().Info("finishing the redaction of a version in the store's proposals", "store", storeID, "version", id)
			if _, err := m.redactForks(ctx, st, v); err != nil {
				return err
			}
		}
		if err := m.data.ForksCaughtUp(storeID, id); err != nil {
			return err
		}
	}
	return nil
}

// redactForks redacts version v, which the store has redacted, in each of its forks that
// holds it, as the store did (the same actor and time), and closes a fork where that fails.
// The store's lock is held.
func (m *Manager) redactForks(ctx context.Context, st *gitstore.Store, v gitstore.Version) ([]gitstore.ForkRedaction, error) {
	if v.RedactedAt == nil || v.RedactedBy == nil {
		return nil, fmt.Errorf("version %s is not redacted in memory store %s", v.ID, st.ID())
	}
	l, err := m.list(st.ID())
	if err != nil {
		return nil, err
	}
	in := gitstore.RedactInput{VersionID: v.ID, Actor: *v.RedactedBy, At: *v.RedactedAt}
	var done []gitstore.ForkRedaction
	for _, p := range l {
		if p.State == Approved || p.Dropped { // an approved proposal's fork is gone: its commits are main's
			continue
		}
		dir := m.data.Layout().ProposalFork(p.StoreID, p.ID)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			continue
		}
		redacted, err := m.redactFork(ctx, p, in)
		switch {
		case err != nil:
			m.data.Logger().Error("redact a version in a proposal's fork; closing the proposal", "store", p.StoreID, "proposal", p.ID, "version", v.ID, "err", err)
			if err := m.closeFork(ctx, st, p, v); err != nil {
				return done, err
			}
			done = append(done, gitstore.ForkRedaction{ID: p.ID, Closed: true})
		default:
			if afterForkRedacted != nil {
				if err := afterForkRedacted(p.ID); err != nil {
					return done, err
				}
			}
			base := p.Base
			// Its base was rewritten with the same commits as the store's: approval takes it.
			// Also when the fork was redacted before a crash that came before this update.
			if to, ok, err := st.RewrittenTo(ctx, base); err == nil && ok {
				base = to
			}
			if !redacted && base == p.Base {
				continue
			}
			note := fmt.Sprintf("Version %s was redacted from the store by %s; it is redacted in this proposal too.", v.ID, actorName(*v.RedactedBy))
			if _, err := m.update(st.ID(), p.ID, func(q *Proposal) error {
				q.Base = base
				if redacted || !slices.ContainsFunc(q.Comments, func(c Comment) bool { return c.Body == note }) {
					addComment(q, *v.RedactedBy, note)
				}
				return nil
			}); err != nil {
				return done, err
			}
			done = append(done, gitstore.ForkRedaction{ID: p.ID})
		}
	}
	return done, nil
}

// afterForkRedacted, set by tests only, runs for each fork that the redaction did not remove,
// once the version is redacted there if the fork held it, and before its proposal's record
// is updated: an error stops the redaction there, as a crash would.
var afterForkRedacted func(proposalID string) error

// redactFork redacts in.VersionID in the fork of proposal p, and reports whether it held
// the version unredacted.
func (m *Manager) redactFork(ctx context.Context, p Proposal, in gitstore.RedactInput) (bool, error) {
	f, ok := m.of(p.StoreID).forks[p.ID]
	if !ok {
		var err error
		if f, err = m.data.OpenFork(p.StoreID, m.data.Layout().ProposalFork(p.StoreID, p.ID)); err != nil {
			return false, err
		}
		defer f.CloseFork()
	}
	res, err := f.Redact(ctx, in)
	if gitstore.IsKind(err, gitstore.KindNotFound) {
		return false, nil // forked before the version was written
	}
	return err == nil && res.NewHead != "", err
}

// closeFork removes the fork of proposal p, which holds version v and could not redact it:
// an open proposal is rejected, a rejected one's changes dropped. The store's lock is held.
func (m *Manager) closeFork(ctx context.Context, st *gitstore.Store, p Proposal, v gitstore.Version) error {
	if f := m.takeFork(p.StoreID, p.ID); f != nil {
		f.CloseFork()
	}
	if err := os.RemoveAll(m.data.Layout().ProposalFork(p.StoreID, p.ID)); err != nil {
		return err
	}
	by := *v.RedactedBy
	note := fmt.Sprintf("Version %s was redacted from the store by %s and could not be redacted in this proposal: its changes were removed with it.", v.ID, actorName(by))
	if p.State == Open {
		if err := st.RecordProposal(ctx, p.ID, "rejected", p.Title, by); err != nil {
			return err
		}
		st.SetBranch(ctx, branchOf(p), "")
		note += " The proposal is rejected; propose again."
	}
	now := time.Now().UTC()
	_, err := m.update(st.ID(), p.ID, func(q *Proposal) error {
		if q.State == Open {
			a := ActorOf(by)
			q.State, q.DecidedBy, q.DecidedAt = Rejected, &a, &now
		}
		q.Dropped = true
		addComment(q, by, note)
		return nil
	})
	return err
}

// addComment adds a comment by the server on behalf of by, if the thread has room.
func addComment(p *Proposal, by gitstore.Actor, body string) {
	if len(p.Comments) < MaxComments {
		p.Comments = append(p.Comments, Comment{Author: ActorOf(by), Body: oneLine(body, MaxComment), CreatedAt: time.Now().UTC()})
	}
}

// actorName names an actor in a comment.
func actorName(a gitstore.Actor) string {
	return string(a.Type) + " " + a.ID
}
