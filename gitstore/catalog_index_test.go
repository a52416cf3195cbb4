package gitstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// versionIndexApart compares sesver and keyver with what a scan of ver gives them, each
// version under its session and under its API key, and returns the entries that one has and
// the other lacks ("" if they agree).
func versionIndexApart(t *testing.T, ct catTx) string {
	t.Helper()
	var want, got []string
	for v, err := range ct.versionsFrom(0) {
		if err != nil {
			t.Fatal(err)
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

// checkVersionIndexes checks that the catalog's lists of each session's and API key's
// versions agree with a scan of every version: the buckets themselves, the listings by
// session and by key (with and without another filter, in pages of two) and the versions
// a revert selects.
func checkVersionIndexes(t *testing.T, s *Store, when string) {
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
		page.Limit = 2
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
			t.Fatalf("%s: versions of %+v:\n got %v\nwant %v", when, f, got, want)
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
// a session, a commit made with git, main set back by a forced push, and a rebuild.
func TestVersionIndexes(t *testing.T) {
	ctx := context.Background()
	s, logs := newLoggedStore(t)
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
