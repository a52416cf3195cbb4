package gitstore

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var revSession = Actor{Type: SessionActor, ID: "sesn_01REVERTSESSION000000000", APIKeyID: "apikey_01REVERTKEY"}

// tickClock returns a clock that moves one second at every call, so that versions have
// distinct, known times.
func tickClock(start time.Time) func() time.Time {
	var n atomic.Int64
	return func() time.Time { return start.Add(time.Duration(n.Add(1)) * time.Second) }
}

func packCount(t *testing.T, s *Store) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(s.RepoPath(), "objects", "pack", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// liveState is every memory's path, id and content.
func liveState(t *testing.T, s *Store) map[string]string {
	t.Helper()
	page, err := s.List(context.Background(), ListOptions{Limit: 1000, WithContent: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range page.Items {
		out[it.Memory.Path] = it.Memory.ID + " " + *it.Memory.Content
	}
	return out
}

func mustDelete(t *testing.T, s *Store, id string, a Actor) {
	t.Helper()
	if _, err := s.Delete(context.Background(), DeleteInput{ID: id, Actor: a}); err != nil {
		t.Fatal(err)
	}
}

func TestRevertSession(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{Clock: tickClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)), IdlePack: time.Hour})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "revert", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	// Before the range: Bob's memories, and one the session made itself.
	a := mustWrite(t, s, "/a.md", "a1\n", bobActor).Memory.ID
	b := mustWrite(t, s, "/b.md", "b1\n", bobActor).Memory.ID
	dd := mustWrite(t, s, "/d.md", "d1\n", bobActor).Memory.ID
	f := mustWrite(t, s, "/f.md", "f1\n", bobActor).Memory.ID
	x := mustWrite(t, s, "/x.md", "x1\n", bobActor).Memory.ID
	h := mustWrite(t, s, "/h.md", "h0\n", revSession)
	since := h.Version.CreatedAt.Add(time.Millisecond)

	// The range: the session's changes, interleaved with Bob's.
	mustUpdate(t, s, UpdateInput{ID: a, Content: ptr("a2\n"), Actor: revSession})
	mustWrite(t, s, "/bob1.md", "bob\n", bobActor)
	mustUpdate(t, s, UpdateInput{ID: a, Path: ptr("/a2.md"), Actor: revSession})
	mustDelete(t, s, b, revSession)
	c := mustWrite(t, s, "/c.md", "c1\n", revSession).Memory.ID
	mustUpdate(t, s, UpdateInput{ID: dd, Content: ptr("d2\n"), Actor: revSession})
	e := mustWrite(t, s, "/e.md", "e1\n", revSession).Memory.ID
	mustDelete(t, s, e, revSession)
	mustUpdate(t, s, UpdateInput{ID: f, Path: ptr("/g.md"), Actor: revSession})
	mustUpdate(t, s, UpdateInput{ID: x, Path: ptr("/y.md"), Actor: revSession})
	newX := mustWrite(t, s, "/x.md", "new x\n", revSession).Memory.ID
	hv := mustWrite(t, s, "/h.md", "h1\n", revSession)
	until := hv.Version.CreatedAt
	// After the range: Bob changes d and takes /f.md; the session changes h again (its own).
	bobD := mustWrite(t, s, "/d.md", "d3\n", bobActor)
	bobF := mustWrite(t, s, "/f.md", "bob's f\n", bobActor).Memory.ID
	mustWrite(t, s, "/h.md", "h2\n", revSession)
	bob1 := liveState(t, s)["/bob1.md"]

	// A dry run reports and writes nothing.
	head, packs := s.Head(), packCount(t, s)
	in := RevertInput{SessionID: revSession.ID, Since: since, Until: until, Actor: apiActor}
	dry := in
	dry.DryRun = true
	plan, err := s.Revert(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	if s.Head() != head || packCount(t, s) != packs {
		t.Fatal("a dry run wrote")
	}
	if !plan.DryRun || len(plan.Reverted) != 6 || plan.Reverted[0].VersionID != "" {
		t.Fatalf("dry run: %+v", plan)
	}

	res, err := s.Revert(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	// What each memory should be, modelled by hand.
	want := map[string]string{
		"/a.md":    a + " a1\n",  // updated and renamed: both undone, same id
		"/b.md":    b + " b1\n",  // deleted: back with its id
		"/d.md":    dd + " d3\n", // Bob changed it later: left alone
		"/g.md":    f + " f1\n",  // renamed, but Bob took /f.md: left alone
		"/f.md":    bobF + " bob's f\n",
		"/x.md":    x + " x1\n",           // renamed away and its path reused: the new one goes, x comes back
		"/h.md":    h.Memory.ID + " h0\n", // the session's later change is its own
		"/bob1.md": bob1,
		// /c.md created in the range: deleted; /e.md created and deleted: unchanged.
	}
	if got := liveState(t, s); !equalMaps(got, want) {
		t.Errorf("after revert:\n got %v\nwant %v", got, want)
	}
	type row struct{ id, path, from, action string }
	var got []row
	for _, r := range res.Reverted {
		got = append(got, row{r.MemoryID, r.Path, r.FromPath, string(r.Action)})
		if r.VersionID == "" {
			t.Errorf("reverted %s without a version", r.Path)
		}
	}
	wantRows := []row{{a, "/a.md", "/a2.md", "restored"}, {b, "/b.md", "", "recreated"}, {c, "/c.md", "/c.md", "deleted"},
		{h.Memory.ID, "/h.md", "/h.md", "restored"}, {x, "/x.md", "/y.md", "restored"}, {newX, "/x.md", "/x.md", "deleted"}}
	sort.Slice(got, func(i, j int) bool { return got[i].path+got[i].action < got[j].path+got[j].action })
	sort.Slice(wantRows, func(i, j int) bool { return wantRows[i].path+wantRows[i].action < wantRows[j].path+wantRows[j].action })
	if len(got) != len(wantRows) {
		t.Fatalf("reverted %+v, want %+v", got, wantRows)
	}
	for i := range got {
		if got[i] != wantRows[i] {
			t.Errorf("reverted[%d] = %+v, want %+v", i, got[i], wantRows[i])
		}
	}
	if len(res.Skipped) != 2 {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	if sk := res.Skipped[0]; sk.MemoryID != dd || sk.Reason != SkipChangedLater || sk.Blocking == nil || sk.Blocking.ID != bobD.Version.ID ||
		sk.Blocking.CreatedBy.ID != bobActor.ID || !strings.Contains(sk.Message, bobD.Version.ID) {
		t.Errorf("skipped[0] %+v", sk)
	}
	if sk := res.Skipped[1]; sk.MemoryID != f || sk.Path != "/g.md" || sk.Reason != SkipPathTaken || sk.ConflictingMemoryID != bobF ||
		sk.Blocking == nil || sk.Blocking.MemoryID != bobF || sk.Message != "path /f.md is already taken by memory "+bobF {
		t.Errorf("skipped[1] %+v", sk)
	}
	if len(res.Unchanged) != 1 || res.Unchanged[0].MemoryID != e {
		t.Errorf("unchanged %+v", res.Unchanged)
	}
	// The dry run planned the same.
	for i := range plan.Reverted {
		r := res.Reverted[i]
		r.VersionID = ""
		if plan.Reverted[i] != r {
			t.Errorf("dry run planned %+v, revert did %+v", plan.Reverted[i], r)
		}
	}

	// One version per reverted memory, by the reverting actor, all in one group (one pack,
	// one ref move), each commit saying what it reverts.
	if n := packCount(t, s); n != packs+1 {
		t.Errorf("%d packs after the revert, want %d", n, packs+1)
	}
	log := gitIn(t, s.RepoPath(), "log", "--format=%an|%s", head+"..main")
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 6 {
		t.Fatalf("revert commits:\n%s", log)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, apiActor.ID+"|revert session "+revSession.ID+": ") {
			t.Errorf("revert commit %q", l)
		}
	}
	msg := gitIn(t, s.RepoPath(), "log", "-1", "--format=%B")
	if !strings.Contains(msg, "Gitmem-Reverts: session "+revSession.ID+" since "+fmtTime(since)+" until "+fmtTime(until)) {
		t.Errorf("revert commit message:\n%s", msg)
	}
	vs, err := s.Versions(ctx, VersionFilter{APIKeyID: apiActor.ID, CreatedAtGTE: bobD.Version.CreatedAt, Limit: 100})
	if err != nil || len(vs.Versions) != 6 {
		t.Fatalf("versions by the reverting actor: %v, %+v", err, vs.Versions)
	}
	for _, v := range vs.Versions {
		if v.MemoryID == c || v.MemoryID == newX {
			if v.Operation != OpDeleted {
				t.Errorf("version %+v", v)
			}
		} else if v.Operation != OpModified {
			t.Errorf("version %+v", v)
		}
	}

	// Reverting again changes nothing: the memories are in their earlier states.
	head = s.Head()
	again, err := s.Revert(ctx, in)
	if err != nil || len(again.Reverted) != 0 || len(again.Unchanged) != 7 || len(again.Skipped) != 2 || s.Head() != head {
		t.Errorf("second revert: %v, %+v", err, again)
	}
	// An empty range reverts nothing.
	empty, err := s.Revert(ctx, RevertInput{SessionID: revSession.ID, Since: until.Add(time.Hour), Actor: apiActor})
	if err != nil || len(empty.Reverted)+len(empty.Skipped)+len(empty.Unchanged) != 0 || s.Head() != head {
		t.Errorf("empty revert: %v, %+v", err, empty)
	}
	// The catalog rebuilt from history agrees.
	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := liveState(t, s); !equalMaps(got, want) {
		t.Errorf("after reindex:\n got %v\nwant %v", got, want)
	}
	if out, err := exec.Command("git", "--git-dir", s.RepoPath(), "fsck", "--full", "--strict").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestRevertByKeyAndRefusals(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	key := Actor{Type: APIActor, ID: revSession.APIKeyID}
	m := mustWrite(t, s, "/k.md", "k1\n", bobActor).Memory.ID
	mustWrite(t, s, "/k.md", "k2\n", key)        // the key itself
	mustWrite(t, s, "/k.md", "k3\n", revSession) // a session that used the key: also the key's
	mustWrite(t, s, "/s.md", "s1\n", revSession)
	res, err := s.Revert(ctx, RevertInput{APIKeyID: key.ID, Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reverted) != 2 || res.Reverted[0].MemoryID != m || res.Reverted[0].Action != RevertRestored ||
		res.Reverted[1].Path != "/s.md" || res.Reverted[1].Action != RevertDeleted {
		t.Fatalf("revert by key: %+v", res)
	}
	if got := liveState(t, s); len(got) != 1 || got["/k.md"] != m+" k1\n" {
		t.Errorf("after revert by key: %v", got)
	}
	if msg := gitIn(t, s.RepoPath(), "log", "-1", "--format=%s"); msg != "revert api_key "+key.ID+": delete /s.md" &&
		!strings.HasPrefix(msg, "revert api_key "+key.ID+": restore /k.md to version ") {
		t.Errorf("subject %q", msg)
	}
	for _, tc := range []struct {
		in  RevertInput
		msg string
	}{
		{RevertInput{Actor: apiActor}, "revert needs exactly one of a session id and an API key id"},
		{RevertInput{SessionID: "sesn_1", APIKeyID: "apikey_1", Actor: apiActor}, "revert needs exactly one of a session id and an API key id"},
		{RevertInput{SessionID: "sesn_1", Since: time.Unix(10, 0), Until: time.Unix(5, 0), Actor: apiActor},
			"the end of the range (1970-01-01T00:00:05.000Z) is before its start (1970-01-01T00:00:10.000Z)"},
		{RevertInput{SessionID: "sesn_1"}, "a write needs an actor (type and id)"},
	} {
		if _, err := s.Revert(ctx, tc.in); !IsKind(err, KindInvalid) || err.Error() != tc.msg {
			t.Errorf("%+v: %v, want %q", tc.in, err, tc.msg)
		}
	}
}
