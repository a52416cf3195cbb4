package odb

import (
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestSyncerPauseEndsForWaiters: a checkpoint that needs the syncer's next round, and a
// close, end the pause between its rounds instead of waiting it out.
func TestSyncerPauseEndsForWaiters(t *testing.T) {
	saved := syncPause
	syncPause = time.Hour
	defer func() { syncPause = saved }() // after the close below, which stops the syncer
	r, err := Open(initTestRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	c2 := commitObjects(t, head(c1), "two")
	c3 := commitObjects(t, head(c2), "three")
	// The syncer's first round takes the first record, or both, and it then pauses.
	publishChain(t, r, c1, c2)
	within(t, "a checkpoint", func() error { return r.Checkpoint(true) })
	if r.journal.off != 0 || r.standby.off != 0 {
		t.Fatalf("journal after a forced checkpoint: %d and %d bytes of records; want none", r.journal.off, r.standby.off)
	}
	if _, err := r.Publish(c3, head(c2), head(c3)); err != nil {
		t.Fatal(err)
	}
	within(t, "a close", r.Close)
	if got, err := r.ReadRef(); err != nil || got != head(c3) {
		t.Fatalf("main after the close: %v, %v; want %v", got, err, head(c3))
	}
}

// within runs f and fails the test if f fails, or has not returned after 30 seconds.
func within(t *testing.T, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s waited for the syncer's pause", what)
	}
}
