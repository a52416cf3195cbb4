package odb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/internal/durable"
)

// PublishTiming is how long the two halves of Publish took.
type PublishTiming struct {
	Pack    time.Duration // encoding the pack and placing it and its index
	Durable time.Duration // taking main.lock, the journal's write and fdatasync, main's move
}

// errBroken is Publish's error once a record is in the journal but main could not be moved
// to it: reopening the repository finishes the move (recover.go).
var errBroken = errors.New("main could not be moved to a journaled commit; reopen the store to finish the move")

// Publish makes a group's objects and main's move from old to new visible to every reader
// and durable, and returns once both are true. It returns ErrRefMoved, having placed and
// journaled nothing (the pack is placed only after main is checked), if main was not at old.
//
// Order: the pack is encoded; main.lock is taken and main checked; the lock file gets the
// new value; the journal record (the move and the pack) is written, and while its
// fdatasync's write is under way the pack and its index are placed (not fsynced); the
// fdatasync returns: from here the group survives a power loss; the lock becomes main
// (moveRef). The checkpoint fsyncs the pack and the ref later (Checkpoint).
func (r *Repo) Publish(objs []plumbing.EncodedObject, old, new plumbing.Hash) (PublishTiming, error) {
	var t PublishTiming
	if r.broken != nil {
		return t, r.broken
	}
	t0 := time.Now()
	p := &encodedPack{}
	if len(objs) > 0 {
		var err error
		if p, err = encodeAfter(objs, &r.packSums); err != nil {
			return t, err
		}
		defer p.release() // written into the pack's file and the journal by then
	}
	t1 := time.Now()
	t.Pack = t1.Sub(t0)
	l, err := r.lockRef(r.createLock)
	if err != nil {
		return t, err
	}
	defer l.Release()
	cur, err := r.ReadRef()
	if err != nil {
		return t, err
	}
	if cur != old {
		return t, ErrRefMoved
	}
	if err := l.write(new); err != nil {
		return t, err
	}
	fault("ref-locked")
	if r.foreign.Swap(false) || len(objs) == 0 {
		// The group builds on objects that a git process wrote (a push, a fetch): git
		// fsyncs their files but not the directory that names them, and the journal's
		// fdatasync does not commit it either.
		if err := r.syncer.syncNow(); err != nil {
			r.foreign.Store(true)
			return t, err
		}
	}
	// The pack is placed while the disk writes the record out. It needs only to be in place
	// before main moves: the record holds its bytes, and recovery installs them. In
	// BenchmarkWrite at 100 memories, the write's median fell from 598-670 µs to 506-610 µs
	// (five alternating runs each, 2026-11-29).
	var place func()
	var placeErr error
	var placing time.Duration
	if len(objs) > 0 {
		place = func() {
			t := time.Now()
			if placeErr = r.placePack(p, placeDurably, r.spares.take); placeErr == nil {
				fault("pack-placed")
			}
			placing = time.Since(t)
		}
	}
	start := r.journal.off
	seq, err := r.journal.append(old, new, p.data, place)
	if err != nil {
		if errors.Is(err, errUnsynced) {
			// The record is in the journal all the same, and may be on disk: take it back
			// as below, so that the write fails as answered.
			if uerr := r.journal.takeBack(start); uerr != nil {
				r.broken = fmt.Errorf("%w: %v", errBroken, err)
				return t, r.broken
			}
		}
		return t, err
	}
	fault("journal-synced")
	err = placeErr
	if err == nil {
		err = r.moveRef(l)
	}
	if err != nil {
		// Take the record back, so that the write fails as answered; if even that fails,
		// reopening replays it (recover.go) and nothing is written until then.
		if uerr := r.journal.unappend(start); uerr != nil {
			r.broken = fmt.Errorf("%w: %v", errBroken, err)
			return t, r.broken
		}
		return t, err
	}
	fault("ref-moved")
	r.syncer.add(syncItem{seq: seq})
	t.Pack += placing
	t.Durable = time.Since(t1) - placing
	return t, nil
}

// checkpointBytes is how much journal the writer lets pile up before it checkpoints. A
// record holds its group's pack, and at 100,000 memories in folders of 100 a write's pack is
// 40 KB (the 1,000-entry tree above the folders, whole). With 512 KB, the journal passed four
// times that between two rounds of a syncer busy with merges' packs, and the writer waited
// for it: 0.2 ms a write, in a trace of 2,000 writes. The syncer's rounds are now syncPause
// apart or more, about 200 such writes: 8 MB holds them, and the writer waits only past four
// times that.
const checkpointBytes = 8 << 20

// SetCheckpointBytes changes how much journal piles up before a checkpoint (tests).
func (r *Repo) SetCheckpointBytes(n int64) { r.checkpointAt = n }

// Checkpoint drops the journal's records once what they hold is durable elsewhere: the
// syncer has fsynced their packs, and main (fsynced here) is at their last commit or past
// it. Without force it does so only once the journal is past checkpointBytes. If the syncer
// has not caught up with its records by then (under steady writes it is a round behind), the
// writer goes on in the other file, the standby, and the records of the first are dropped at
// a later call, once the syncer has them: callers wait for the syncer only if the standby
// too is past four times checkpointBytes before that. The writer goroutine calls it between
// groups.
func (r *Repo) Checkpoint(force bool) error {
	if r.broken != nil {
		return r.broken
	}
	if !r.dropLeftLock() {
		// The journal's last record names main.lock's content, so that the next Open removes it.
		return fmt.Errorf("checkpoint %s: %s.lock, which could not be removed after main moved, is still there", r.path, MainRef)
	}
	j, s := r.journal, r.standby
	if s.off > 0 && r.syncer.synced.Load() >= s.seq {
		if err := r.drop(s); err != nil {
			return err
		}
	}
	if j.off == 0 && s.off == 0 {
		return nil
	}
	if !force && j.off < r.checkpointAt {
		return nil
	}
	if r.syncer.synced.Load() < j.seq {
		if !force && s.off == 0 && s.made() == nil { // if it cannot be made, wait as below
			fault("journal-switch")
			r.journal, r.standby = s, j
			s.seq = j.seq
			return nil
		}
		if !force && j.off < 4*r.checkpointAt {
			return nil
		}
		if err := r.syncer.wait(j.seq); err != nil {
			return err
		}
	}
	return r.drop(s, j) // s's records come before j's
}

// drop empties the journal files js, whose records the syncer has made durable, in order:
// main is fsynced first, at their last commit or past it.
func (r *Repo) drop(js ...*journal) error {
	js = slices.DeleteFunc(js, func(j *journal) bool { return j.off == 0 })
	if len(js) == 0 {
		return nil
	}
	fault("checkpoint-packs")
	if err := r.syncRef(); err != nil {
		return err
	}
	fault("checkpoint-ref")
	for _, j := range js {
		if err := j.reset(); err != nil {
			return err
		}
	}
	return nil
}

// ForgetJournal checkpoints and overwrites the journal with zeros, so that the content of
// its records is gone from the disk as well (a redaction's).
func (r *Repo) ForgetJournal() error {
	if err := r.Checkpoint(true); err != nil {
		return err
	}
	return errors.Join(r.journal.wipe(), r.standby.wipe())
}

// syncRef fsyncs main and the directories that hold it.
func (r *Repo) syncRef() error {
	ref := r.mainRef
	f, err := os.Open(ref)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("sync %s: %w", MainRef, err)
	}
	return durable.SyncDir(filepath.Dir(ref))
}

// syncer makes the packs that Publish placed without fsync durable, beside the writer, and
// says up to which journal record it has.
type syncer struct {
	dir *os.File // the pack directory, open from before the first pack: syncfs reports
	// a write-back error to the descriptors open when it happened
	ch     chan syncItem
	synced atomic.Uint64 // the last record whose packs are durable
	err    atomic.Pointer[error]
	moved  chan struct{} // a token after each round, for wait
	hurry  chan struct{} // a token ends the pause before the next round: someone waits
	quit   chan struct{} // closed by stop: no more pauses
	done   chan struct{}
	pause  time.Duration // between rounds
}

type syncItem struct {
	seq uint64
}

func newSyncer(dir string, seq uint64, pause time.Duration) (*syncer, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	s := &syncer{dir: f, ch: make(chan syncItem, 4096), moved: make(chan struct{}, 1), hurry: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}), pause: pause}
	s.synced.Store(seq)
	go s.run()
	return s, nil
}

// add queues a record for the next round. The writer would block on a full queue until
// the pause ended: past half full, the round starts now.
func (s *syncer) add(it syncItem) {
	s.ch <- it
	if len(s.ch) > cap(s.ch)/2 {
		s.wake()
	}
}

// syncPause is the least time between two rounds of the syncer, unless someone waits for
// one. A round's cost is nearly the same for one pack as for a hundred, and what it writes
// out is every pack placed since the round before and still there: a merge takes a group's
// pack with the next 60 or so and removes it, and a pack removed before any round never
// reaches the disk (its merged pack does, fsynced by the merge). With rounds every 20 ms
// nearly every group's pack was written out, 40 KB a write at 100,000 memories, and the
// journal's fdatasync and the merges waited behind those writes. With 150 ms, in three
// runs alternating with 20 ms, a write took 0.70-0.76 ms at 100,000 memories against
// 0.82-0.90 ms, and 0.49-0.59 ms at 100 against 0.63-0.67 ms; merges took half the time
// (performance.md, The syncer's pause).
var syncPause = 150 * time.Millisecond // read by Open: a test may change it before

func (s *syncer) run() {
	defer close(s.done)
	pause := time.NewTimer(s.pause)
	defer pause.Stop()
	for it := range s.ch {
		last := it.seq
		// Take what else is queued: one round makes them all durable.
	batch:
		for {
			select {
			case more, ok := <-s.ch:
				if !ok {
					break batch
				}
				last = more.seq
			default:
				break batch
			}
		}
		if err := s.syncNow(); err == nil && s.err.Load() == nil {
			s.synced.Store(last)
		}
		select {
		case s.moved <- struct{}{}:
		default:
		}
		pause.Reset(s.pause)
		select {
		case <-pause.C:
		case <-s.hurry:
		case <-s.quit:
		}
	}
}

// wake ends the syncer's pause, if it is in one, so that its next round starts now.
func (s *syncer) wake() {
	select {
	case s.hurry <- struct{}{}:
	default:
	}
}

// syncNow makes everything written to the pack directory's file system durable. An error
// sticks: the packs it covered may not be on disk, so no checkpoint may drop their records
// until reopening (whose recovery installs them again from the journal).
func (s *syncer) syncNow() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	var round string
	if FaultHook != nil {
		round = strconv.FormatUint(syncRounds.Add(1), 10)
	}
	faultAt("syncing", round)
	if err := syncFS(s.dir); err != nil {
		s.err.Store(&err)
		return err
	}
	faultAt("synced", round)
	return nil
}

// syncRounds numbers the syncer's rounds, for FaultHook's detail.
var syncRounds atomic.Uint64

// wait returns once the files of record seq are durable.
func (s *syncer) wait(seq uint64) error {
	for s.synced.Load() < seq {
		if p := s.err.Load(); p != nil {
			return *p
		}
		s.wake()
		select {
		case <-s.moved:
		case <-s.done:
			if s.synced.Load() < seq {
				return errors.New("the journal's syncer stopped")
			}
		}
	}
	return nil
}

// stop ends the syncer once it has synced what is queued.
func (s *syncer) stop() {
	close(s.quit) // a token could end a pause before the last round, not the pause after it
	close(s.ch)
	<-s.done
	s.dir.Close()
}
