package main

import (
	"context"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// asSession writes as a session, through the store package (the CLI writes as its user),
// with the data directory closed again before the binary runs.
func asSession(t *testing.T, c *cli, store string, fn func(s *gitstore.Store, a gitstore.Actor)) {
	t.Helper()
	ctx := context.Background()
	d, err := gitstore.Open(ctx, c.data, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err := findStore(ctx, d, store)
	if err != nil {
		t.Fatal(err)
	}
	fn(s, gitstore.Actor{Type: gitstore.SessionActor, ID: "sesn_01CLIREVERT00000000000000", APIKeyID: "apikey_01CLIREVERTKEY"})
}

// TestRevertCommand reverts a session's changes with the real binary: the dry run, the
// revert, a second revert, and the refusals.
func TestRevertCommand(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("tea\n", "put", "notes", "/prefs.md")
	c.ok("old plan\n", "put", "notes", "/plan.md")
	asSession(t, c, "notes", func(s *gitstore.Store, a gitstore.Actor) {
		ctx := context.Background()
		m, _ := s.GetByPath(ctx, "/prefs.md", false)
		p := "coffee\n"
		if _, err := s.UpdateMemory(ctx, gitstore.UpdateInput{ID: m.ID, Content: &p, Actor: a}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, gitstore.WriteInput{Path: "/todo.md", Content: "call Ann\n", Actor: a}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, gitstore.WriteInput{Path: "/plan.md", Content: "new plan\n", Actor: a}); err != nil {
			t.Fatal(err)
		}
	})
	c.ok("my plan\n", "put", "notes", "/plan.md") // the user changes /plan.md after the session

	out := c.ok("", "revert", "notes", "--session", "sesn_01CLIREVERT00000000000000", "--dry-run")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "RESULT ") ||
		!strings.HasPrefix(lines[1], "restored ") || !strings.Contains(lines[1], "/prefs.md") || strings.Contains(lines[1], "new version") ||
		!strings.HasPrefix(lines[2], "deleted ") || !strings.Contains(lines[2], "/todo.md") || !strings.Contains(lines[2], "created in the range") ||
		!strings.HasPrefix(lines[3], "skipped ") || !strings.Contains(lines[3], "/plan.md") || !strings.Contains(lines[3], "changed later by ") ||
		lines[4] != "would revert 2, skipped 1, unchanged 0 (changes of session sesn_01CLIREVERT00000000000000); dry run: nothing was written" {
		t.Fatalf("dry run:\n%s", out)
	}
	if got := c.ok("", "cat", "notes", "/todo.md"); got != "call Ann\n" {
		t.Fatalf("the dry run changed /todo.md: %q", got)
	}

	out = c.ok("", "revert", "notes", "--session", "sesn_01CLIREVERT00000000000000", "--since", "2000-01-01T00:00:00Z")
	mustContain(t, "revert", out, "new version memver_", "reverted 2, skipped 1, unchanged 0")
	if got := c.ok("", "cat", "notes", "/prefs.md"); got != "tea\n" {
		t.Errorf("/prefs.md after the revert: %q", got)
	}
	if got := c.ok("", "cat", "notes", "/plan.md"); got != "my plan\n" {
		t.Errorf("/plan.md after the revert: %q", got)
	}
	mustContain(t, "cat a reverted creation", c.fails("", "cat", "notes", "/todo.md"), "no memory at /todo.md")
	mustContain(t, "log", c.ok("", "log", "notes", "/prefs.md", "-n", "1"), "modified")

	out = c.ok("", "revert", "notes", "--session", "sesn_01CLIREVERT00000000000000")
	mustContain(t, "second revert", out, "unchanged  /prefs.md", "unchanged  /todo.md", "reverted 0, skipped 1, unchanged 2")
	mustContain(t, "revert by key", c.ok("", "revert", "notes", "--key", "apikey_01CLIREVERTKEY", "--until", "2001-01-01T00:00:00Z"),
		"API key apikey_01CLIREVERTKEY changed no memory in that range: nothing to revert")

	mustContain(t, "neither", c.fails("", "revert", "notes"), "give exactly one of --session and --key")
	mustContain(t, "both", c.fails("", "revert", "notes", "--session", "sesn_1", "--key", "apikey_1"), "give exactly one of --session and --key")
	mustContain(t, "bad time", c.fails("", "revert", "notes", "--session", "sesn_1", "--since", "monday"),
		`--since: time "monday" must be an RFC 3339 time`, "a date (2026-01-02)", "today")
}
