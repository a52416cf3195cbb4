// Package proposalstest writes a store's proposals straight into a data directory, as the
// records that package proposals keeps, for tests that need more of them than making each
// through a server affords: a store with pages of proposals, or at its bounds
// (proposals.MaxDecided decided proposals with full threads).
package proposalstest

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/proposals"
)

// Decided returns n approved proposals of store storeID by author, oldest first, opened a
// second apart and decided at once by a person, each passed to change (if not nil) with its
// place i (0 the oldest) to make it another's or another state.
func Decided(storeID string, n int, author gitstore.Actor, change func(i int, p *proposals.Proposal)) []proposals.Proposal {
	start := time.Now().UTC().Add(-time.Duration(n) * time.Second)
	person := proposals.Actor{Type: gitstore.UserActor, ID: "user_local"}
	l := make([]proposals.Proposal, n)
	for i := range l {
		at := start.Add(time.Duration(i) * time.Second)
		l[i] = proposals.Proposal{ID: gitstore.NewID(proposals.Prefix, at), StoreID: storeID,
			Title: fmt.Sprintf("Proposal %d", i), Author: proposals.ActorOf(author), State: proposals.Approved,
			Base: "0000000000000000000000000000000000000000", CreatedAt: at, UpdatedAt: at,
			DecidedBy: &person, DecidedAt: &at, Merge: "1111111111111111111111111111111111111111",
			Comments: []proposals.Comment{}}
		if change != nil {
			change(i, &l[i])
		}
	}
	return l
}

// Write writes l, oldest first, as the records of store storeID's proposals in the data
// directory that layout describes, which holds none of that store's yet. A manager reads a
// store's records once, at its first use of that store's proposals: write them before.
func Write(layout gitstore.Layout, storeID string, l []proposals.Proposal) error {
	if err := os.MkdirAll(layout.ProposalForks(storeID), 0o755); err != nil {
		return err
	}
	for i, p := range l {
		b, err := json.Marshal(struct {
			Seq int64 `json:"seq"` // the place in the store's list, as package proposals keeps it
			proposals.Proposal
		}{int64(i) + 1, p})
		if err != nil {
			return err
		}
		if err := os.WriteFile(layout.ProposalRecord(storeID, p.ID), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
