package gitserve

import (
	"strings"
	"testing"
)

// TestFoldKey: two names have the same fold key exactly when strings.EqualFold, which the
// check of names that differ only in case stood on, says they are equal.
func TestFoldKey(t *testing.T) {
	names := []string{"", "a", "A", "ab", "aB", "Ab", "K", "k", "\u212a", "ß", "ẞ", "ss", "σ", "ς", "Σ",
		"ǅ", "ǆ", "Ǆ", "İ", "i", "I", "ı", "\xff", "\xfe", "\ufffd", "a\xff", "A\xfe", "é.md", "É.md", "e\u0301.md",
		"Notes.md", "notes.MD", "notes.md "}
	for _, a := range names {
		for _, b := range names {
			if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
				t.Errorf("%q and %q: same fold key %v, EqualFold %v", a, b, got, want)
			}
		}
	}
}
