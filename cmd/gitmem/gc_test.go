package main

import (
	"regexp"
	"testing"
)

func TestGCCommand(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	c.ok("", "stores", "create", "other")
	for _, p := range []string{"/a.md", "/b.md", "/c.md"} {
		c.ok("some content\n", "put", "prefs", p)
	}
	line := regexp.MustCompile(`^memstore_\w+: [\d.]+ (B|KiB|MiB) in \d+ packs and \d+ loose objects -> [\d.]+ (B|KiB|MiB) in 1 pack\(s\) and 0 loose objects \(\d+m?s\)\n$`)
	if out := c.ok("", "gc", "prefs"); !line.MatchString(out) {
		t.Errorf("gc prefs: %q", out)
	}
	out := c.ok("", "gc")
	if n := len(regexp.MustCompile(`(?m)-> .* in 1 pack\(s\) and 0 loose objects`).FindAllString(out, -1)); n != 2 {
		t.Errorf("gc of all stores: %q", out)
	}
	if got := c.ok("", "cat", "prefs", "/b.md"); got != "some content\n" {
		t.Errorf("cat after gc: %q", got)
	}
	mustContain(t, "gc of an unknown store", c.fails("", "gc", "nosuchstore"), "nosuchstore")
}

// TestRelativeDataDir runs the commands that run git on a store's repository (gc, redact,
// diff) on a data directory named relative to the folder gitmem runs in, as the default
// ./gitmem-data is.
func TestRelativeDataDir(t *testing.T) {
	c := &cli{t: t, data: "gitmem-data", dir: t.TempDir()}
	c.ok("", "stores", "create", "notes")
	c.ok("one\n", "put", "notes", "/a.md")
	c.ok("two\n", "put", "notes", "/a.md")
	first := regexp.MustCompile(`memver_\w+`).FindAllString(c.ok("", "log", "notes", "/a.md"), -1)
	if len(first) != 2 {
		t.Fatalf("log /a.md: %v", first)
	}
	mustContain(t, "diff", c.ok("", "diff", "notes", "/a.md"), "-one", "+two")
	mustContain(t, "gc", c.ok("", "gc", "notes"), "in 1 pack(s)")
	mustContain(t, "redact", c.ok("", "redact", "notes", first[1]), "redacted")
	if got := c.ok("", "cat", "notes", "/a.md"); got != "two\n" {
		t.Errorf("cat after gc and redact: %q", got)
	}
}
