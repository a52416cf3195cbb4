package main

import (
	"strconv"
	"strings"
	"unicode"
)

// shown is s as a line of the CLI's text output shows what others wrote (a proposal's
// title, a comment, an actor's name, a memory path): each control character (C0, DEL, C1)
// and each bidirectional control (bidi) as its Go escape, \x1b for ESC, so that no text
// that an agent or a pushed commit chose can move the cursor, rewrite or reorder a line the
// reader sees, set the terminal's title, or break a table's columns.
func shown(s string) string { return escapeControls(s, "") }

// shownText is shown for a multi-line text (a diff): its newlines and tabs stay.
func shownText(s string) string { return escapeControls(s, "\n\t") }

func escapeControls(s, keep string) string {
	escaped := func(r rune) bool { return (unicode.IsControl(r) || bidi(r)) && !strings.ContainsRune(keep, r) }
	if !strings.ContainsFunc(s, escaped) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if escaped(r) {
			q := strconv.QuoteRune(r) // '\x1b', '\u009b', '\n'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bidi tells whether r reorders the text around it as a terminal shows it: Unicode's
// bidirectional embeddings, overrides and isolates, and its direction marks. With them a
// proposal's title or a line of its diff can show other than what it holds to the person
// who approves it.
func bidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}
