package tooladapter

import (
	"context"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// TestClosedStoreSaysRetry: a tool call that reaches a store closed under it (a server
// shutting down) is an error result, not an internal error, and tells the model that the
// state is short-lived: try again in a moment.
func TestClosedStoreSaysRetry(t *testing.T) {
	d, err := gitstore.Open(context.Background(), t.TempDir(), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := newTestStore(t, d, "test", map[string]string{"a.md": "a"})
	s, err := NewSession(context.Background(), Options{Stores: []Attachment{{Store: st}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	res := call(t, s, WriteTool, map[string]string{"path": "/memories/b.md", "content": "b"})
	if !res.IsError || !strings.Contains(res.Content, "try again in a moment") {
		t.Errorf("write to a closed store: %+v, want an error result that says to try again", res)
	}
}
