package proposals

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// versionOf returns the version of path that op made in st.
func versionOf(t *testing.T, st *gitstore.Store, path string, op gitstore.Operation) string {
	t.Helper()
	page, err := st.Versions(context.Background(), gitstore.VersionFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range page.Versions {
		if v.Path == path && v.Operation == op {
			return v.ID
		}
	}
	t.Fatalf("no %s version of %s", op, path)
	return ""
}

// forkObjects returns every object of the fork of proposal id, as git cat-file prints them.
func forkObjects(t *testing.T, m *Manager, storeID, id string) string {
	t.Helper()
	return repoObjects(t, filepath.Join(m.data.Layout().ProposalFork(storeID, id), "repo.git"))
}

// repoObjects returns every object of the repository gitDir, loose and packed, reachable or
// not, as git cat-file prints them.
func repoObjects(t *testing.T, gitDir string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	out, err := exec.Command("git", "--git-dir", gitDir, "cat-file", "--batch-all-objects", "--batch").CombinedOutput()
	if err != nil {
		t.Fatalf("git cat-file: %v\n%s", err, out)
	}
	return string(out)
}

// leakAndPropose makes a store whose /pw.md was first a secret (leaked, its version) and
// then changed, with two proposals opened in between: p, open, whose fork has the secret as
// /pw.md's current version, and q, rejected (its fork kept).
func leakAndPropose(t *testing.T) (m *Manager, st *gitstore.Store, leaked string, p, q Proposal) {
	t.Helper()
	ctx := context.Background()
	m, st = newManager(t)
	write(t, st, "/pw.md", "launch code: ZEBRA-PLUTO-4471\n", person)
	leaked = versionOf(t, st, "/pw.md", gitstore.OpCreated)
	f, p, err := m.WritesTried(ctx, st, proposer, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/idea.md", "idea\n", proposer)
	other := gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_other", APIKeyID: "apikey_agent"}
	g, q, err := m.WritesTried(ctx, st, other, "", "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, g, "/other.md", "other\n", other)
	if _, err := m.Reject(ctx, st, q.ID, person); err != nil {
		t.Fatal(err)
	}
	write(t, st, "/pw.md", "launch code: in the vault\n", person)
	return m, st, leaked, p, q
}

// TestRedactReachesForks: a version redacted in the store is redacted in the forks that hold
// it, open and rejected, as the store redacted it. The proposer reads it redacted, where it
// is the proposal's current version too (the fork was made before main changed it), and the
// proposal is approved afterwards, its base rewritten as the store's.
func TestRedactReachesForks(t *testing.T) {
	ctx := context.Background()
	m, st, leaked, p, q := leakAndPropose(t)

	res, err := st.Redact(ctx, gitstore.RedactInput{VersionID: leaked, Actor: person})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Forks) != 2 || res.Forks[0] != (gitstore.ForkRedaction{ID: p.ID}) || res.Forks[1] != (gitstore.ForkRedaction{ID: q.ID}) || res.ContentRemains {
		t.Errorf("redaction: forks %+v, content remains %v", res.Forks, res.ContentRemains)
	}
	for _, id := range []string{p.ID, q.ID} {
		if strings.Contains(forkObjects(t, m, st.ID(), id), "ZEBRA") {
			t.Errorf("the fork of %s holds the content", id)
		}
		got, err := m.Get(st.ID(), id)
		if err != nil || len(got.Comments) == 0 || !strings.Contains(got.Comments[len(got.Comments)-1].Body, leaked+" was redacted") {
			t.Errorf("the thread of %s: %+v %v", id, got.Comments, err)
		}
	}
	r, err := m.Reads(st, proposer)
	if err != nil {
		t.Fatal(err)
	}
	if got := content(t, r, "/pw.md"); got != "[redacted]\n" {
		t.Errorf("the proposer reads /pw.md as %q", got)
	}
	if v, err := r.Version(ctx, leaked, true); err != nil || v.RedactedAt == nil || v.Content != nil || !v.RedactedAt.Equal(*res.Version.RedactedAt) {
		t.Errorf("the proposer reads the version as %+v, %v", v, err)
	}
	// Redacting again reaches no fork: they have it.
	if again, err := st.Redact(ctx, gitstore.RedactInput{VersionID: leaked, Actor: person}); err != nil || len(again.Forks) != 0 {
		t.Errorf("second redaction: %+v, %v", again.Forks, err)
	}
	if _, _, err := m.Approve(ctx, st, p.ID, person, ApproveOptions{}); err != nil {
		t.Fatalf("approve after the redaction: %v", err)
	}
	if got := content(t, st, "/idea.md") + content(t, st, "/pw.md"); got != "idea\nlaunch code: in the vault\n" {
		t.Errorf("main after the approval: %q", got)
	}
}

// TestRedactFinishesForksAfterCrash: the store's redaction without its forks' (a crash came
// between them, or no manager was there to wrap it) leaves the version listed in
// ForksRedacting, and the next use of the store's proposals redacts it in the forks before
// anyone reads them.
func TestRedactFinishesForksAfterCrash(t *testing.T) {
	ctx := context.Background()
	m, st, leaked, p, q := leakAndPropose(t)

	// The store's redaction alone: gitstore lists the version for the forks itself.
	m.data.WrapRedact(nil)
	if _, err := st.Redact(ctx, gitstore.RedactInput{VersionID: leaked, Actor: person}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{p.ID, q.ID} {
		if !strings.Contains(forkObjects(t, m, st.ID(), id), "ZEBRA") {
			t.Fatal("a fork lost the content without the wrapper: the test shows nothing")
		}
	}

	m2 := New(m.data) // the process after the crash
	t.Cleanup(func() { m2.Close() })
	if _, err := listAll(m2, st.ID(), Filter{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{p.ID, q.ID} {
		if strings.Contains(forkObjects(t, m2, st.ID(), id), "ZEBRA") {
			t.Errorf("the fork of %s holds the content after the store's proposals were used again", id)
		}
	}
	if _, err := os.Stat(m2.data.Layout().ForksRedacting(st.ID())); !os.IsNotExist(err) {
		t.Errorf(".redacting after it was finished: %v", err)
	}
	r, err := m2.Reads(st, proposer)
	if err != nil {
		t.Fatal(err)
	}
	if got := content(t, r, "/pw.md"); got != "[redacted]\n" {
		t.Errorf("the proposer reads /pw.md as %q", got)
	}
}

// TestRedactFinishesForkAfterCrashBeforeUpdate: a crash after a fork has redacted the
// version and before its proposal's record moved to the rewritten base (afterForkRedacted
// stops the redaction there). The process starts again; the first use of the store's
// proposals finds that fork redacted already and moves the base all the same, and redacts
// the fork it had not reached: the proposal is approved, and neither a fork nor main holds
// the content.
func TestRedactFinishesForkAfterCrashBeforeUpdate(t *testing.T) {
	ctx := context.Background()
	m, st, leaked, p, q := leakAndPropose(t)
	crash := errors.New("crash between the fork's redaction and its proposal's update")
	afterForkRedacted = func(id string) error {
		if id == p.ID {
			return crash
		}
		return nil
	}
	t.Cleanup(func() { afterForkRedacted = nil })
	if _, err := st.Redact(ctx, gitstore.RedactInput{VersionID: leaked, Actor: person}); !errors.Is(err, crash) {
		t.Fatalf("the redaction: %v, want it stopped by the crash", err)
	}
	afterForkRedacted = nil

	// The state the crash leaves: p's fork redacted, its record on the old history, q's fork
	// not reached, the version listed in .redacting.
	rewritten, ok, err := st.RewrittenTo(ctx, p.Base)
	if err != nil || !ok {
		t.Fatalf("the base of %s was not rewritten by the redaction: %v", p.ID, err)
	}
	if got, err := m.Get(st.ID(), p.ID); err != nil || got.Base != p.Base {
		t.Fatalf("before the restart the record of %s has base %s (%v), want the old %s: the test shows nothing", p.ID, got.Base, err, p.Base)
	}
	if strings.Contains(forkObjects(t, m, st.ID(), p.ID), "ZEBRA") || !strings.Contains(forkObjects(t, m, st.ID(), q.ID), "ZEBRA") {
		t.Fatal("the crash did not come after the first fork's redaction and before the second's: the test shows nothing")
	}
	if _, err := os.Stat(m.data.Layout().ForksRedacting(st.ID())); err != nil {
		t.Fatalf(".redacting after the crash: %v", err)
	}

	// The process after the crash: the data directory and the proposals opened again.
	dir, id := m.data.Dir(), st.ID()
	if err := errors.Join(m.Close(), m.data.Close()); err != nil {
		t.Fatal(err)
	}
	d, err := gitstore.Open(ctx, dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m2 := New(d)
	t.Cleanup(func() { m2.Close(); d.Close() })
	if st, err = d.Store(ctx, id); err != nil {
		t.Fatal(err)
	}
	got, err := m2.Get(id, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Base != rewritten {
		t.Errorf("the base of %s after the restart is %s, want the rewritten %s", p.ID, got.Base, rewritten)
	}
	if len(got.Comments) == 0 || !strings.Contains(got.Comments[len(got.Comments)-1].Body, leaked+" was redacted") {
		t.Errorf("the thread of %s: %+v", p.ID, got.Comments)
	}
	for _, pid := range []string{p.ID, q.ID} {
		if strings.Contains(forkObjects(t, m2, id, pid), "ZEBRA") {
			t.Errorf("the fork of %s holds the content after the restart", pid)
		}
	}
	if _, err := os.Stat(m2.data.Layout().ForksRedacting(id)); !os.IsNotExist(err) {
		t.Errorf(".redacting after it was finished: %v", err)
	}
	if _, _, err := m2.Approve(ctx, st, p.ID, person, ApproveOptions{}); err != nil {
		t.Fatalf("approve after the restart: %v", err)
	}
	if got := content(t, st, "/idea.md") + content(t, st, "/pw.md"); got != "idea\nlaunch code: in the vault\n" {
		t.Errorf("main after the approval: %q", got)
	}
	if strings.Contains(repoObjects(t, st.RepoPath()), "ZEBRA") {
		t.Error("main's repository holds the content after the approval")
	}
}

// TestRedactClosesForkItCannotRedact: a fork that holds the version and cannot redact it
// (here it cannot even be opened) is removed, an open proposal rejected and a rejected one's
// changes dropped, and the answer and the threads say so.
func TestRedactClosesForkItCannotRedact(t *testing.T) {
	ctx := context.Background()
	m, st, leaked, p, q := leakAndPropose(t)
	if err := m.Close(); err != nil { // the forks closed, as after a restart
		t.Fatal(err)
	}
	m = New(m.data)
	t.Cleanup(func() { m.Close() })
	for _, id := range []string{p.ID, q.ID} {
		if err := os.WriteFile(filepath.Join(m.data.Layout().ProposalFork(st.ID(), id), "repo.git", "HEAD"), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	res, err := st.Redact(ctx, gitstore.RedactInput{VersionID: leaked, Actor: person})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Forks) != 2 || res.Forks[0] != (gitstore.ForkRedaction{ID: p.ID, Closed: true}) || res.Forks[1] != (gitstore.ForkRedaction{ID: q.ID, Closed: true}) {
		t.Errorf("forks: %+v", res.Forks)
	}
	for _, id := range []string{p.ID, q.ID} {
		if _, err := os.Stat(m.data.Layout().ProposalFork(st.ID(), id)); !os.IsNotExist(err) {
			t.Errorf("the fork of %s is still there: %v", id, err)
		}
		got, err := m.Get(st.ID(), id)
		if err != nil || got.State != Rejected || !got.Dropped || !strings.Contains(got.Comments[len(got.Comments)-1].Body, "could not be redacted in this proposal") {
			t.Errorf("proposal %s: %+v %v", id, got, err)
		}
	}
	if _, err := m.Diff(ctx, st, p.ID); !gitstore.IsKind(err, gitstore.KindNotFound) {
		t.Errorf("the diff of the closed proposal: %v", err)
	}
}
