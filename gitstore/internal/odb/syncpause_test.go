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
	syncPause = time.Hour // for the syncer that Open starts
	r, err := Open(initTestRepo(t))
	syncPause = saved
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() }) // if the test ends before its own close
	c1 := commitObjects(t, plumbing.ZeroHash, "one")
	c2 := commitObjects(t, head(c1), "two")
	c3 := commitObjects(t, head(c2), "three")
	publishChain(t, r, c1)
	synced(t, r.syncer, 1)
	// The syncer pauses for an hour after its round: this record waits for the next one.
	if _, err := r.Publish(c2, head(c1), head(c2)); err != nil {
		t.Fatal(err)
	}
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
	s, err := newSyncer(t.TempDir(), 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.add(syncItem{seq: 1})
	synced(t, s, 1)
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

// TestSyncerQueueEndsPause: a queue filling up during the pause starts the next round, so
// that the writer does not block on it until the pause ends.
func TestSyncerQueueEndsPause(t *testing.T) {
	s, err := newSyncer(t.TempDir(), 0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	s.add(syncItem{seq: 1})
	synced(t, s, 1)
	last := uint64(1 + cap(s.ch)/2 + 1)
	for seq := uint64(2); seq <= last; seq++ {
		s.add(syncItem{seq: seq})
	}
	synced(t, s, last)
}

// synced waits until s has synced record seq, for 30 seconds at most.
func synced(t *testing.T, s *syncer, seq uint64) {
	t.Helper()
	for start := time.Now(); s.synced.Load() < seq; time.Sleep(time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the syncer did not sync record %d: it is at %d", seq, s.synced.Load())
		}
	}
}
