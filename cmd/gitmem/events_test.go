package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
)

// follow reads a store's events from now on, through the client's stream reader, into a
// channel, until the test ends; it returns once the stream is open.
func follow(t *testing.T, url, store string) <-chan client.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events := make(chan client.Event, 100)
	opened := make(chan struct{})
	go client.New(url, "").Store(store).Events(ctx, "now", func() { close(opened) }, func(ev client.Event) error {
		events <- ev
		return nil
	})
	select {
	case <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("the event stream did not open")
	}
	return events
}

// expect waits for the next events and checks each one's type and path.
func expect(t *testing.T, events <-chan client.Event, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case ev := <-events:
			if got := ev.Type + " " + ev.Path; got != w {
				t.Fatalf("event %q, want %q", got, w)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no event; want %q", w)
		}
	}
}

// TestEventsOfExpiryAndSync: memories deleted by expiry, and those that a sync brings from
// a remote (a merge with local changes), are events too, read through the client's stream.
func TestEventsOfExpiryAndSync(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	ctx := context.Background()
	past := time.Now().Add(-40 * 24 * time.Hour)
	d, err := gitstore.Open(ctx, c.data, gitstore.Options{Clock: func() time.Time { return past }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.CreateStore(ctx, gitstore.CreateStoreInput{Name: "team", Actor: gitstore.SystemActor,
		Policy: gitstore.Policy{ExpireAfter: gitstore.Duration(30 * 24 * time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, gitstore.WriteInput{Path: "/old.md", Content: "from long ago", Actor: gitstore.SystemActor}); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	d.Close()
	remote := bareRemote(t)
	c.ok("", "remote", "add", "team", "origin", remote)
	c.ok("", "sync", "team")

	url, _ := serveWith(t, c, []string{"--sync-interval", "0", "--sync-after-write", "0"})
	events := follow(t, url, id)
	c.ok("mark\n", "put", "team", "/mark.md")
	expect(t, events, "memory.created /mark.md")

	c.ok("", "expire", "team")
	expect(t, events, "memory.deleted /old.md")

	// Someone else pushes to the remote; our store has a change of its own: sync merges.
	work := filepath.Join(t.TempDir(), "w")
	gitIn(t, filepath.Dir(work), "clone", "-q", remote, work)
	if err := os.WriteFile(filepath.Join(work, "theirs.md"), []byte("from the remote\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, work, "add", "-A")
	gitIn(t, work, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", "commit", "-qm", "theirs")
	gitIn(t, work, "push", "-q")
	c.ok("ours\n", "put", "team", "/ours.md")
	expect(t, events, "memory.created /ours.md")
	out := c.ok("", "sync", "team")
	if !strings.Contains(out, "merged") && !strings.Contains(out, "fetched") {
		t.Fatalf("sync: %s", out)
	}
	expect(t, events, "memory.created /theirs.md")
}
