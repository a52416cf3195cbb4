package gitstore

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRedactListsForks: a redaction of a store that has forks lists the version for them
// itself, with no wrapper set, and keeps it listed until ForksCaughtUp; a redaction that the
// store refuses leaves nothing listed, nor does one of a store without forks.
func TestRedactListsForks(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "forked", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	leak := mustWrite(t, s, "/pw.md", "launch code: ZEBRA\n", apiActor)
	live := mustWrite(t, s, "/pw.md", "launch code: in the vault\n", apiActor)
	plain, err := d.CreateStore(ctx, CreateStoreInput{Name: "plain", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	plainLeak := mustWrite(t, plain, "/pw.md", "ZEBRA\n", apiActor)
	mustWrite(t, plain, "/pw.md", "gone\n", apiActor)
	if err := s.Fork(ctx, d.Layout().ProposalFork(s.ID(), "prop_1")); err != nil {
		t.Fatal(err)
	}
	listed := func(id string) []string {
		t.Helper()
		l, err := d.ForksRedacting(id)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	if _, err := s.Redact(ctx, RedactInput{VersionID: live.Version.ID, Actor: apiActor}); !IsKind(err, KindInvalid) {
		t.Fatalf("redact the live version: %v, want it refused", err)
	}
	if _, err := s.Redact(ctx, RedactInput{VersionID: "memver_01M8K80MZR7119A3FYF6KBB756", Actor: apiActor}); !IsKind(err, KindNotFound) {
		t.Fatalf("redact a version that does not exist: %v", err)
	}
	if l := listed(s.ID()); len(l) != 0 {
		t.Errorf("listed after refused redactions: %v", l)
	}

	redactChecked(t, s, leak.Version.ID, "ZEBRA", false)
	if l := listed(s.ID()); !slices.Equal(l, []string{leak.Version.ID}) {
		t.Fatalf("listed after the redaction: %v, want the version", l)
	}
	if err := d.ForksCaughtUp(s.ID(), leak.Version.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Layout().ForksRedacting(s.ID())); !os.IsNotExist(err) {
		t.Errorf("the list after the forks caught up: %v", err)
	}

	redactChecked(t, plain, plainLeak.Version.ID, "ZEBRA", false)
	if _, err := os.Stat(d.Layout().ProposalForks(plain.ID())); !os.IsNotExist(err) {
		t.Errorf("a store without forks got a list: %v", err)
	}
}

// TestRedactRecordFailsKeepsForksListed: a redaction whose catalog cannot record it once main
// has moved (and cannot catch up) leaves main's history rewritten and the forks holding the
// content: the version stays listed for them, though the catalog does not say it is redacted.
func TestRedactRecordFailsKeepsForksListed(t *testing.T) {
	ctx := context.Background()
	d, s, m, _ := redactionFixture(t)
	if err := s.Fork(ctx, d.Layout().ProposalFork(s.ID(), "prop_1")); err != nil {
		t.Fatal(err)
	}
	redactionRecordFault = func() error {
		settleFault = func() error { return errors.New("still failing") }
		return errors.New("the catalog's disk failed")
	}
	_, err := s.Redact(ctx, RedactInput{VersionID: m.VersionID, Actor: apiActor})
	redactionRecordFault, settleFault = nil, nil
	if err == nil || !strings.Contains(err.Error(), "redacted in main") {
		t.Fatalf("redact: %v", err)
	}
	if v, err := s.Version(ctx, m.VersionID, false); err != nil || v.RedactedAt != nil {
		t.Fatalf("the catalog already says the version is redacted (%v): the test shows nothing", err)
	}
	l, err := d.ForksRedacting(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(l) == 0 {
		t.Errorf("main's history is rewritten, the fork holds the content, and nothing is listed for it")
	}
}
