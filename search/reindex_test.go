package search

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestRebuildBuildsOnce: a rebuild that is a store's first use (gitmem reindex, on an index
// that is missing or damaged) builds the index once, with its progress, not a first time
// by the catch-up that starts an indexer and again for the rebuild.
func TestRebuildBuildsOnce(t *testing.T) {
	var batches atomic.Int64
	f := newFixture(t, Options{BatchSize: 10, afterBatch: func(done, total int) { batches.Add(1) }})
	for i := range 30 {
		f.write(fmt.Sprintf("/notes/n%02d.md", i), fmt.Sprintf("note number%02d\n", i))
	}
	var last [2]int
	if err := f.svc.Rebuild(f.ctx, f.st.ID(), func(done, total int) { last = [2]int{done, total} }); err != nil {
		t.Fatal(err)
	}
	if got := batches.Load(); got != 3 {
		t.Errorf("the first rebuild applied %d batches of 10, want 3 (30 memories, built once)", got)
	}
	if last != [2]int{30, 30} {
		t.Errorf("last progress %v, want [30 30]", last)
	}
	f.expect("number07", "/notes/n07.md")

	// A rebuild while the indexer runs starts over once too.
	batches.Store(0)
	if err := f.svc.Rebuild(f.ctx, f.st.ID(), nil); err != nil {
		t.Fatal(err)
	}
	if got := batches.Load(); got != 3 {
		t.Errorf("the second rebuild applied %d batches, want 3", got)
	}
	f.expect("number29", "/notes/n29.md")
}
