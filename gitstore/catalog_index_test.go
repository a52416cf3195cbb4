package gitstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/internal/testlog"
)

// versionIndexApart compares sesver and keyver with what a scan of ver gives them up to
// their mark (meta's indexed), each version under its session and under its API key, and
// returns the entries that one has and the other lacks ("" if they agree). A mark past the
// last version number is a difference too.
func versionIndexApart(t *testing.T, ct catTx) string {
	t.Helper()
	mark := ct.indexedUpTo()
	if last := ct.versionCount(); mark > last {
		return fmt.Sprintf("the index's mark %d is past the last number %d", mark, last)
	}
	var want, got []string
	for v, err := range ct.versionsFrom(0) {
		if err != nil {
			t.Fatal(err)
		}
		if v.seq > mark {
			break
		}
		a := v.actor()
		if id := a.SessionID(); id != "" {
			want = append(want, fmt.Sprintf("%s %q %d", bSesVer, id, v.seq))
		}
		if id := a.KeyID(); id != "" {
			want = append(want, fmt.Sprintf("%s %q %d", bKeyVer, id, v.seq))
		}
	}
	for _, b := range [][]byte{bSesVer, bKeyVer} {
		err := ct.tx.Bucket(b).ForEach(func(k, _ []byte) error {
			n, l := binary.Uvarint(k)
			if l <= 0 || len(k) != l+int(n)+8 {
				return fmt.Errorf("%s: malformed key %x", b, k)
			}
			got = append(got, fmt.Sprintf("%s %q %d", b, k[l:l+int(n)], seqOf(k[l+int(n):])))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	return linesApart(strings.Join(got, "\n"), strings.Join(want, "\n"))
}

// indexLag returns how many version numbers are above the mark of sesver and keyver.
func indexLag(t *testing.T, s *Store) uint64 {
	t.Helper()
	var lag uint64
	if err := s.readCatalog(func(ct catTx) error { lag = ct.versionCount() - ct.indexedUpTo(); return nil }); err != nil {
		t.Fatal(err)
	}
	return lag
}

// checkVersionIndexes checks that the catalog's lists of each session's and API key's
// versions agree with a scan of every version, as they lag (the versions since the last
// step) and once every version is added: the buckets themselves up to their mark, the
// listings by session and by key (with and without another filter, in pages of two) and
// the versions a revert selects.
func checkVersionIndexes(t *testing.T, s *Store, when string) {
	t.Helper()
	checkVersionListings(t, s, when, 2)
	indexSeeded(t, s)
	if lag := indexLag(t, s); lag != 0 {
		t.Fatalf("%s: %d numbers past the index's mark after a catch-up", when, lag)
	}
	checkVersionListings(t, s, when+", every version indexed", 2)
}

// checkVersionListings is checkVersionIndexes at the index's mark as it is, the listings in
// pages of limit.
func checkVersionListings(t *testing.T, s *Store, when string, limit int) {
	t.Helper()
	ctx := context.Background()
	var all []verRec // newest first
	err := s.readCatalog(func(ct catTx) error {
		if diff := versionIndexApart(t, ct); diff != "" {
			t.Fatalf("%s: the version indexes differ from a scan:\n%s", when, diff)
		}
		for v, err := range ct.versionsDown(everyVersion) {
			if err != nil {
				return err
			}
			all = append(all, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sessions, keys := map[string]bool{"sesn_none": true}, map[string]bool{"apikey_none": true}
	for _, v := range all {
		if id := v.actor().SessionID(); id != "" {
			sessions[id] = true
		}
		if id := v.actor().KeyID(); id != "" {
			keys[id] = true
		}
	}
	var filters []VersionFilter
	for _, id := range sortedKeys(sessions) {
		filters = append(filters, VersionFilter{SessionID: id}, VersionFilter{SessionID: id, Operation: OpModified})
	}
	for _, id := range sortedKeys(keys) {
		filters = append(filters, VersionFilter{APIKeyID: id}, VersionFilter{APIKeyID: id, Operation: OpCreated})
	}
	for _, f := range filters {
		var want []string
		for _, v := range all {
			if f.matches(v) {
				want = append(want, v.ID)
			}
		}
		var got []string
		page := f
		page.Limit = limit
		for {
			p, err := s.Versions(ctx, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range p.Versions {
				got = append(got, v.ID)
			}
			if p.NextCursor == "" {
				break
			}
			page.Cursor = p.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: versions of %+v in pages of %d:\n got %v\nwant %v", when, f, limit, got, want)
		}

		var wantOrder []string
		wantFirst := map[string]uint64{}
		for i := len(all) - 1; i >= 0; i-- {
			if v := all[i]; f.matches(v) && wantFirst[v.Memory] == 0 {
				wantFirst[v.Memory] = v.seq
				wantOrder = append(wantOrder, v.Memory)
			}
		}
		err := s.readCatalog(func(ct catTx) error {
			order, first, err := ct.firstMatchingVersions(f)
			if err != nil {
				return err
			}
			if !slices.Equal(order, wantOrder) {
				t.Fatalf("%s: a revert of %+v selects %v, want %v", when, f, order, wantOrder)
			}
			for id, k := range first {
				if seqOf(k) != wantFirst[id] {
					t.Fatalf("%s: a revert of %+v starts %s at %d, want %d", when, f, id, seqOf(k), wantFirst[id])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestVersionIndexes: the versions listed by session and by API key are those a scan of
// every version finds, after creations, updates, moves and deletions by keys, sessions of a
// key and a session of none (one whose id begins with another's), a redaction, a revert of
// a session, a commit made with git, main set back by a forced push, and a rebuild; each
// time with the writes since the last check not yet in sesver and keyver (the writer
// leaves them to the test), and once they are.
func TestVersionIndexes(t *testing.T) {
	ctx := context.Background()
	logs := &testlog.Buffer{}
	d := newTestDataDir(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), lagIndex: true})
	s := mustCreate(t, d, "rewind")
	keyB := Actor{Type: APIActor, ID: "apikey_01INDEXKEYB"}
	ses1 := Actor{Type: SessionActor, ID: "sesn_1", APIKeyID: apiActor.ID}
	ses10 := Actor{Type: SessionActor, ID: "sesn_10", APIKeyID: keyB.ID}
	bare := Actor{Type: SessionActor, ID: "sesn_2"}

	a := mustWrite(t, s, "/a.md", "one", apiActor)
	b := mustWrite(t, s, "/b.md", "one", ses1)
	mustWrite(t, s, "/a.md", "two", ses1)
	mustWrite(t, s, "/c.md", "one", ses10)
	mustWrite(t, s, "/d/e.md", "one", bare)
	mustWrite(t, s, "/b.md", "two", keyB)
	if _, err := s.MovePath(ctx, MovePathInput{From: "/b.md", To: "/d/b.md", Actor: ses10}); err != nil {
		t.Fatal(err)
	}
	mustDelete(t, s, a.Memory.ID, ses1)
	if lag := indexLag(t, s); lag == 0 {
		t.Fatal("the writer indexed the versions itself: nothing lags")
	}
	checkVersionIndexes(t, s, "after writes, a move and a deletion")

	if _, err := s.Redact(ctx, RedactInput{VersionID: b.Version.ID, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	checkVersionIndexes(t, s, "after a redaction")

	base := s.Head()
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	mustWrite(t, s, "/f.md", "one", ses1)
	mustWrite(t, s, "/c.md", "two", ses1)
	mustWrite(t, s, "/g.md", "one", bare)
	if _, err := s.Revert(ctx, RevertInput{SessionID: ses1.ID, Since: time.Unix(0, 0), Actor: keyB}); err != nil {
		t.Fatal(err)
	}
	checkVersionIndexes(t, s, "after a revert")
	commitWithGit(t, s, "with git", []string{"mv", "d/e.md", "e.md"})
	checkVersionIndexes(t, s, "after a commit made with git")

	gitIn(t, wt, "push", "-qf", "origin", base+":main")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "catalog set back") {
		t.Fatalf("the catalog was rebuilt, not set back:\n%s", logs.String())
	}
	checkVersionIndexes(t, s, "after main was set back")
	mustWrite(t, s, "/h.md", "one", ses10)
	checkVersionIndexes(t, s, "after a write on the set back catalog")

	if err := reindexStore(ctx, s); err != nil {
		t.Fatal(err)
	}
	checkVersionIndexes(t, s, "after a rebuild")
}

// TestVersionListingAcrossTheMark: with sesver and keyver behind the newest versions (written
// after the last catch-up), a listing by session or key is still complete and newest first,
// in pages of every size from 1 to past the whole, so that a page ends on the index's mark,
// just above it and just below it; a revert selects as a scan would. The newest indexed
// version and the oldest not indexed are the same session's.
func TestVersionListingAcrossTheMark(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{lagIndex: true})
	s := mustCreate(t, d, "lag")
	ses := Actor{Type: SessionActor, ID: "sesn_01LAG", APIKeyID: apiActor.ID}
	other := Actor{Type: SessionActor, ID: "sesn_01OTHER"}
	for i := range 5 {
		mustWrite(t, s, fmt.Sprintf("/%d.md", i), "one", ses)
		mustWrite(t, s, fmt.Sprintf("/o%d.md", i%2), fmt.Sprint(i), other)
	}
	last := mustWrite(t, s, "/0.md", "two", ses)
	indexSeeded(t, s)
	mustWrite(t, s, "/1.md", "two", ses)
	mustWrite(t, s, "/o0.md", "last", other)
	for i := range 4 {
		mustWrite(t, s, fmt.Sprintf("/%d.md", i+2), "two", ses)
	}
	mustWrite(t, s, "/new.md", "one", apiActor)
	err := s.readCatalog(func(ct catTx) error {
		if got, want := ct.indexedUpTo(), seqOf(ct.versionKey(last.Version.ID)); got != want {
			t.Fatalf("the index's mark is at %d, want %d (the last version before the catch-up)", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lag := indexLag(t, s); lag != 7 {
		t.Fatalf("%d versions above the mark, want 7", lag)
	}
	for limit := 1; limit <= 14; limit++ {
		checkVersionListings(t, s, "with the index behind", limit)
	}
	if _, err := s.Revert(ctx, RevertInput{SessionID: ses.ID, Since: time.Unix(0, 0), Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	checkVersionIndexes(t, s, "after a revert of the lagging session")
}

// TestVersionIndexSetBack: main set back by a forced push past versions that sesver and
// keyver list undoes their entries (versionIndexApart finds any left); the versions written
// after, numbered after those undone (the sequence does not go back, so no number the mark
// covers is given again), are listed, before and after the writer adds them.
func TestVersionIndexSetBack(t *testing.T) {
	ctx := context.Background()
	logs := &testlog.Buffer{}
	d := newTestDataDir(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), lagIndex: true})
	s := mustCreate(t, d, "setback")
	ses := Actor{Type: SessionActor, ID: "sesn_01SETBACK", APIKeyID: apiActor.ID}
	mustWrite(t, s, "/a.md", "one", ses)
	base := s.Head()
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", s.RepoPath(), wt)
	for i := range 4 {
		mustWrite(t, s, fmt.Sprintf("/b%d.md", i), "one", ses)
	}
	indexSeeded(t, s)
	var mark uint64
	if err := s.readCatalog(func(ct catTx) error { mark = ct.indexedUpTo(); return nil }); err != nil {
		t.Fatal(err)
	}
	gitIn(t, wt, "push", "-qf", "origin", base+":main")
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "catalog set back") {
		t.Fatalf("the catalog was rebuilt, not set back:\n%s", logs.String())
	}
	checkVersionListings(t, s, "after main was set back", 2)
	for i := range 3 {
		mustWrite(t, s, fmt.Sprintf("/c%d.md", i), "one", ses)
	}
	err := s.readCatalog(func(ct catTx) error {
		for v, err := range ct.versionsFrom(0) {
			if err != nil {
				return err
			}
			if v.Path == "/c0.md" && v.seq <= mark {
				t.Errorf("a version written after the setting back is numbered %d, under the mark %d of before", v.seq, mark)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkVersionIndexes(t, s, "after writes on the set back catalog")
}

// TestWriterIndexesVersions: the writer adds the versions it wrote to sesver and keyver by
// itself, between groups once indexEvery has passed, and when it goes idle.
func TestWriterIndexesVersions(t *testing.T) {
	ses := Actor{Type: SessionActor, ID: "sesn_01WRITER", APIKeyID: apiActor.ID}
	s := mustCreate(t, newTestDataDir(t, Options{IdlePack: time.Hour}), "between")
	mustWrite(t, s, "/a.md", "one", ses)
	time.Sleep(indexEvery)
	mustWrite(t, s, "/b.md", "one", ses)
	// The step runs after the group is answered: it is waited for, briefly (the idle one would
	// come only after IdlePack, an hour).
	for deadline := time.Now().Add(2 * time.Second); indexLag(t, s) != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("between groups: %d version numbers past the index's mark, %v after the last step", indexLag(t, s), indexEvery)
		}
	}

	s = mustCreate(t, newTestDataDir(t, Options{IdlePack: 20 * time.Millisecond}), "idle")
	for i := range 3 {
		mustWrite(t, s, fmt.Sprintf("/%d.md", i), "one", ses)
	}
	for deadline := time.Now().Add(10 * time.Second); indexLag(t, s) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("idle: %d version numbers past the index's mark", indexLag(t, s))
		}
	}
	checkVersionListings(t, s, "once idle", 2)
}
