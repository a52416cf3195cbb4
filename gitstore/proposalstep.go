package gitstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// RecordProposal records a step of a proposal's review in main (package proposals): a commit
// that changes no file, whose trailers name the proposal, its new state and who took the
// step. The history stays the one log of what happened to the store: the step is an event
// of the store's feed (and its webhooks), on every replica, in order with the versions.
func (s *Store) RecordProposal(ctx context.Context, id, state, title string, actor Actor) error {
	_, _, err := s.recordProposal(ctx, id, state, title, actor)
	return err
}

// RecordOpened records the opening of proposal id in main (RecordProposal's step
// "opened"), and returns main's commit before the step and the step's: a fork made at the
// commit before can take the step (ForkThen), so that its approval fast-forwards.
func (s *Store) RecordOpened(ctx context.Context, id, title string, actor Actor) (before, step string, err error) {
	b, st, err := s.recordProposal(ctx, id, "opened", title, actor)
	if err != nil {
		return "", "", err
	}
	return b.String(), st.String(), nil
}

// recordProposal is RecordProposal; it returns main's commit before the step, and the step.
func (s *Store) recordProposal(ctx context.Context, id, state, title string, actor Actor) (before, step plumbing.Hash, err error) {
	if !strings.HasPrefix(id, "prop_") || strings.ContainsAny(id, "\n\r ") || len(id) > 64 {
		return before, step, invalidf("%q is not a proposal id", id)
	}
	switch state {
	case "opened", "approved", "rejected", "superseded":
	default:
		return before, step, invalidf("%q is not a step of a proposal's review", state)
	}
	if err := validateActor(actor); err != nil {
		return before, step, err
	}
	subject := fmt.Sprintf("proposal %s %s: %s", id, state, oneLine(title, 60))
	heads, err := submitAs(ctx, s, func(b *batch) ([2]plumbing.Hash, error) {
		if _, err := b.writableStore(); err != nil {
			return [2]plumbing.Hash{}, err
		}
		before := b.head
		t := trailers{{trailerProposal, id}, {trailerProposalState, state}}
		err := b.commit(b.root, subject, append(t, actorTrailers(actor)...), actor, b.now())
		return [2]plumbing.Hash{before, b.head}, err
	})
	return heads[0], heads[1], err
}

// oneLine is s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
