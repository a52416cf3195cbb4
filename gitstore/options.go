package gitstore

import (
	"log/slog"
	"time"
)

// Options tune a DataDir. The zero value is ready to use.
type Options struct {
	// Logger receives the store's logs; slog.Default() if nil.
	Logger *slog.Logger
	// Clock returns the time of new versions; time.Now if nil. Tests inject their own.
	Clock func() time.Time
	// PackLoose is how many loose objects the writer lets pile up before it packs them
	// (default 4096); IdlePack is how long the writer waits idle before it packs any
	// (default 2s).
	PackLoose int
	IdlePack  time.Duration
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.PackLoose <= 0 {
		o.PackLoose = 4096
	}
	if o.IdlePack <= 0 {
		o.IdlePack = 2 * time.Second
	}
	return o
}
