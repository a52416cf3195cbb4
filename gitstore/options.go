package gitstore

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Options tune a DataDir. The zero value is ready to use.
type Options struct {
	// Logger receives the store's logs; slog.Default() if nil.
	Logger *slog.Logger
	// Clock returns the time of new versions; time.Now if nil. Tests inject their own.
	Clock func() time.Time
	// MaxPacks is how many packs the writer lets pile up (it writes one per group of
	// commits) before it merges the smallest (default 64); once idle for IdlePack (default
	// 2s) it merges them down to 8 and packs loose objects that git processes wrote.
	MaxPacks int
	IdlePack time.Duration
	// Observer is told what the stores do, for metrics; nothing if nil.
	Observer Observer

	dataDir string // the data directory's path, which storage errors name files relative to
	// fork: the store opened is a proposal's fork (OpenFork), whose repository keeps no
	// empty files ready for its writer.
	fork bool
	// checkpointBytes, if set, is how much journal piles up before a checkpoint (the
	// power-loss test sets it low, so that checkpoints happen often).
	checkpointBytes int64
	// lagIndex, if set (by tests of the listings by session and key), keeps the writer from
	// adding versions to sesver and keyver between groups and when idle: only the open,
	// a catch-up with main and the test do (Store.indexActors).
	lagIndex bool
	// redactWrap holds the data directory's RedactWrapper (WrapRedact), shared by its stores.
	redactWrap *atomic.Pointer[RedactWrapper]
	// forkMarks keeps the list of redactions that the forks may lack (forkmarks.go); nil
	// for a store opened outside a data directory.
	forkMarks *forkMarks
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxPacks <= 0 {
		o.MaxPacks = 64
	}
	if o.IdlePack <= 0 {
		o.IdlePack = 2 * time.Second
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	return o
}
