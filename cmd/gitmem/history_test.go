package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var versionIDRe = regexp.MustCompile(`memver_[0-9A-Z]{26}`)

// TestHistoryCommands restores, diffs and blames with the real binary.
func TestHistoryCommands(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	v1 := versionIDRe.FindString(c.ok("tabs\nEnglish\n", "put", "prefs", "/style.md"))
	v2 := versionIDRe.FindString(c.ok("spaces\nEnglish\nshort answers\n", "put", "prefs", "/style.md"))
	if v1 == "" || v2 == "" {
		t.Fatal("no version ids in put's output")
	}

	// diff: the last change, from a version to the head, and between two versions.
	want := "--- a/style.md\n+++ b/style.md\n@@ -1,2 +1,3 @@\n-tabs\n+spaces\n English\n+short answers\n"
	if got := c.ok("", "diff", "prefs", "/style.md"); got != want {
		t.Errorf("diff of the last change:\n%s", got)
	}
	if got := c.ok("", "diff", "prefs", "/style.md", v1); got != want {
		t.Errorf("diff to the head:\n%s", got)
	}
	if got := c.ok("", "diff", "prefs", "/style.md", v2, v1); !strings.Contains(got, "-spaces\n+tabs\n English\n-short answers\n") {
		t.Errorf("reverse diff:\n%s", got)
	}

	// blame: each line with its version.
	lines := strings.Split(strings.TrimSuffix(c.ok("", "blame", "prefs", "/style.md"), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], v2+" (") || !strings.HasSuffix(lines[0], " 1) spaces") ||
		!strings.HasPrefix(lines[1], v1+" (") || !strings.HasSuffix(lines[1], " 2) English") ||
		!strings.HasPrefix(lines[2], v2+" (") || !strings.HasSuffix(lines[2], " 3) short answers") {
		t.Errorf("blame:\n%s", strings.Join(lines, "\n"))
	}
	var bl struct {
		Type  string
		Lines []map[string]any
	}
	if err := json.Unmarshal([]byte(c.ok("", "blame", "prefs", "/style.md", "--json")), &bl); err != nil ||
		bl.Type != "memory_blame" || len(bl.Lines) != 3 || bl.Lines[1]["version_id"] != v1 {
		t.Errorf("blame --json: %+v %v", bl, err)
	}

	// restore: a new version with the old content; again, nothing changes.
	out := c.ok("", "restore", "prefs", v1)
	mustContain(t, "restore", out, "restored /style.md (mem_", "to version "+v1+": new version memver_")
	if got := c.ok("", "cat", "prefs", "/style.md"); got != "tabs\nEnglish\n" {
		t.Errorf("content after restore: %q", got)
	}
	mustContain(t, "second restore", c.ok("", "restore", "prefs", v1), "unchanged /style.md")
	if got := c.ok("", "diff", "prefs", "/style.md", v1); got != "" {
		t.Errorf("diff of identical content: %q", got)
	}

	// A deleted memory: diff by path shows the deletion; restore brings it back.
	c.ok("", "rm", "prefs", "/style.md")
	if got := c.ok("", "diff", "prefs", "/style.md"); got != "--- a/style.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-tabs\n-English\n" {
		t.Errorf("diff of a deletion:\n%s", got)
	}
	mustContain(t, "blame of a deleted memory", c.fails("", "blame", "prefs", "/style.md"), "no memory at /style.md")
	c.ok("", "restore", "prefs", v2)
	if got := c.ok("", "cat", "prefs", "/style.md"); got != "spaces\nEnglish\nshort answers\n" {
		t.Errorf("content after restoring a deleted memory: %q", got)
	}
	mustContain(t, "log", c.ok("", "log", "prefs", "/style.md", "--op", "created"), v1)

	// Refusals.
	mustContain(t, "unknown version", c.fails("", "restore", "prefs", "memver_01NOSUCHVERSION0000000000"), "not found")
	c.ok("", "mv", "prefs", "/style.md", "/moved.md")
	c.ok("other\n", "put", "prefs", "/style.md")
	mustContain(t, "taken path", c.fails("", "restore", "prefs", v1), "path /style.md is already taken by memory mem_")
	mustContain(t, "diff across memories", c.fails("", "diff", "prefs", "/style.md", v1), "belongs to memory")
}
