package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRedactCommand redacts a version with the real binary and reads it back.
func TestRedactCommand(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	leak := versionIDRe.FindString(c.ok("db password: OCELOT-42\n", "put", "prefs", "/creds.md"))
	cur := versionIDRe.FindString(c.ok("ask the admin\n", "put", "prefs", "/creds.md"))

	mustContain(t, "redact of the current version", c.fails("", "redact", "prefs", cur),
		"is the current version of memory", "update or delete the memory first")
	mustContain(t, "redact of an unknown version", c.fails("", "redact", "prefs", "memver_01NOSUCHVERSION0000000000"), "not found")

	mustContain(t, "redact", c.ok("", "redact", "prefs", leak), "redacted version "+leak+" of memory mem_", "rewrote 2 commits, main ")
	mustContain(t, "second redact", c.ok("", "redact", "prefs", leak), "was redacted already", "nothing changed")
	var v map[string]any
	if err := json.Unmarshal([]byte(c.ok("", "redact", "prefs", leak, "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v["id"] != leak || v["path"] != nil || v["content_sha256"] != nil || v["redacted_at"] == nil || v["redacted_by"] == nil {
		t.Errorf("redact --json: %v", v)
	}
	log := c.ok("", "log", "prefs", "/creds.md")
	if !strings.Contains(log, "(redacted)") || !strings.Contains(log, leak) {
		t.Errorf("log after the redaction:\n%s", log)
	}
	if got := c.ok("", "cat", "prefs", "/creds.md"); got != "ask the admin\n" {
		t.Errorf("content after the redaction: %q", got)
	}
}
