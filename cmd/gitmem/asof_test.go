package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAsOfCommands reads with cat and ls as of a time and as of a commit, with the real binary.
func TestAsOfCommands(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	before := time.Now().UTC()
	time.Sleep(5 * time.Millisecond)
	c.ok("tabs\n", "put", "prefs", "/style.md")
	time.Sleep(5 * time.Millisecond)
	t1 := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(5 * time.Millisecond)
	c.ok("spaces\n", "put", "prefs", "/style.md")
	c.ok("tea\n", "put", "prefs", "/drinks/tea.md")

	if got := c.ok("", "cat", "prefs", "/style.md", "--at", t1); got != "tabs\n" {
		t.Errorf("cat --at %s: %q", t1, got)
	}
	if got := c.ok("", "cat", "prefs", "/style.md"); got != "spaces\n" {
		t.Errorf("cat now: %q", got)
	}
	if got := c.ok("", "ls", "prefs", "--at", t1); got != "/style.md\n" {
		t.Errorf("ls --at %s: %q", t1, got)
	}
	if got := c.ok("", "ls", "prefs", "-R", "--at", "2999-01-01T00:00:00Z"); got != "/drinks/tea.md\n/style.md\n" {
		t.Errorf("ls --at the future: %q", got)
	}
	if got := c.ok("", "ls", "prefs", "--at", before.Format(time.RFC3339Nano)); got != "" {
		t.Errorf("ls before the first memory: %q", got)
	}
	mustContain(t, "cat before it existed", c.fails("", "cat", "prefs", "/drinks/tea.md", "--at", t1), "no memory at /drinks/tea.md")

	// By commit: main's parent is the second write of /style.md.
	repos, _ := filepath.Glob(filepath.Join(c.data, "stores", "*.git"))
	if len(repos) != 1 {
		t.Fatalf("repositories: %v", repos)
	}
	out, err := exec.Command("git", "-C", repos[0], "rev-parse", "main~1", "main~2").Output()
	if err != nil {
		t.Fatal(err)
	}
	hashes := strings.Fields(string(out))
	if got := c.ok("", "cat", "prefs", "/style.md", "--at", hashes[0][:8]); got != "spaces\n" {
		t.Errorf("cat --at %s: %q", hashes[0][:8], got)
	}
	if got := c.ok("", "cat", "prefs", "/style.md", "--at", hashes[1]); got != "tabs\n" {
		t.Errorf("cat --at %s: %q", hashes[1], got)
	}
	if got := c.ok("", "ls", "prefs", "-R", "--at", hashes[0]); got != "/style.md\n" {
		t.Errorf("ls --at %s: %q", hashes[0], got)
	}
	mustContain(t, "bad at", c.fails("", "ls", "prefs", "--at", "last monday"), "RFC 3339", "a date", "commit hash")
	// The forms people type: a time ago, a date, today (before the first write: empty).
	if got := c.ok("", "ls", "prefs", "-R", "--at", "now"); got != c.ok("", "ls", "prefs", "-R") {
		t.Errorf("ls --at now: %q", got)
	}
	if got := c.ok("", "ls", "prefs", "-R", "--at", "2001-01-01"); got != "" {
		t.Errorf("ls --at 2001-01-01: %q", got)
	}
	// Through a server the refusal says as of when, as it does on the data directory.
	startServe(t, c)
	mustContain(t, "cat before it existed, through the server", c.fails("", "cat", "prefs", "/drinks/tea.md", "--at", t1), "no memory at /drinks/tea.md as of "+t1)
}
