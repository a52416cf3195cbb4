package proposals

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// seedRecords writes the records of n proposals of store st in state, at the places from
// first on, each with comments comments of MaxComment bytes, as the manager writes them, and
// returns their ids. The manager has not read the store's proposals yet.
func seedRecords(t *testing.T, m *Manager, st *gitstore.Store, state State, first int64, n, comments int) []string {
	t.Helper()
	layout := m.data.Layout()
	if err := os.MkdirAll(layout.ProposalForks(st.ID()), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Hour)
	body := strings.Repeat("x", MaxComment)
	ids := make([]string, n)
	for i := range ids {
		at := start.Add(time.Duration(i) * time.Millisecond)
		p := Proposal{ID: gitstore.NewID(Prefix, at), StoreID: st.ID(), Title: fmt.Sprintf("decided %d", i), Author: ActorOf(proposer),
			State: state, Base: "9b7b4b3a5a93421e5006913b6f515a0666d22b04", CreatedAt: at, UpdatedAt: at, Comments: make([]Comment, comments)}
		if state != Open {
			p.DecidedBy, p.DecidedAt = &Actor{Type: person.Type, ID: person.ID}, &at
		}
		for j := range p.Comments {
			p.Comments[j] = Comment{Author: ActorOf(person), Body: body, CreatedAt: at}
		}
		b, err := json.MarshalIndent(onDisk{Seq: first + int64(i), Proposal: p}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recordFile(layout, st.ID(), p.ID), b, 0o600); err != nil {
			t.Fatal(err)
		}
		ids[i] = p.ID
	}
	return ids
}

// heapAfterGC is the heap in use after collections: two, so that what finalizers free once
// the first has run them is gone too.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHeldMemoryBounded measures the heap that a manager holds once it has read a store of
// heldProposals decided proposals of MaxComments comments of MaxComment bytes each, and
// reports it: the threads stay in the records, so it must stay under
// heldPerProposal a proposal, where the threads alone are about 400 KB a proposal.
func TestHeldMemoryBounded(t *testing.T) {
	const (
		heldProposals   = 100
		heldPerProposal = 2 * MaxComment // its last comment, and the rest of its record
	)
	m, st := newManager(t)
	seeded := seedRecords(t, m, st, Approved, 1, heldProposals, MaxComments)
	var onDisk int64
	for _, fi := range recordFiles(t, m.data.Layout(), st.ID()) {
		onDisk += fi.Size()
	}

	before := heapAfterGC()
	if _, err := m.Page(st.ID(), PageOptions{Limit: 1}); err != nil { // reads the store's proposals
		t.Fatal(err)
	}
	held := int64(heapAfterGC()) - int64(before)
	runtime.KeepAlive(m)
	t.Logf("%d proposals of %d comments (%d bytes of records): %d bytes held, %d a proposal",
		heldProposals, MaxComments, onDisk, held, held/heldProposals)
	if held > heldProposals*heldPerProposal {
		t.Errorf("%d bytes held for %d proposals; want at most %d", held, heldProposals, heldProposals*heldPerProposal)
	}

	// One proposal asked for is read whole.
	p, err := m.Get(st.ID(), seeded[0])
	if err != nil || len(p.Comments) != MaxComments {
		t.Fatalf("get: %d comments, %v; want %d", len(p.Comments), err, MaxComments)
	}
}

// limitFileSize makes the process's files no larger than n bytes (RLIMIT_FSIZE) until the
// test ends: a write past it fails (EFBIG; Go ignores the signal that comes with it), as a
// full disk would, even for root, for which no directory is read-only.
func limitFileSize(t *testing.T, n uint64) (restore func()) {
	t.Helper()
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
		t.Skip("no file size limit here:", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: was.Max}); err != nil {
		t.Skip("no file size limit here:", err)
	}
	done := false
	restore = func() {
		if !done {
			done = true
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &was); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	return restore
}

// checkAgree checks that what m lists of store storeID is what its records hold, and that
// each proposal it gets whole is its record.
func checkAgree(t *testing.T, m *Manager, storeID string) []Proposal {
	t.Helper()
	l, err := listAll(m, storeID, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(l), len(recordFiles(t, m.data.Layout(), storeID)); got != want {
		t.Errorf("%d proposals listed, %d records", got, want)
	}
	for _, p := range l {
		b, err := os.ReadFile(recordFile(m.data.Layout(), storeID, p.ID))
		if err != nil {
			t.Fatal(err)
		}
		var r onDisk
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if p.State != r.State || p.Dropped != r.Dropped || !r.Writing && p.UpdatedAt != r.UpdatedAt || len(p.Comments) != min(len(r.Comments), 1) {
			t.Errorf("listed %s: %s dropped %v updated %v, %d comments; its record: %s dropped %v updated %v, %d comments",
				p.ID, p.State, p.Dropped, p.UpdatedAt, len(p.Comments), r.State, r.Dropped, r.UpdatedAt, len(r.Comments))
		}
		if g, err := m.Get(storeID, p.ID); err != nil || len(g.Comments) != len(r.Comments) || g.State != r.State || g.Dropped != r.Dropped {
			t.Errorf("get %s: %s dropped %v, %d comments, %v; its record: %s dropped %v, %d comments",
				p.ID, g.State, g.Dropped, len(g.Comments), err, r.State, r.Dropped, len(r.Comments))
		}
	}
	return l
}

// TestFailedSaveAgrees: a save that fails, of one record or of the second of two, answers the
// error, and leaves what the manager holds as the disk holds it; the next change succeeds.
// The records fail to write past a file size limit: the store's oldest rejected proposal has
// a thread past it, the others none.
func TestFailedSaveAgrees(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	big := seedRecords(t, m, st, Rejected, 1, 1, MaxComments)[0]
	seeded := seedRecords(t, m, st, Rejected, 2, MaxKeptRejected-1, 0)
	p := seedRecords(t, m, st, Open, MaxKeptRejected+1, 1, 0)[0] // no fork: rejecting it writes its record only

	restore := limitFileSize(t, 256<<10) // a record of MaxComments comments is about 410 KB
	if _, err := m.AddComment(st.ID(), big, person, "One more."); err == nil {
		t.Fatal("a comment on a record past the file size limit was saved")
	}
	checkAgree(t, m, st.ID())

	// Rejecting p, the 17th rejected proposal, drops big's changes: p's record is written,
	// big's is not.
	_, err := m.Reject(ctx, st, p, person)
	if err == nil {
		t.Fatal("a rejection that drops a record past the file size limit was saved")
	}
	t.Log("refused:", err)
	l := checkAgree(t, m, st.ID())
	if l[0].ID != p || l[0].State != Rejected || l[len(l)-1].ID != big || l[len(l)-1].Dropped {
		t.Errorf("after the failed save: newest %s %s, oldest %s dropped %v; want %s rejected, %s not dropped",
			l[0].ID, l[0].State, l[len(l)-1].ID, l[len(l)-1].Dropped, p, big)
	}

	restore()
	if _, err := m.AddComment(st.ID(), seeded[0], person, "Noted."); err != nil {
		t.Fatal(err)
	}
	l = checkAgree(t, m, st.ID())
	if last := l[len(l)-1]; last.ID != big || !last.Dropped {
		t.Errorf("the oldest rejected proposal after the next save: %s dropped %v; want %s dropped", last.ID, last.Dropped, big)
	}
	if g, err := m.Get(st.ID(), big); err != nil || len(g.Comments) != MaxComments {
		t.Errorf("its thread: %d comments, %v; want %d", len(g.Comments), err, MaxComments)
	}
}
