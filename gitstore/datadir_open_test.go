package gitstore

import (
	"context"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestStoreOpensApart: a store that is slow to open (its catalog held by another handle, so
// that the open waits for bbolt's lock) holds up only the callers that want it: another store
// opens meanwhile, callers of the slow one share its one opening, a caller that gives up
// returns at once, and Close waits for the opening.
func TestStoreOpensApart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openDir(t, dir)
	slowID, quickID := mustCreate(t, d, "slow").ID(), mustCreate(t, d, "quick").ID()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openDir(t, dir)

	// bbolt locks its file: the slow store's open waits up to its 2 s timeout.
	held, err := bolt.Open(d.catalogPath(slowID), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		s   *Store
		err error
	}
	first, second := make(chan res, 1), make(chan res, 1)
	go func() { s, err := d.Store(ctx, slowID); first <- res{s, err} }()
	go func() { s, err := d.Store(ctx, slowID); second <- res{s, err} }()
	time.Sleep(100 * time.Millisecond)

	if _, err := d.Store(ctx, quickID); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-first:
		t.Fatalf("the slow store's open returned (%v) before the quick one's; it should be held", r.err)
	default:
	}
	gaveUp, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := d.Store(gaveUp, slowID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a caller that gave up got %v", err)
	}

	held.Close() // the open goes on now; if it timed out already, it reports an error
	a, b := <-first, <-second
	if (a.err == nil) != (b.err == nil) || a.s != b.s {
		t.Fatalf("two callers of one opening got %v/%v and %p/%p", a.err, b.err, a.s, b.s)
	}
	if a.err == nil {
		if s, err := d.Store(ctx, slowID); err != nil || s != a.s {
			t.Fatalf("after its opening: %p, %v", s, err)
		}
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Store(ctx, quickID); !errors.Is(err, ErrStoreClosed) {
		t.Fatalf("after Close: %v", err)
	}

	// Close waits for a store being opened, which its opening then closes.
	d = openDir(t, dir)
	if held, err = bolt.Open(d.catalogPath(slowID), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	go func() { s, err := d.Store(ctx, slowID); first <- res{s, err} }()
	time.Sleep(100 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a store was being opened", err)
	default:
	}
	held.Close()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.err == nil {
		t.Fatal("a store opened as the data directory closed was handed out")
	}
	// Nothing holds the catalog now: a store left open would keep bbolt's lock.
	check, err := bolt.Open(d.catalogPath(slowID), 0o644, &bolt.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("the catalog is still held after Close: %v", err)
	}
	check.Close()
}
