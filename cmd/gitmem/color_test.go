package main

import "testing"

// TestColorDiff: a diff on a terminal is colored as git colors it; elsewhere it is unchanged.
func TestColorDiff(t *testing.T) {
	diff := "--- a/x.md\n+++ b/x.md\n@@ -1 +1 @@\n-old\n+new\n same\n"
	if got := colorDiff(diff, false); got != diff {
		t.Errorf("without color: %q", got)
	}
	want := "\033[1m--- a/x.md\033[0m\n\033[1m+++ b/x.md\033[0m\n\033[36m@@ -1 +1 @@\033[0m\n\033[31m-old\033[0m\n\033[32m+new\033[0m\n same\n"
	if got := colorDiff(diff, true); got != want {
		t.Errorf("with color: %q, want %q", got, want)
	}
}
