package gitstore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

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
