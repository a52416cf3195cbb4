package tooladapter

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

var testActor = gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_01TESTKEY0000000000000000"}

// newTestData opens a data directory in a temporary folder, closed when the test ends.
func newTestData(t testing.TB) *gitstore.DataDir {
	t.Helper()
	d, err := gitstore.Open(context.Background(), t.TempDir(), gitstore.Options{})
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

// newTestStore creates a store named name, holding files (memory path without the leading
// "/" -> content).
func newTestStore(t testing.TB, d *gitstore.DataDir, name string, files map[string]string) *gitstore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := d.CreateStore(ctx, gitstore.CreateStoreInput{Name: name, Actor: testActor})
	if err != nil {
		t.Fatalf("create store: %v", err)
	}
	for p, c := range files {
		if _, err := st.Write(ctx, gitstore.WriteInput{Path: "/" + p, Content: c, Actor: testActor}); err != nil {
			t.Fatalf("seed %s: %v", p, err)
		}
	}
	return st
}

// newTestSession is a session over one new store holding files.
func newTestSession(t testing.TB, files map[string]string) (*Session, *gitstore.Store) {
	t.Helper()
	st := newTestStore(t, newTestData(t), "test", files)
	s, err := NewSession(context.Background(), Options{Stores: []Attachment{{Store: st}}})
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	return s, st
}

// call runs a tool with an input given as a Go value and fails the test on an internal
// error.
func call(t testing.TB, s *Session, tool string, in any) Result {
	t.Helper()
	raw, ok := in.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(in); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Call(context.Background(), tool, raw)
	if err != nil {
		t.Fatalf("%s %s: internal error: %v", tool, raw, err)
	}
	return res
}

// files returns every memory of a store: path without the leading "/" -> content.
func files(t testing.TB, st *gitstore.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	opts := gitstore.ListOptions{Limit: 1000, WithContent: true}
	for {
		page, err := st.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[it.Memory.Path[1:]] = *it.Memory.Content
		}
		if page.NextCursor == "" {
			return out
		}
		opts.Cursor = page.NextCursor
	}
}
