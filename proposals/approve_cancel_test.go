package proposals

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// cancelOnCommit cancels a context at the first group committed once it is armed.
type cancelOnCommit struct {
	armed  atomic.Bool
	cancel context.CancelFunc
}

func (o *cancelOnCommit) GroupCommitted(string, int, time.Duration, time.Duration) {
	if o.armed.Load() {
		o.cancel()
	}
}
func (o *cancelOnCommit) PacksMerged(string, int, time.Duration) {}
func (o *cancelOnCommit) SecretsRefused(string, bool)            {}
func (o *cancelOnCommit) Redacted(string)                        {}

// TestApproveEndsOnceMainHoldsIt: an approval whose context ends once main holds the
// proposal (a client gone, the answer's deadline) still records it approved, whole and in
// part, rather than leaving it open over changes that main has.
func TestApproveEndsOnceMainHoldsIt(t *testing.T) {
	for _, paths := range [][]string{nil, {"/team/rules.md"}} {
		ctx, cancel := context.WithCancel(context.Background())
		obs := &cancelOnCommit{cancel: cancel}
		d, err := gitstore.Open(context.Background(), t.TempDir(), gitstore.Options{Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		st, err := d.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "team", Actor: person})
		if err != nil {
			t.Fatal(err)
		}
		m := NewWithLimits(d, DefaultLimits)
		write(t, st, "/team/rules.md", "one\n", person)
		f, p, err := m.WritesTried(context.Background(), st, proposer, "", "")
		if err != nil {
			t.Fatal(err)
		}
		write(t, f, "/team/rules.md", "two\n", proposer)
		obs.armed.Store(true)
		_, _, err = m.Approve(ctx, st, p.ID, person, ApproveOptions{Paths: paths})
		got, gerr := m.Get(st.ID(), p.ID)
		if main := content(t, st, "/team/rules.md"); main == "two\n" && (err != nil || gerr != nil || got.State != Approved) {
			t.Errorf("paths %v: main holds the proposal, which is %s: %v, %v", paths, got.State, err, gerr)
		}
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		d.Close()
	}
}
