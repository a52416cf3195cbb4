package proposals

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

var (
	person   = gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_person"}
	proposer = gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_agent", APIKeyID: "apikey_agent"}
)

// listAll returns the store's proposals that f selects, newest first, as the pages of Page
// hold them, each listed: what the server lists, followed to the last page.
func listAll(m *Manager, storeID string, f Filter) ([]Proposal, error) {
	var all []Proposal
	opts := PageOptions{Filter: f, Limit: MaxPageSize}
	for {
		pg, err := m.Page(storeID, opts)
		if err != nil {
			return nil, err
		}
		all = append(all, pg.Proposals...)
		if pg.NextCursor == "" {
			return all, nil
		}
		opts.Cursor = pg.NextCursor
	}
}

func newManager(t *testing.T) (*Manager, *gitstore.Store) {
	t.Helper()
	return newManagerWith(t, DefaultLimits)
}

// newManagerWith is newManager with the limits l.
func newManagerWith(t *testing.T, l Limits) (*Manager, *gitstore.Store) {
	t.Helper()
	ctx := context.Background()
	d, err := gitstore.Open(ctx, t.TempDir(), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.CreateStore(ctx, gitstore.CreateStoreInput{Name: "team", Actor: person})
	if err != nil {
		t.Fatal(err)
	}
	m := NewWithLimits(d, l)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		d.Close()
	})
	return m, st
}

func write(t *testing.T, st *gitstore.Store, path, content string, a gitstore.Actor) gitstore.WriteResult {
	t.Helper()
	res, err := st.Write(context.Background(), gitstore.WriteInput{Path: path, Content: content, Actor: a})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func content(t *testing.T, r gitstore.MemoryReader, path string) string {
	t.Helper()
	m, err := r.GetByPath(context.Background(), path, true)
	if gitstore.IsKind(err, gitstore.KindNotFound) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return *m.Content
}

// TestProposeApprove: a proposer's writes stay out of main, the proposer reads them, and
// approval makes them main's versions with the same ids and actors.
func TestProposeApprove(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	write(t, st, "/team/rules.md", "Review every change.\n", person)

	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	res := write(t, f, "/team/rules.md", "Review every change.\nShip on Fridays.\n", proposer)
	made := write(t, f, "/team/new.md", "new\n", proposer)
	if got := content(t, st, "/team/rules.md"); got != "Review every change.\n" {
		t.Errorf("main changed before approval: %q", got)
	}
	r, err := m.Reads(st, proposer)
	if err != nil {
		t.Fatal(err)
	}
	if got := content(t, r, "/team/new.md"); got != "new\n" {
		t.Errorf("the proposer reads %q", got)
	}
	if r2, _ := m.Reads(st, person); r2 != st {
		t.Errorf("someone else reads the proposal")
	}
	if again, p2, _ := m.WritesTried(ctx, st, proposer, "", ""); again != f || p2.ID != p.ID {
		t.Errorf("a second write opened another proposal")
	}
	changes, err := m.Diff(ctx, st, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Path != "/team/new.md" || changes[0].Operation != "created" || changes[1].Operation != "modified" ||
		changes[1].Diff == "" {
		t.Errorf("diff: %+v", changes)
	}

	p, merge, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.State != Approved || p.DecidedBy.ID != person.ID || merge.After != st.Head() {
		t.Errorf("approved: %+v, %+v", p, merge)
	}
	for _, want := range []gitstore.WriteResult{res, made} {
		v, err := st.Version(ctx, want.Version.ID, false)
		if err != nil || v.CreatedBy.ID != proposer.ID || v.MemoryID != want.Memory.ID {
			t.Errorf("version %s in main: %+v %v", want.Version.ID, v, err)
		}
		if v.ApprovedBy == nil || v.ApprovedBy.ID != person.ID {
			t.Errorf("version %s approved by %+v, want %s", want.Version.ID, v.ApprovedBy, person.ID)
		}
	}
	if got := content(t, st, "/team/rules.md"); got != "Review every change.\nShip on Fridays.\n" {
		t.Errorf("main after approval: %q", got)
	}
	if _, _, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{}); !gitstore.IsKind(err, gitstore.KindConflict) {
		t.Errorf("approve twice: %v", err)
	}
	// The next write opens a new proposal.
	if _, p2, err := m.WritesTried(ctx, st, proposer, "", ""); err != nil || p2.ID == p.ID {
		t.Errorf("write after approval: %+v %v", p2, err)
	}
}

// TestApproveAfterMainMoved: a clean merge, and a conflict refused with nothing written,
// then approved with allow_conflicts.
func TestApproveAfterMainMoved(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	write(t, st, "/a.md", "one\n", person)
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/b.md", "from the proposal\n", proposer)
	write(t, st, "/c.md", "meanwhile\n", person)
	if _, _, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/a.md": "one\n", "/b.md": "from the proposal\n", "/c.md": "meanwhile\n"} {
		if got := content(t, st, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}

	f, p, err = m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/a.md", "the proposal's\n", proposer)
	write(t, st, "/a.md", "main's\n", person)
	head := st.Head()
	_, _, err = m.Approve(ctx, st, p.ID, person, ApproveOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Path != "/a.md" || !gitstore.IsKind(err, gitstore.KindConflict) {
		t.Fatalf("approve a conflict: %v", err)
	}
	if st.Head() != head {
		t.Errorf("a refused approval moved main")
	}
	if got, _ := m.Get(st.ID(), p.ID); got.State != Open {
		t.Errorf("after a refused approval the proposal is %s", got.State)
	}
	// The proposer can still write to it (its fork reopens).
	f, _, err = m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/d.md", "more\n", proposer)
	if _, res, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{AllowConflicts: true}); err != nil || len(res.Conflicts) != 1 {
		t.Fatalf("approve with conflicts: %+v %v", res, err)
	}
	if got := content(t, st, "/d.md"); got != "more\n" {
		t.Errorf("/d.md = %q", got)
	}
}

// TestReject: a rejected proposal changes nothing, keeps its diff and its thread.
func TestReject(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/x.md", "x\n", proposer)
	if _, err := m.AddComment(st.ID(), p.ID, person, "Not this one."); err != nil {
		t.Fatal(err)
	}
	p, err = m.Reject(ctx, st, p.ID, person)
	if err != nil || p.State != Rejected || len(p.Comments) != 1 {
		t.Fatalf("reject: %+v %v", p, err)
	}
	if content(t, st, "/x.md") != "<none>" {
		t.Errorf("a rejection changed main's memories")
	}
	if changes, err := m.Diff(ctx, st, p.ID); err != nil || len(changes) != 1 {
		t.Errorf("diff of a rejected proposal: %+v %v", changes, err)
	}
	if list, _ := listAll(m, st.ID(), Filter{State: Open}); len(list) != 0 {
		t.Errorf("open proposals after the rejection: %+v", list)
	}
	if _, err := m.AddComment(st.ID(), p.ID, person, " "); !gitstore.IsKind(err, gitstore.KindInvalid) {
		t.Errorf("an empty comment: %v", err)
	}
}

// TestRejectFullThread: a thread of MaxComments comments takes no more, on its own or with a
// rejection: the rejection with a comment is refused before anything is rejected, and the
// proposal stays open with its thread as it was; a rejection without a comment goes on.
func TestRejectFullThread(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	p := propose(t, m, st, proposer, "/x.md", "x\n")
	for i := range MaxComments {
		if _, err := m.AddComment(st.ID(), p.ID, person, fmt.Sprintf("comment %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	full := fmt.Sprintf("has %d comments, the most it may have", MaxComments)
	if _, err := m.AddComment(st.ID(), p.ID, person, "one more"); !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), full) {
		t.Errorf("a comment past the bound: %v", err)
	}
	if _, err := m.RejectWithComment(ctx, st, p.ID, person, "No."); !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), full) {
		t.Errorf("a rejection with a comment past the bound: %v", err)
	}
	if got, err := m.Get(st.ID(), p.ID); err != nil || got.State != Open || len(got.Comments) != MaxComments {
		t.Fatalf("after the refusals: %s with %d comments, %v; want open with %d", got.State, len(got.Comments), err, MaxComments)
	}
	if _, _, ok, err := m.Opened(st, proposer); !ok || err != nil {
		t.Errorf("the proposal's fork after the refusals: %v %v", ok, err)
	}
	if got, err := m.Reject(ctx, st, p.ID, person); err != nil || got.State != Rejected || len(got.Comments) != MaxComments {
		t.Errorf("a rejection without a comment: %s with %d comments, %v", got.State, len(got.Comments), err)
	}
}

// TestApproveThousand: a proposal of 1,000 changed memories is approved in one step.
func TestApproveThousand(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		write(t, f, fmt.Sprintf("/m/%04d.md", i), fmt.Sprintf("memory %d\n", i), proposer)
	}
	write(t, st, "/main.md", "main moved\n", person)
	if _, _, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := st.Usage(ctx)
	if err != nil || u.Memories != 1001 {
		t.Errorf("main holds %+v after the approval, %v; want 1,001 memories", u, err)
	}
	page, err := st.Versions(ctx, gitstore.VersionFilter{SessionID: proposer.ID, Limit: 1000})
	if err != nil || len(page.Versions) != 1000 {
		t.Errorf("%d versions by the proposer in main, %v", len(page.Versions), err)
	}
}

// TestDeleteStore: a store's proposals go with it.
func TestDeleteStore(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	f, _, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/x.md", "x\n", proposer)
	m.Forget(st.ID())
	if err := m.data.DeleteStore(ctx, st.ID()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{m.data.Layout().ProposalsFile(st.ID()), m.data.Layout().ProposalForks(st.ID())} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the store's deletion: %v", p, err)
		}
	}
	if list, err := listAll(m, st.ID(), Filter{}); err != nil || len(list) != 0 {
		t.Errorf("proposals of the deleted store: %+v %v", list, err)
	}
}

// TestApproveSome: approving some of a proposal's memories writes those, as versions by the
// proposer, and drops the rest; a path that main changed meanwhile is a conflict; a memory
// that the proposal created keeps its id.
func TestApproveSome(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	write(t, st, "/keep.md", "main\n", person)
	write(t, st, "/gone.md", "old\n", person)
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	created := write(t, f, "/a.md", "a\n", proposer).Memory.ID
	write(t, f, "/b.md", "b\n", proposer)
	write(t, f, "/keep.md", "proposed\n", proposer)
	if _, err := f.Delete(ctx, gitstore.DeleteInput{Path: "/gone.md", Actor: proposer}); err != nil {
		t.Fatal(err)
	}
	write(t, st, "/keep.md", "main moved\n", person)

	_, _, err = m.Approve(ctx, st, p.ID, person, ApproveOptions{Paths: []string{"/a.md", "/keep.md"}})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Path != "/keep.md" {
		t.Fatalf("approve some with a conflict: %v", err)
	}
	if _, _, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{Paths: []string{"/nope.md"}}); !gitstore.IsKind(err, gitstore.KindInvalid) {
		t.Errorf("a path the proposal does not change: %v", err)
	}
	p, _, err = m.Approve(ctx, st, p.ID, person, ApproveOptions{Paths: []string{"/a.md", "/gone.md"}})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/a.md": "a\n", "/b.md": "<none>", "/keep.md": "main moved\n", "/gone.md": "<none>"} {
		if got := content(t, st, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if a, err := st.GetByPath(ctx, "/a.md", false); err != nil || a.ID != created {
		t.Errorf("/a.md in main is %s (%v); the proposal created it as %s", a.ID, err, created)
	}
	page, err := st.Versions(ctx, gitstore.VersionFilter{SessionID: proposer.ID})
	if err != nil || len(page.Versions) != 2 {
		t.Errorf("versions by the proposer in main: %+v %v", page.Versions, err)
	}
	for _, v := range page.Versions {
		if v.ApprovedBy == nil || v.ApprovedBy.ID != person.ID {
			t.Errorf("%s %s approved by %+v", v.Operation, v.Path, v.ApprovedBy)
		}
	}
	if p.State != Approved || len(p.Comments) != 1 || !strings.Contains(p.Comments[0].Body, "Approved 2 of its 4 changes") {
		t.Errorf("the proposal after: %+v", p)
	}
}

// TestApproveChecksTheStoreNow: an approval is held to the store as it is when it is
// approved, not as it was when the proposal opened: its secrets policy and quota, an
// archived store, a history that a redaction rewrote.
func TestApproveChecksTheStoreNow(t *testing.T) {
	ctx := context.Background()
	secret := secrettest.Samples()[0]
	for name, tc := range map[string]struct {
		setup func(t *testing.T, m *Manager, st *gitstore.Store)
		want  string
	}{
		"secrets": {func(t *testing.T, m *Manager, st *gitstore.Store) {
			reject := gitstore.SecretsReject
			if _, err := st.UpdateInfo(ctx, gitstore.StorePatch{Policy: &gitstore.PolicyPatch{Secrets: &reject}, Actor: person}); err != nil {
				t.Fatal(err)
			}
		}, "secrets policy"},
		"quota": {func(t *testing.T, m *Manager, st *gitstore.Store) {
			one := 1
			if _, err := st.UpdateInfo(ctx, gitstore.StorePatch{Policy: &gitstore.PolicyPatch{MaxMemories: &one}, Actor: person}); err != nil {
				t.Fatal(err)
			}
		}, "past its quota"},
		"archived": {func(t *testing.T, m *Manager, st *gitstore.Store) {
			if _, err := st.Archive(ctx, person); err != nil {
				t.Fatal(err)
			}
		}, "is archived"},
		"redacted": {func(t *testing.T, m *Manager, st *gitstore.Store) {
			page, err := st.Versions(ctx, gitstore.VersionFilter{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			var v gitstore.Version
			for _, x := range page.Versions {
				if x.Path == "/pw.md" && x.Operation == gitstore.OpCreated {
					v = x
				}
			}
			// A redaction that did not reach the fork (made without the proposals' wrapper,
			// which redacts the forks too: TestRedactReachesForks): the approval would bring
			// the content back.
			m.data.WrapRedact(nil)
			if _, err := st.Redact(ctx, gitstore.RedactInput{VersionID: v.ID, Actor: person}); err != nil {
				t.Fatal(err)
			}
		}, "history was rewritten"},
	} {
		t.Run(name, func(t *testing.T) {
			m, st := newManager(t)
			off := gitstore.SecretsOff
			if _, err := st.UpdateInfo(ctx, gitstore.StorePatch{Policy: &gitstore.PolicyPatch{Secrets: &off}, Actor: person}); err != nil {
				t.Fatal(err)
			}
			if name == "redacted" { // in the proposal's base, redacted after it opened
				write(t, st, "/pw.md", "hunter2\n", person)
				write(t, st, "/pw.md", "changed\n", person)
			}
			f, p, err := m.WritesTried(ctx, st, proposer, "", "")
			if err != nil {
				t.Fatal(err)
			}
			write(t, f, "/a.md", "key "+secret.Content+"\n", proposer)
			write(t, f, "/b.md", "b\n", proposer)
			tc.setup(t, m, st)
			head := st.Head()
			if _, _, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{AllowConflicts: true}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("approve: %v, want an error saying %q", err, tc.want)
			}
			if st.Head() != head || content(t, st, "/a.md") != "<none>" {
				t.Errorf("a refused approval changed main")
			}
		})
	}
}

// TestOpenProposalsBounded: a store holds at most DefaultLimits.Open open proposals; each is a copy.
// Each is of a key of its own here, as one key has at most DefaultLimits.OpenPerKey.
func TestOpenProposalsBounded(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	for i := range DefaultLimits.Open {
		a := gitstore.Actor{Type: gitstore.SessionActor, ID: fmt.Sprintf("sesn_%d", i), APIKeyID: fmt.Sprintf("apikey_%d", i)}
		if _, _, err := m.WritesTried(ctx, st, a, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := m.WritesTried(ctx, st, proposer, "", "")
	if !gitstore.IsKind(err, gitstore.KindConflict) || !strings.Contains(err.Error(), "open proposals") {
		t.Errorf("one past the bound: %v", err)
	}
}

// TestOrphanForksRemoved: fork directories that no proposal names (a crash between making a
// fork and saving its proposal, a fork half made) are removed at the first use of the store's
// proposals; the proposals' own forks stay.
func TestOrphanForksRemoved(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/kept.md", "proposed\n", proposer)
	layout := m.data.Layout()
	orphans := []string{layout.ProposalFork(st.ID(), "prop_01M8K80M4QWTX1WCH80FP39D8X"), layout.ProposalFork(st.ID(), p.ID+".tmp")}
	for _, dir := range orphans {
		if err := os.MkdirAll(filepath.Join(dir, "repo.git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := New(m.data)
	t.Cleanup(func() { m2.Close() })
	if _, err := listAll(m2, st.ID(), Filter{}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range orphans {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s after the proposals were used: %v", filepath.Base(dir), err)
		}
	}
	r, err := m2.Reads(st, proposer)
	if err != nil {
		t.Fatal(err)
	}
	if got := content(t, r, "/kept.md"); got != "proposed\n" {
		t.Errorf("the proposal's own fork: %q", got)
	}
}

// TestOpenProposalsLimits: the limits given to NewWithLimits bound the open proposals, of a
// key and of the store, in place of the defaults; a decided proposal makes room again.
func TestOpenProposalsLimits(t *testing.T) {
	ctx := context.Background()
	m, st := newManagerWith(t, Limits{Open: 3, OpenPerKey: 2})
	session := func(key string, i int) gitstore.Actor {
		return gitstore.Actor{Type: gitstore.SessionActor, ID: fmt.Sprintf("sesn_%s_%d", key, i), APIKeyID: key}
	}
	for i := range 2 {
		if _, _, err := m.WritesTried(ctx, st, session("apikey_a", i), "", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := m.WritesTried(ctx, st, session("apikey_a", 2), "", ""); !gitstore.IsKind(err, gitstore.KindConflict) ||
		!strings.Contains(err.Error(), "key apikey_a has 2 open proposals") || !strings.Contains(err.Error(), "--max-open-proposals-per-key") {
		t.Errorf("a key's third: %v", err)
	}
	if _, _, err := m.WritesTried(ctx, st, session("apikey_b", 0), "", ""); err != nil {
		t.Fatalf("another key's first, the store's third: %v", err)
	}
	if _, _, err := m.WritesTried(ctx, st, session("apikey_c", 0), "", ""); !gitstore.IsKind(err, gitstore.KindConflict) ||
		!strings.Contains(err.Error(), "has 3 open proposals; 3 is the most it may have") || !strings.Contains(err.Error(), "--max-open-proposals)") {
		t.Errorf("the store's fourth: %v", err)
	}
	l, err := listAll(m, st.ID(), Filter{})
	if err != nil || len(l) != 3 {
		t.Fatalf("%d proposals, %v", len(l), err)
	}
	if _, err := m.Reject(ctx, st, l[0].ID, person); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.WritesTried(ctx, st, session("apikey_c", 0), "", ""); err != nil {
		t.Errorf("once one was rejected: %v", err)
	}
}

// TestOpenProposalsPerKey: one key's sessions (a session id is the client's to choose) open
// at most DefaultLimits.OpenPerKey proposals of a store, so that other keys can still propose; the
// refusal says what to do, and the key's open sessions go on writing. A fork holds few
// descriptors: its repository keeps no files ready for its writer.
func TestOpenProposalsPerKey(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	before := openFiles(t)
	session := func(key string, i int) gitstore.Actor {
		return gitstore.Actor{Type: gitstore.SessionActor, ID: fmt.Sprintf("sesn_%s_%d", key, i), APIKeyID: key}
	}
	for i := range DefaultLimits.OpenPerKey {
		f, _, err := m.WritesTried(ctx, st, session("apikey_greedy", i), "", "")
		if err != nil {
			t.Fatal(err)
		}
		write(t, f, fmt.Sprintf("/s%d.md", i), "proposed\n", session("apikey_greedy", i))
	}
	// Per fork, at most a few descriptors (its catalog, journals, packs); it held 55 when
	// each kept 48 files ready. The files are made in the background: watched for a while.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if per := (openFiles(t) - before) / DefaultLimits.OpenPerKey; per > 24 {
			t.Fatalf("%d descriptors per open fork, want at most 24", per)
		}
	}
	_, _, err := m.WritesTried(ctx, st, session("apikey_greedy", DefaultLimits.OpenPerKey), "", "")
	if !gitstore.IsKind(err, gitstore.KindConflict) || !strings.Contains(err.Error(), "key apikey_greedy has 8 open proposals") ||
		!strings.Contains(err.Error(), "approve or reject") || !strings.Contains(err.Error(), "x-gitmem-session-id") {
		t.Errorf("one past the key's bound: %v", err)
	}
	// Its open sessions still write; another key still proposes.
	f, _, err := m.WritesTried(ctx, st, session("apikey_greedy", 0), "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/s0.md", "again\n", session("apikey_greedy", 0))
	if _, _, err := m.WritesTried(ctx, st, proposer, "", ""); err != nil {
		t.Errorf("another key, once one key has its bound: %v", err)
	}
}

// openFiles is how many descriptors the process has open.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(fds)
}

// TestSuperseded: once an approval makes main hold everything another open proposal
// proposes, that one is superseded; one with changes left, or none yet, stays open.
func TestSuperseded(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	other := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other", APIKeyID: "apikey_agent"}
	idle := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_idle", APIKeyID: "apikey_agent"}
	third := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_third", APIKeyID: "apikey_agent"}
	f1, p1, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f1, "/same.md", "same\n", proposer)
	f2, p2, err := m.WritesTried(ctx, st, other, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f2, "/same.md", "same\n", other)
	_, p3, err := m.WritesTried(ctx, st, idle, "", "")
	if err != nil {
		t.Fatal(err)
	}
	f4, p4, err := m.WritesTried(ctx, st, third, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f4, "/same.md", "same\n", third)
	write(t, f4, "/more.md", "more\n", third)
	if _, _, err := m.Approve(ctx, st, p1.ID, person, ApproveOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		id    string
		state State
	}{{p2.ID, Superseded}, {p3.ID, Open}, {p4.ID, Open}} {
		if got, _ := m.Get(st.ID(), want.id); got.State != want.state {
			t.Errorf("%s is %s, want %s", want.id, got.State, want.state)
		}
	}
	if list, _ := listAll(m, st.ID(), Filter{State: Superseded}); len(list) != 1 || len(list[0].Comments) != 1 {
		t.Errorf("superseded: %+v", list)
	}
}

// TestFromBranchOtherAuthor: a push by another author to a proposal branch opens a proposal
// of its own and leaves the first author's as it was.
func TestFromBranchOtherAuthor(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	write(t, st, "/a.md", "a\n", person)
	const ref = "refs/heads/proposals/shared"
	if err := st.SetBranch(ctx, ref, st.Head()); err != nil {
		t.Fatal(err)
	}
	mine, err := m.FromBranch(ctx, st, ref, proposer, "mine")
	if err != nil {
		t.Fatal(err)
	}
	intruder := gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_intruder"}
	theirs, err := m.FromBranch(ctx, st, ref, intruder, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	if theirs.ID == mine.ID {
		t.Fatal("another author's push updated the first author's proposal")
	}
	again, err := m.FromBranch(ctx, st, ref, proposer, "mine")
	if err != nil || again.ID != mine.ID {
		t.Errorf("the first author's next push: %+v %v, want %s", again, err, mine.ID)
	}
}

// TestCloseRecordsLastWrite: closing the manager saves in each open proposal's UpdatedAt the
// last write to its fork (the versions' clock runs an hour ahead, so that the write is
// later), so that the next manager answers it without opening the fork.
func TestCloseRecordsLastWrite(t *testing.T) {
	ctx := context.Background()
	d, st := storeAhead(t)
	m := New(d)
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	last := write(t, f, "/a.md", "a", proposer).Version.CreatedAt
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	next := New(d)
	defer next.Close()
	got, err := next.Get(st.ID(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Writing || got.UpdatedAt.Before(last) || len(next.of(st.ID()).forks) != 0 {
		t.Errorf("after Close: updated_at %s, writing %v, %d forks opened; the last write was at %s", got.UpdatedAt, got.Writing, len(next.of(st.ID()).forks), last)
	}
}

// TestNoForkAfterClose: an operation that reaches the manager after Close, as a request
// that outlived the server's shutdown may, opens neither a fork, which nothing would
// close, nor a proposal.
func TestNoForkAfterClose(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	_, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	other := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other", APIKeyID: "apikey_other"}
	if _, _, err := m.WritesTried(ctx, st, other, "", ""); !errors.Is(err, gitstore.ErrStoreClosed) {
		t.Errorf("a new proposal after Close: %v; want %v", err, gitstore.ErrStoreClosed)
	}
	if _, _, _, err := m.Opened(st, proposer); !errors.Is(err, gitstore.ErrStoreClosed) {
		t.Errorf("the open proposal's fork after Close: %v; want %v", err, gitstore.ErrStoreClosed)
	}
	if n := len(m.of(st.ID()).forks); n != 0 {
		t.Errorf("%d forks open after Close", n)
	}
	next := New(m.data) // the closed manager lists nothing either (TestNothingAfterClose)
	defer next.Close()
	l, err := listAll(next, st.ID(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 || l[0].ID != p.ID {
		t.Errorf("proposals after Close: %+v; want only %s", l, p.ID)
	}
}

// TestNothingAfterClose: every operation that reaches a store's proposals after the
// manager's Close, reads included, is refused with gitstore.ErrStoreClosed (retryable) and
// opens nothing: no fork, no proposal, no change of a record or of main. A pushed branch's
// proposal opened after Close (a fork made, which nothing would redact), and a rejected
// proposal's diff opened its fork.
func TestNothingAfterClose(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	open := propose(t, m, st, proposer, "/a.md", "a")
	other := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other", APIKeyID: "apikey_other"}
	rejected := propose(t, m, st, other, "/b.md", "b")
	if _, err := m.Reject(ctx, st, rejected.ID, person); err != nil {
		t.Fatal(err)
	}
	const ref = "refs/heads/proposals/vat"
	if err := st.SetBranch(ctx, ref, st.Head()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	head, files := st.Head(), tree(t, m.data.Layout().ProposalsDir())

	closed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, gitstore.ErrStoreClosed) || !gitstore.IsKind(err, gitstore.KindUnavailable) {
			t.Errorf("%s after Close: %v; want %v", what, err, gitstore.ErrStoreClosed)
		}
	}
	_, err := m.FromBranch(ctx, st, ref, proposer, "VAT")
	closed("a pushed branch's proposal", err)
	_, err = m.Diff(ctx, st, rejected.ID)
	closed("a rejected proposal's diff", err)
	_, err = m.Diff(ctx, st, open.ID)
	closed("an open proposal's diff", err)
	_, _, err = m.Approve(ctx, st, open.ID, person, ApproveOptions{})
	closed("an approval", err)
	_, _, err = m.Approve(ctx, st, open.ID, person, ApproveOptions{Paths: []string{"/a.md"}})
	closed("an approval of some", err)
	_, err = m.Reject(ctx, st, open.ID, person)
	closed("a rejection", err)
	_, err = m.RejectWithComment(ctx, st, open.ID, person, "No.")
	closed("a rejection with a comment", err)
	_, err = m.AddComment(st.ID(), open.ID, person, "Why?")
	closed("a comment", err)
	_, err = m.SetTitle(st.ID(), open.ID, "VAT")
	closed("a title", err)
	_, err = m.Get(st.ID(), open.ID)
	closed("a proposal's read", err)
	_, err = m.Listed(st.ID(), open.ID)
	closed("a proposal's read as listed", err)
	_, err = m.Page(st.ID(), PageOptions{})
	closed("the list", err)
	_, _, err = m.Branches(st.ID(), "")
	closed("the branches", err)
	closed("the room for a proposal", m.Room(st.ID(), other))
	closed("the room for a push", m.RoomForBranches(st.ID(), proposer, []string{ref}))
	_, _, err = m.WritesTried(ctx, st, other, "", "")
	closed("a new proposal", err)
	_, _, _, err = m.Opened(st, proposer)
	closed("the open proposal's fork", err)
	if m.IsOpen(st.ID(), open.ID) {
		t.Error("a proposal is open after Close")
	}
	if n := len(m.of(st.ID()).forks); n != 0 {
		t.Errorf("%d forks open after Close", n)
	}
	got := tree(t, m.data.Layout().ProposalsDir())
	for path := range got {
		if got[path] != files[path] {
			t.Errorf("%s was made or changed after Close", path)
		}
	}
	if st.Head() != head {
		t.Error("main moved after Close")
	}
}

// tree is each file under dir with its size and time of change.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		files[path] = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// twoStores is newManager with a second store, b.
func twoStores(t *testing.T) (m *Manager, a, b *gitstore.Store) {
	t.Helper()
	m, a = newManager(t)
	b, err := m.data.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "other", Actor: person})
	if err != nil {
		t.Fatal(err)
	}
	return m, a, b
}

// TestStoresApart: the proposals of one store do not wait for another store's, whose lock
// an operation may hold for long (an approval's merge); those of the same store do.
func TestStoresApart(t *testing.T) {
	ctx := context.Background()
	m, a, b := twoStores(t)
	opens := func(st *gitstore.Store) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, _, err := m.WritesTried(ctx, st, proposer, "", "")
			done <- err
		}()
		return done
	}
	// Released at the end, or by the cleanup (run before newManager's Close) if the test
	// stops first: else Close would wait for it, and the test would hang instead of failing.
	release, err := m.lock(a.ID())
	if err != nil {
		t.Fatal(err)
	}
	unlock := sync.OnceFunc(release)
	t.Cleanup(unlock)
	select {
	case err := <-opens(b):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a proposal of another store waited for this store's lock")
	}
	same := opens(a)
	select {
	case err := <-same:
		t.Fatalf("a proposal of the store opened while its lock was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	if err := <-same; err != nil {
		t.Fatal(err)
	}
}

// storeAhead is a data directory whose versions' clock runs an hour ahead, and a store of it.
func storeAhead(t *testing.T) (*gitstore.DataDir, *gitstore.Store) {
	t.Helper()
	d, err := gitstore.Open(context.Background(), t.TempDir(), gitstore.Options{Clock: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	st, err := d.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "team", Actor: person})
	if err != nil {
		t.Fatal(err)
	}
	return d, st
}

// TestLastWriteOfNoWrite: a proposal whose fork holds no write of its own (its opening write
// failed there) answers the time it opened as its update, not the date of main's newest
// version, which a clock or a pushed commit may put ahead.
func TestLastWriteOfNoWrite(t *testing.T) {
	ctx := context.Background()
	d, st := storeAhead(t)
	ahead := write(t, st, "/a.md", "a", person).Version.CreatedAt
	m := New(d)
	_, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Get(st.ID(), p.ID)
	if err != nil || !got.UpdatedAt.Equal(p.UpdatedAt) {
		t.Errorf("a proposal of no write: updated_at %s, %v; want %s, when it opened (main's newest version is dated %s)", got.UpdatedAt, err, p.UpdatedAt, ahead)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	next := New(d)
	defer next.Close()
	if got, err = next.Get(st.ID(), p.ID); err != nil || !got.UpdatedAt.Equal(p.UpdatedAt) {
		t.Errorf("after Close: updated_at %s, %v; want %s", got.UpdatedAt, err, p.UpdatedAt)
	}
}

// TestOpensWhereTheTrialRan: an update of a memory tried on main, then a change to main by
// another writer (the memory deleted), then the opening of the proposal: the proposal starts
// from the commit the trial ran on, so the update passes on its fork as it passed the trial
// (before, it met the delete and failed, leaving an open proposal of nothing), and the
// approval merges it with the delete (the change is kept). Without a change in between, the
// proposal starts from its "opened" step, and the approval fast-forwards.
func TestOpensWhereTheTrialRan(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	mem := write(t, st, "/m.md", "v1", person).Memory
	v2 := "v2"
	edit := func(ctx context.Context, s *gitstore.Store) error { // as PATCH .../memories/{id} does
		_, err := s.UpdateMemory(ctx, gitstore.UpdateInput{ID: mem.ID, Content: &v2, Actor: proposer})
		return err
	}
	var tried gitstore.TrialResult
	if err := edit(gitstore.Trial(ctx, &tried), st); err != nil || !tried.Changes || tried.Head != st.Head() {
		t.Fatalf("the trial: %v, %+v; main at %s", err, tried, st.Head())
	}
	if _, err := st.Delete(ctx, gitstore.DeleteInput{ID: mem.ID, Actor: person}); err != nil {
		t.Fatal(err)
	}
	f, p, err := m.WritesTried(ctx, st, proposer, "", tried.Head)
	if err != nil {
		t.Fatal(err)
	}
	if err := edit(ctx, f); err != nil {
		t.Fatalf("the write on the proposal's fork: %v", err)
	}
	if p.Base != tried.Head {
		t.Errorf("the proposal starts from %s; the trial ran on %s", p.Base, tried.Head)
	}
	if changes, err := m.Diff(ctx, st, p.ID); err != nil || len(changes) != 1 || changes[0].Path != "/m.md" {
		t.Errorf("the proposal's changes: %+v %v", changes, err)
	}
	if _, res, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{}); err != nil || res.Outcome != gitstore.Merged || content(t, st, "/m.md") != "v2" {
		t.Errorf("approval: %+v %v; main holds %q", res, err, content(t, st, "/m.md"))
	}

	other := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other", APIKeyID: "apikey_agent"}
	if err := edit(gitstore.Trial(ctx, &tried), st); err != nil {
		t.Fatal(err)
	}
	f, p, err = m.WritesTried(ctx, st, other, "", tried.Head)
	if err != nil {
		t.Fatal(err)
	}
	if p.Base == tried.Head || p.Base != st.Head() {
		t.Errorf("main did not move: the proposal starts from %s, want its opening %s", p.Base, st.Head())
	}
	if _, err := f.Write(ctx, gitstore.WriteInput{Path: "/n.md", Content: "n", Actor: other}); err != nil {
		t.Fatal(err)
	}
	if _, res, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{}); err != nil || res.Outcome != gitstore.FastForward {
		t.Errorf("approval: %+v %v, want a fast-forward", res, err)
	}
}

// TestOpensAfterARedaction: a redaction between the trial of the write that opens a
// proposal and the opening rewrote the commit the trial ran on: the proposal starts from
// main as it is, which does not hold the redacted content.
func TestOpensAfterARedaction(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	write(t, st, "/pw.md", "launch code: ZEBRA-PLUTO-4471\n", person)
	leaked := versionOf(t, st, "/pw.md", gitstore.OpCreated)
	write(t, st, "/pw.md", "launch code: in the vault\n", person)
	var tried gitstore.TrialResult
	if _, err := st.Write(gitstore.Trial(ctx, &tried), gitstore.WriteInput{Path: "/idea.md", Content: "idea", Actor: proposer}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Redact(ctx, gitstore.RedactInput{VersionID: leaked, Actor: person}); err != nil {
		t.Fatal(err)
	}
	f, p, err := m.WritesTried(ctx, st, proposer, "", tried.Head)
	if err != nil {
		t.Fatal(err)
	}
	if p.Base == tried.Head || p.Base != st.Head() {
		t.Errorf("the proposal starts from %s; main is at %s, the trial ran on %s, which the redaction rewrote", p.Base, st.Head(), tried.Head)
	}
	write(t, f, "/idea.md", "idea", proposer)
	if strings.Contains(forkObjects(t, m, st.ID(), p.ID), "ZEBRA") {
		t.Error("the fork holds the redacted content")
	}
}

// TestFailedForkRecordsNothing: a proposal whose fork cannot be made (a full disk, here a
// file where the forks' folder goes) opens nothing, and leaves no opening recorded in main,
// whose feed and webhooks would announce a proposal that does not exist. Once the fork can
// be made, the proposal opens, from main with its opening step.
func TestFailedForkRecordsNothing(t *testing.T) {
	ctx := context.Background()
	m, st := newManager(t)
	write(t, st, "/m.md", "v1", person)
	if _, err := listAll(m, st.ID(), Filter{}); err != nil { // read once, with the forks' folder as it is
		t.Fatal(err)
	}
	forks := m.data.Layout().ProposalForks(st.ID())
	if err := os.MkdirAll(filepath.Dir(forks), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(forks, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	head := st.Head()
	if _, _, err := m.WritesTried(ctx, st, proposer, "", ""); err == nil {
		t.Fatal("a proposal opened without its fork")
	}
	if st.Head() != head {
		t.Fatalf("main moved from %s to %s: an opening was recorded for a proposal that did not open", head, st.Head())
	}
	if l, err := listAll(m, st.ID(), Filter{}); err != nil || len(l) != 0 {
		t.Fatalf("proposals: %+v %v", l, err)
	}
	if err := os.Remove(forks); err != nil {
		t.Fatal(err)
	}
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Base != st.Head() || p.Base == head || f.Head() != p.Base {
		t.Errorf("the proposal starts from %s and its fork's main is %s; main, with the opening, is at %s", p.Base, f.Head(), st.Head())
	}
}
