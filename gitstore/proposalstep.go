package gitstore

import (
	"context"
	"fmt"
	"strings"
)

// RecordProposal records a step of a proposal's review in main (package proposals): a commit
// that changes no file, whose trailers name the proposal, its new state and who took the
// step. The history stays the one log of what happened to the store: the step is an event
// of the store's feed (and its webhooks), on every replica, in order with the versions.
func (s *Store) RecordProposal(ctx context.Context, id, state, title string, actor Actor) error {
	if !strings.HasPrefix(id, "prop_") || strings.ContainsAny(id, "\n\r ") || len(id) > 64 {
		return invalidf("%q is not a proposal id", id)
	}
	switch state {
	case "opened", "approved", "rejected", "superseded":
	default:
		return invalidf("%q is not a step of a proposal's review", state)
	}
	if err := validateActor(actor); err != nil {
		return err
	}
	subject := fmt.Sprintf("proposal %s %s: %s", id, state, oneLine(title, 60))
	_, err := s.submit(ctx, func(b *batch) (any, error) {
		if _, err := b.writableStore(); err != nil {
			return nil, err
		}
		t := trailers{{trailerProposal, id}, {trailerProposalState, state}}
		return nil, b.commit(b.root, subject, append(t, actorTrailers(actor)...), actor, b.now())
	})
	return err
}

// oneLine is s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
