package tooladapter

import (
	"context"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/proposals"
)

// racingOpener is a proposal's opening before which another writer changes main: what a
// concurrent writer can do between a change's trial and the opening.
type racingOpener struct {
	ProposalOpener
	first func()
}

func (r racingOpener) Open(ctx context.Context, tried string) (*gitstore.Store, error) {
	r.first()
	return r.ProposalOpener.Open(ctx, tried)
}

// TestProposalOpensWhereTheTrialRan: a proposing session's first change, an edit of a
// memory of main, passes its trial; before its proposal opens another writer deletes the
// memory. The proposal starts from the commit the trial ran on, so the edit takes on its
// fork (before, the edit met the delete: refused, and an open proposal of nothing).
func TestProposalOpensWhereTheTrialRan(t *testing.T) {
	ctx := context.Background()
	d := newTestData(t)
	st := newTestStore(t, d, "team", map[string]string{"r.txt": "Hello"})
	m := proposals.New(d)
	defer m.Close()
	proposer := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_01TESTSESSION000000000000", APIKeyID: testActor.APIKeyID}
	reads, opening, err := m.Session(st, proposer, "")
	if err != nil || opening == nil {
		t.Fatalf("session: %v %v", opening, err)
	}
	mem, err := st.GetByPath(ctx, "/r.txt", false)
	if err != nil {
		t.Fatal(err)
	}
	racing := racingOpener{ProposalOpener: opening, first: func() {
		if _, err := st.Delete(ctx, gitstore.DeleteInput{ID: mem.ID, Actor: testActor}); err != nil {
			t.Error(err)
		}
	}}
	s, err := NewSession(ctx, Options{ID: proposer.ID, Stores: []Attachment{{Store: reads, Access: Propose, Proposal: racing}}})
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, s, "memory", map[string]string{"command": "str_replace", "path": "/memories/r.txt", "old_str": "Hello", "new_str": "Hi"}); res.IsError {
		t.Fatalf("the edit: %s", res.Content)
	}
	pg, err := m.Page(st.ID(), proposals.PageOptions{})
	l := pg.Proposals
	if err != nil || len(l) != 1 {
		t.Fatalf("proposals: %+v %v", l, err)
	}
	if changes, err := m.Diff(ctx, st, l[0].ID); err != nil || len(changes) != 1 || changes[0].After == nil || *changes[0].After != "Hi" {
		t.Errorf("the proposal's changes: %+v %v", changes, err)
	}
}
