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
	within(t, 30*time.Second, "a checkpoint waited for the syncer's pause", func() error { return r.Checkpoint(true) })
	if r.journal.off != 0 || r.standby.off != 0 {
		t.Fatalf("journal after a forced checkpoint: %d and %d bytes of records; want none", r.journal.off, r.standby.off)
	}
	if _, err := r.Publish(c3, head(c2), head(c3)); err != nil {
		t.Fatal(err)
	}
	within(t, 30*time.Second, "a close waited for the syncer's pause", r.Close)
	if got, err := r.ReadRef(); err != nil || got != head(c3) {
		t.Fatalf("main after the close: %v, %v; want %v", got, err, head(c3))
	}
}

// TestSyncerStopAfterPause: records queued during the syncer's pause are synced at stop, and
// stop does not then wait out the pause that follows that last round.
func TestSyncerStopAfterPause(t *testing.T) {
	saved := syncPause
	syncPause = time.Hour
	defer func() { syncPause = saved }() // after stop, which ends the syncer
	s, err := newSyncer(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	s.add(syncItem{seq: 1})
	for start := time.Now(); s.synced.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the syncer's first round did not come")
		}
	}
	// Nothing has woken it: it pauses for an hour, and this record waits for the next round.
	s.add(syncItem{seq: 2})
	within(t, 30*time.Second, "stop waited for the syncer's pause", func() error {
		s.stop()
		return nil
	})
	if got := s.synced.Load(); got != 2 {
		t.Fatalf("synced after stop: record %d; want 2", got)
	}
}
