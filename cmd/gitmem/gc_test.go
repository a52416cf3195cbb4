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
