package proposals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// listBefore is the store whose proposals testdata/list-v1.json lists: a store's proposals
// file as gitmem wrote it before records (one list, rewritten whole at each change), made by
// that version with approvals, a supersession, rejections past MaxKeptRejected (dropped), a
// pushed branch's proposal and comments.
const listBefore = "memstore_01M8MQK692HKTKP3QHD95DHH3H"

// writeListBefore writes l as the single proposals file of store storeID, as gitmem wrote it
// before records.
func writeListBefore(t *testing.T, layout gitstore.Layout, storeID string, l []Proposal) {
	t.Helper()
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(layout.ProposalsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layout.ProposalsFile(storeID), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// onDisk is a proposal's record as its file holds it: the proposal, and its place in the
// store's list.
type onDisk struct {
	Seq int64 `json:"seq"`
	Proposal
}

// propose opens a's proposal of store st with a write of content at path.
func propose(t *testing.T, m *Manager, st *gitstore.Store, a gitstore.Actor, path, content string) Proposal {
	t.Helper()
	f, p, err := m.WritesTried(context.Background(), st, a, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, path, content, a)
	return p
}

// recordFile is the file of the record of proposal id of store storeID.
func recordFile(layout gitstore.Layout, storeID, id string) string {
	return filepath.Join(layout.ProposalForks(storeID), id+".json")
}

// recordFiles returns the files of the records of store storeID's proposals, by proposal.
func recordFiles(t *testing.T, layout gitstore.Layout, storeID string) map[string]os.FileInfo {
	t.Helper()
	entries, err := os.ReadDir(layout.ProposalForks(storeID))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]os.FileInfo{}
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && strings.HasPrefix(id, Prefix) && !e.IsDir() {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			files[id] = fi
		}
	}
	return files
}

// checkRecords checks that store storeID's proposals on disk are its records only (the
// single file of before gone, no temporary file left), and that they hold newest (the store's
// proposals, newest first, as Page lists them) in its order.
func checkRecords(t *testing.T, layout gitstore.Layout, storeID string, newest []Proposal) {
	t.Helper()
	if _, err := os.Stat(layout.ProposalsFile(storeID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the single proposals file of before: %v", err)
	}
	if temps, _ := filepath.Glob(filepath.Join(layout.ProposalForks(storeID), ".tmp-*")); len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
	var recs []onDisk
	for id := range recordFiles(t, layout, storeID) {
		b, err := os.ReadFile(recordFile(layout, storeID, id))
		if err != nil {
			t.Fatal(err)
		}
		var r onDisk
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("the record of %s: %v", id, err)
		}
		if r.ID != id {
			t.Errorf("the record of %s holds %s", id, r.ID)
		}
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b onDisk) int { return int(b.Seq - a.Seq) }) // newest first
	if len(recs) != len(newest) {
		t.Fatalf("%d records, want %d", len(recs), len(newest))
	}
	for i, r := range recs {
		if !reflect.DeepEqual(r.Proposal, newest[i]) {
			t.Errorf("record %d (seq %d):\n%+v\nwant\n%+v", i, r.Seq, r.Proposal, newest[i])
		}
	}
}

// listedAll is l as Page lists it: each proposal listed, with its last comment only.
func listedAll(l []Proposal) []Proposal {
	out := make([]Proposal, len(l))
	for i, p := range l {
		out[i] = listed(p)
	}
	return out
}

// TestReadsTheListOfBefore: a data directory whose store's proposals are the single file
// that gitmem wrote before records answers every proposal as that file holds it, in its
// order: listed in Page, whole, with its comments, in Get; the file is moved into records,
// which hold the same after a comment and a restart.
func TestReadsTheListOfBefore(t *testing.T) {
	m, st := newManager(t)
	layout := m.data.Layout()
	b, err := os.ReadFile("testdata/list-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte(listBefore), []byte(st.ID()))
	var want []Proposal
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(want) // Page lists newest first
	if err := os.MkdirAll(layout.ProposalsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(layout.ProposalsFile(st.ID()), b, 0o600); err != nil {
		t.Fatal(err)
	}

	got, err := listAll(m, st.ID(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 21 || !reflect.DeepEqual(got, listedAll(want)) {
		t.Fatalf("the proposals of before:\n%+v\nwant\n%+v", got, listedAll(want))
	}
	if i := slices.IndexFunc(want, func(p Proposal) bool { return len(p.Comments) == 2 }); i < 0 || got[i].CommentCount() != 2 || len(got[i].Comments) != 1 {
		t.Errorf("a thread of two comments listed: %+v", got[max(i, 0)])
	}
	for _, p := range want {
		if g, err := m.Get(st.ID(), p.ID); err != nil || !reflect.DeepEqual(g, p) {
			t.Errorf("get %s: %+v %v", p.ID, g, err)
		}
	}
	checkRecords(t, layout, st.ID(), want)

	open := slices.IndexFunc(want, func(p Proposal) bool { return p.Title == "Billing rules" })
	p, err := m.AddComment(st.ID(), want[open].ID, person, "Looks right <to me>.")
	if err != nil {
		t.Fatal(err)
	}
	want[open] = p
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := New(m.data)
	t.Cleanup(func() { m2.Close() })
	if got, err := listAll(m2, st.ID(), Filter{}); err != nil || !reflect.DeepEqual(got, listedAll(want)) {
		t.Errorf("after a comment and a restart:\n%+v %v\nwant\n%+v", got, err, listedAll(want))
	}
	for _, p := range want {
		if g, err := m2.Get(st.ID(), p.ID); err != nil || !reflect.DeepEqual(g, p) {
			t.Errorf("get %s after a restart: %+v %v", p.ID, g, err)
		}
	}
	checkRecords(t, layout, st.ID(), want)
}

// TestUpdateWritesOneRecord: with the most decided proposals a store keeps, a comment
// rewrites the record of its proposal and no other; decisions past MaxDecided remove the
// records of the oldest decided proposals; the records hold the list throughout, and a
// restart reads it back.
func TestUpdateWritesOneRecord(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	layout := m.data.Layout()
	start := time.Now().UTC().Add(-time.Hour)
	seeded := make([]Proposal, MaxDecided)
	for i := range seeded {
		at := start.Add(time.Duration(i) * time.Millisecond)
		seeded[i] = Proposal{ID: gitstore.NewID(Prefix, at), StoreID: st.ID(), Title: fmt.Sprintf("decided %d", i), Author: ActorOf(proposer),
			State: Approved, Base: "9b7b4b3a5a93421e5006913b6f515a0666d22b04", CreatedAt: at, UpdatedAt: at, DecidedBy: &Actor{Type: person.Type, ID: person.ID},
			DecidedAt: &at, Merge: "4c85edd978e4d51ba70830fd8351c3e589be7907", Comments: []Comment{{Author: ActorOf(person), Body: "ok", CreatedAt: at}}}
	}
	writeListBefore(t, layout, st.ID(), seeded)

	a := propose(t, m, st, proposer, "/a.md", "a\n")
	b := propose(t, m, st, gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other", APIKeyID: "apikey_agent"}, "/b.md", "b\n")

	before := recordFiles(t, layout, st.ID())
	if len(before) != MaxDecided+2 {
		t.Fatalf("%d records, want %d", len(before), MaxDecided+2)
	}
	if _, err := m.AddComment(st.ID(), a.ID, person, "Why?"); err != nil {
		t.Fatal(err)
	}
	after := recordFiles(t, layout, st.ID())
	for id, fi := range before {
		if rewritten := !os.SameFile(fi, after[id]); rewritten != (id == a.ID) {
			t.Errorf("the record of %s rewritten: %v", id, rewritten)
		}
	}

	if _, err := m.Reject(ctx, st, b.ID, person); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Approve(ctx, st, a.ID, person, ApproveOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := listAll(m, st.ID(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != MaxDecided || list[0].ID != b.ID || list[1].ID != a.ID || list[MaxDecided-1].ID != seeded[2].ID {
		t.Fatalf("%d proposals, newest %s, oldest %s; want %d, %s, %s", len(list), list[0].ID, list[len(list)-1].ID, MaxDecided, b.ID, seeded[2].ID)
	}
	checkRecords(t, layout, st.ID(), list)

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := New(m.data)
	t.Cleanup(func() { m2.Close() })
	if got, err := listAll(m2, st.ID(), Filter{}); err != nil || !reflect.DeepEqual(got, list) {
		t.Errorf("after a restart: %d proposals, %v; want the %d before it", len(got), err, len(list))
	}
}

// TestMoveIntoRecordsInterrupted: a crash while the single file of before is moved into
// records leaves the file, the records of some of its proposals and a temporary file of the
// next. The data directory opened again answers every proposal as the file holds it; the
// open proposal's fork is kept, read and approved; the move is finished.
func TestMoveIntoRecordsInterrupted(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	p := propose(t, m, st, proposer, "/kept.md", "proposed\n")
	if _, err := m.AddComment(st.ID(), p.ID, person, "Why?"); err != nil {
		t.Fatal(err)
	}
	q := propose(t, m, st, gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other", APIKeyID: "apikey_agent"}, "/other.md", "other\n")
	if _, err := m.Reject(ctx, st, q.ID, person); err != nil {
		t.Fatal(err)
	}
	dir, id := m.data.Dir(), st.ID()
	if err := errors.Join(m.Close(), m.data.Close()); err != nil {
		t.Fatal(err)
	}
	layout := gitstore.Layout{Root: dir}
	d, err := gitstore.Open(ctx, dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m = New(d)
	want, err := listAll(m, id, Filter{}) // newest first
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(m.Close(), d.Close()); err != nil {
		t.Fatal(err)
	}

	// The state the crash leaves: the file, q's record written, p's not, a part of it in a
	// temporary file.
	l := slices.Clone(want)
	slices.Reverse(l)
	writeListBefore(t, layout, id, l)
	if err := os.Remove(recordFile(layout, id, p.ID)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layout.ProposalForks(id), ".tmp-"+p.ID+".json-123"), []byte(`{"seq": 2, "id": "`), 0o600); err != nil {
		t.Fatal(err)
	}

	if d, err = gitstore.Open(ctx, dir, gitstore.Options{}); err != nil {
		t.Fatal(err)
	}
	m2 := New(d)
	t.Cleanup(func() { m2.Close(); d.Close() })
	if st, err = d.Store(ctx, id); err != nil {
		t.Fatal(err)
	}
	got, err := listAll(m2, id, Filter{})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after the crash:\n%+v %v\nwant\n%+v", got, err, want)
	}
	checkRecords(t, layout, id, want)
	r, err := m2.Reads(st, proposer)
	if err != nil {
		t.Fatal(err)
	}
	if got := content(t, r, "/kept.md"); got != "proposed\n" {
		t.Errorf("the proposer reads %q", got)
	}
	if changes, err := m2.Diff(ctx, st, q.ID); err != nil || len(changes) != 1 {
		t.Errorf("the rejected proposal's changes: %+v %v", changes, err)
	}
	if _, _, err := m2.Approve(ctx, st, p.ID, person, ApproveOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := content(t, st, "/kept.md"); got != "proposed\n" {
		t.Errorf("main after the approval: %q", got)
	}
}

// TestListOfBeforeWithBytesAfterItsEnd: a proposals file of before with bytes after its
// list's closing bracket (a file cut or corrupted there) is refused with an error that names
// the file, and leaves everything as it was: the file as it was, no record written. The
// migration took such a file as whole, and moved it into records. A file refused for one of
// its proposals (checkNames) leaves no record either.
func TestListOfBeforeWithBytesAfterItsEnd(t *testing.T) {
	for _, tc := range []struct{ name, after, want string }{
		{"garbage", `garbage`, "bytes follow the end of the list"},
		{"a second list", "\n[]", "bytes follow the end of the list"},
		{"a bracket", "]", "bytes follow the end of the list"},
		{"a proposal cut", `,{"id":"prop_`, "bytes follow the end of the list"},
		{"null and more", "", "bytes follow the end of the list"}, // the file "null x"
		{"a proposal refused", "", "is not a proposal id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, st := newManager(t)
			layout := m.data.Layout()
			l := []Proposal{{ID: gitstore.NewID(Prefix, time.Now()), StoreID: st.ID(), Title: "one", State: Approved, Comments: []Comment{}},
				{ID: gitstore.NewID(Prefix, time.Now()), StoreID: st.ID(), Title: "two", State: Rejected, Comments: []Comment{}}}
			if tc.name == "a proposal refused" {
				l[1].ID = "../../keys"
			}
			writeListBefore(t, layout, st.ID(), l)
			file := layout.ProposalsFile(st.ID())
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, tc.after...)
			if tc.name == "null and more" {
				b = []byte("null x")
			}
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			for range 2 { // the file is read again at the next use, and refused again
				_, err := listAll(m, st.ID(), Filter{})
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), file) {
					t.Fatalf("the list: %v; want an error naming %s and saying %q", err, file, tc.want)
				}
			}
			if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, b) {
				t.Errorf("the file after the refusal: %v\n%q", err, got)
			}
			if entries, err := os.ReadDir(layout.ProposalForks(st.ID())); !errors.Is(err, os.ErrNotExist) && len(entries) > 0 {
				t.Errorf("the store's records after the refusal: %v %v", entries, err)
			}
		})
	}
}
