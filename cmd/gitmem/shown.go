package main

import (
	"strconv"
	"strings"
	"unicode"
)

// shown is s as a line of the CLI's text output shows what others wrote (a proposal's
// title, a comment, an actor's name, a memory path): each control character (C0, DEL, C1)
// as its Go escape, \x1b for ESC, so that no text that an agent or a pushed commit chose can
// move the cursor, rewrite a line the reader sees, set the terminal's title, or break a
// table's columns.
func shown(s string) string { return escapeControls(s, "") }

// shownText is shown for a multi-line text (a diff): its newlines and tabs stay.
func shownText(s string) string { return escapeControls(s, "\n\t") }

func escapeControls(s, keep string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && !strings.ContainsRune(keep, r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) && !strings.ContainsRune(keep, r) {
			q := strconv.QuoteRune(r) // '\x1b', '\u009b', '\n'
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
