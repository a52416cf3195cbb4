package gitstore

import (
	"context"
	"testing"
)

// apiActor is the actor of the tests' writes.
var apiActor = Actor{Type: APIActor, ID: "apikey_01TESTKEY0000000000000000"}

// newTestDataDir opens a data directory in a temporary folder, closed when the test ends.
func newTestDataDir(t testing.TB, opts Options) *DataDir {
	t.Helper()
	d, err := Open(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatalf("open data directory: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close data directory: %v", err)
		}
	})
	return d
}

// openDir opens the data directory dir; the test closes it (to reopen it, as after a restart).
func openDir(t testing.TB, dir string) *DataDir {
	t.Helper()
	d, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("open data directory: %v", err)
	}
	return d
}

// mustCreate creates a store named name in d.
func mustCreate(t testing.TB, d *DataDir, name string) *Store {
	t.Helper()
	s, err := d.CreateStore(context.Background(), CreateStoreInput{Name: name, Actor: apiActor})
	if err != nil {
		t.Fatalf("create store: %v", err)
	}
	return s
}

// newTestStore creates a store in a fresh data directory.
func newTestStore(t testing.TB) *Store {
	t.Helper()
	d := newTestDataDir(t, Options{})
	s, err := d.CreateStore(context.Background(), CreateStoreInput{Name: "test", Actor: apiActor})
	if err != nil {
		t.Fatalf("create store: %v", err)
	}
	return s
}
