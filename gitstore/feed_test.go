package gitstore

import (
	"context"
	"os/exec"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestStoreEventsThroughRedactionAndRebuild: store changes are in the feed in commit order
// beside versions; a redaction that rewrites the commits after it rewrites their commit
// too; and a catalog rebuilt from the new history gives the same feed, ids and commits.
func TestStoreEventsThroughRedactionAndRebuild(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed") // a redaction repacks with git
	}
	ctx := context.Background()
	d := newTestDataDir(t, Options{})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "feed", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	leak, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "secret", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	desc := "after the leak"
	if _, err := s.UpdateInfo(ctx, StorePatch{Description: &desc, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, WriteInput{Path: "/a.md", Content: "fixed", Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	kinds := func(evs []Event) string {
		out := ""
		for _, e := range evs {
			if e.Store != nil {
				out += "store." + e.Store.Operation + " "
			} else {
				out += "memory." + string(e.Version.Operation) + " "
			}
		}
		return out
	}
	before, _, err := s.EventsAfter(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(before); got != "store.created memory.created store.updated memory.modified " {
		t.Fatalf("feed: %s", got)
	}
	if _, err := s.Redact(ctx, RedactInput{VersionID: leak.Version.ID, Actor: apiActor}); err != nil {
		t.Fatal(err)
	}
	after, _, err := s.EventsAfter(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Store.Commit != before[0].Store.Commit || after[2].Store.Commit == before[2].Store.Commit ||
		after[2].Store.ID != before[2].Store.ID {
		t.Fatalf("after the redaction: store.created %s -> %s, store.updated %s %s -> %s %s", before[0].Store.Commit,
			after[0].Store.Commit, before[2].Store.ID, before[2].Store.Commit, after[2].Store.ID, after[2].Store.Commit)
	}
	if _, err := s.repo.commit(plumbing.NewHash(after[2].Store.Commit)); err != nil {
		t.Fatalf("the store change's commit is not in the repository: %v", err)
	}
	if err := d.Reindex(ctx, s.ID(), nil); err != nil {
		t.Fatal(err)
	}
	rebuilt, _, err := s.EventsAfter(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := range after {
		a, r := after[i], rebuilt[i]
		if a.ID() != r.ID() || (a.Store != nil) != (r.Store != nil) ||
			a.Store != nil && a.Store.Commit != r.Store.Commit || a.Version != nil && a.Version.Commit != r.Version.Commit {
			t.Fatalf("event %d: %+v %+v, rebuilt %+v %+v", i, a.Store, a.Version, r.Store, r.Version)
		}
	}
}
