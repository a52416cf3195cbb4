package gitstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"time"
)

// The history is the event log: every change is a version of a memory or a change of the
// store's own metadata, numbered in the order its commit reached main (the catalog's ver and
// storechg buckets share one sequence). A feed of changes reads that order after a cursor,
// which is a change's id, the one name of it that survives restarts, gc and a rebuild of the
// catalog (the numbers are the catalog's own).

// ErrCursorGone is the error of EventsAfter when the cursor's change is not in the history
// (a forced push replaced the history it was in).
var ErrCursorGone = &Error{Kind: KindNotFound, Message: "the cursor's change is not in the store's history"}

// An Event is one entry of a store's feed: a memory's version, or a change of the store.
// Exactly one of the two is set.
type Event struct {
	Version *Version
	Store   *StoreChange
}

// ID is the change's id, the cursor that a feed resumes after.
func (c Event) ID() string {
	if c.Version != nil {
		return c.Version.ID
	}
	return c.Store.ID
}

// StoreChange is a change of the store's name, description, metadata, policy or state, as
// one commit of .gitmem/store.json made it.
type StoreChange struct {
	ID        string // storechg_...
	StoreID   string
	Operation string // created, updated or archived; for a proposal, opened, approved or rejected
	// ProposalID is set for a step of a proposal's review (RecordProposal).
	ProposalID string
	CreatedBy  Actor
	CreatedAt  time.Time
	Commit     string
}

// IsCursor tells whether s has the form of a change's id.
func IsCursor(s string) bool {
	return strings.HasPrefix(s, VersionPrefix) || strings.HasPrefix(s, StoreChangePrefix)
}

// EventsAfter returns, oldest first, at most limit changes that came after the change with
// id after ("" for the first changes of the store), and whether more follow.
func (s *Store) EventsAfter(ctx context.Context, after string, limit int) ([]Event, bool, error) {
	var out []Event
	more := false
	err := s.view(ctx, func(ct catTx) error {
		from := uint64(0)
		if after != "" {
			k := ct.versionKey(after)
			if k == nil && strings.HasPrefix(after, StoreChangePrefix) {
				k = ct.storeChangeKey(after)
			}
			if k == nil {
				return ErrCursorGone
			}
			from = seqOf(k) + 1
		}
		// Merge the two walks by number; store changes are few, so read them first.
		var chs []storeChgRec
		for ch, err := range ct.storeChangesFrom(from) {
			if err != nil {
				return err
			}
			chs = append(chs, ch)
		}
		add := func(c Event) bool {
			if len(out) == limit {
				more = true
				return false
			}
			out = append(out, c)
			return true
		}
		for v, err := range ct.versionsFrom(from) {
			if err != nil {
				return err
			}
			for len(chs) > 0 && chs[0].seq < v.seq {
				if !add(Event{Store: s.storeChange(chs[0])}) {
					return nil
				}
				chs = chs[1:]
			}
			ver := versionFrom(s.id, v)
			if !add(Event{Version: &ver}) {
				return nil
			}
		}
		for _, ch := range chs {
			if !add(Event{Store: s.storeChange(ch)}) {
				return nil
			}
		}
		return nil
	})
	return out, more, err
}

func (s *Store) storeChange(ch storeChgRec) *StoreChange {
	return &StoreChange{ID: ch.ID, StoreID: s.id, Operation: ch.Op, ProposalID: ch.Prop, CreatedAt: msTime(ch.At), Commit: ch.Commit,
		CreatedBy: ch.actor()}
}

// EventBefore returns the id of the last change made before t ("" if none was), as a
// cursor from which a feed starts at t.
func (s *Store) EventBefore(ctx context.Context, t time.Time) (string, error) {
	return s.lastEvent(ctx, t.UnixMilli())
}

// LastEvent returns the id of the store's newest change ("" for none): a feed from it
// starts with what happens next.
func (s *Store) LastEvent(ctx context.Context) (string, error) {
	return s.lastEvent(ctx, math.MaxInt64)
}

// lastEvent is the id of the last change made before ms (unix milliseconds): the newest
// such version, or a store change numbered after it.
func (s *Store) lastEvent(ctx context.Context, ms int64) (string, error) {
	id, seq := "", uint64(0)
	err := s.view(ctx, func(ct catTx) error {
		for v, err := range ct.versionsDown(everyVersion) {
			if err != nil {
				return err
			}
			if v.At < ms {
				id, seq = v.ID, v.seq
				break
			}
		}
		for ch, err := range ct.storeChangesFrom(seq + 1) {
			if err != nil {
				return err
			}
			if ch.At < ms {
				id = ch.ID
			}
		}
		return nil
	})
	return id, err
}

// CursorsPrefix starts a cursor of several stores' feeds at once (EncodeCursors).
const CursorsPrefix = "evc_"

// EncodeCursors makes one cursor of several stores' feeds, a change id per store id:
// base64url JSON, so that the same cursors always make the same string. /v1/events and the
// memory_changes tool resume every store where it was with it.
func EncodeCursors(m map[string]string) string {
	raw, _ := json.Marshal(m) // sorted keys
	return CursorsPrefix + base64.RawURLEncoding.EncodeToString(raw)
}

// DecodeCursors reads a cursor of EncodeCursors; false if s is not one.
func DecodeCursors(s string) (map[string]string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, CursorsPrefix))
	if !strings.HasPrefix(s, CursorsPrefix) || err != nil {
		return nil, false
	}
	m := map[string]string{}
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	for store, cursor := range m {
		if !strings.HasPrefix(store, StorePrefix) || !IsCursor(cursor) {
			return nil, false
		}
	}
	return m, true
}
