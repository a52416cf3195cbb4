package gitstore

import "time"

// Observer is told what the stores do, for metrics (the metrics package implements it). Its
// methods are called on the write path: they must be quick and never block.
type Observer interface {
	// GroupCommitted: a group of requests (writes, deletes, settings) reached main as
	// commits: its size, the time to write its objects durably (a pack and its fsyncs)
	// and to move main (the ref's lock, fsync and rename).
	GroupCommitted(storeID string, requests int, pack, ref time.Duration)
	// PacksMerged: the maintainer packed loose objects or merged packs (a run that found
	// neither to do is not reported); packs is how many are left.
	PacksMerged(storeID string, packs int, took time.Duration)
	// SecretsRefused: a write was refused for the secrets it held (the secrets policy is
	// reject), or had them redacted.
	SecretsRefused(storeID string, redacted bool)
	// Redacted: a version's content was taken out of history.
	Redacted(storeID string)
}

// nopObserver is the Observer of a data directory opened without one.
type nopObserver struct{}

func (nopObserver) GroupCommitted(string, int, time.Duration, time.Duration) {}
func (nopObserver) PacksMerged(string, int, time.Duration)                   {}
func (nopObserver) SecretsRefused(string, bool)                              {}
func (nopObserver) Redacted(string)                                          {}
