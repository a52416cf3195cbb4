// Package suspect says, in one place for the CLI, the review UI and the API's checks, which
// runes of a text that others wrote can hide or reorder what a reader sees:
//
//   - control characters (C0, DEL and C1): in a terminal they move the cursor, erase or
//     rewrite a line, or set the window's title; in a page a lone carriage return breaks a
//     line that was one;
//   - Unicode's bidirectional controls (embeddings, overrides, isolates and direction marks):
//     they reorder the text around them, so that a line (a diff's, a title) shows other than
//     what it holds ("Trojan Source");
//   - invisible characters that carry text or split words unseen: the tag characters
//     (U+E0000-E007F), one for each ASCII character, which a model reads as text but no
//     reader sees, so that a memory can hold instructions its reviewer cannot; the zero-width
//     space, the word joiner, the invisible operators and the zero-width no-break space.
//
// The CLI and the UI show such runes escaped (String, Escape); the API refuses the control
// characters where text has no use for them (Line, Text), and keeps the bidirectional controls,
// which right-to-left writing needs.
package suspect

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Bidi tells whether r is a bidirectional control: U+202A-202E (embeddings, overrides and
// their end), U+2066-2069 (isolates and their end), and the direction marks U+200E, U+200F
// and U+061C.
func Bidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// Control tells whether r is a control character: C0 (U+0000-001F), DEL (U+007F) or C1
// (U+0080-009F).
func Control(r rune) bool { return unicode.IsControl(r) }

// Invisible tells whether r is an invisible character that can carry or split text unseen:
// a tag character (U+E0000-E007F), the zero-width space (U+200B), the word joiner and the
// invisible operators (U+2060-2064), or the zero-width no-break space (U+FEFF). The
// zero-width joiner and non-joiner (U+200C, U+200D) are not: emoji and several scripts
// need them, and they carry nothing alone. (A flag of a part of a country, an emoji of tag
// characters, shows escaped.)
func Invisible(r rune) bool {
	return r >= 0xe0000 && r <= 0xe007f || r == 0x200b || r >= 0x2060 && r <= 0x2064 || r == 0xfeff
}

// Rune tells whether r is shown escaped in others' text: a control character, a
// bidirectional control or an invisible character.
func Rune(r rune) bool { return Control(r) || Bidi(r) || Invisible(r) }

// Escape is r as Go writes it in a quoted string: \x1b, \a, \u009b, \u202e, \n.
func Escape(r rune) string {
	q := strconv.QuoteRune(r)
	return q[1 : len(q)-1]
}

// String is s with each Rune escaped (Escape), except the runes in keep ("\n\t" for a text
// of lines that a terminal shows as lines).
func String(s, keep string) string {
	escaped := func(r rune) bool { return Rune(r) && !strings.ContainsRune(keep, r) }
	if !strings.ContainsFunc(s, escaped) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if escaped(r) {
			b.WriteString(Escape(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Layout tells whether r, at byte i of s, lays out a text of lines: a line feed, a tab, or a
// carriage return just before a line feed (\r\n, as a browser's form sends a textarea's
// lines). A lone carriage return is not: a terminal goes back over the line with it, and a
// page breaks the line there.
func Layout(s string, i int, r rune) bool {
	return r == '\n' || r == '\t' || r == '\r' && i+1 < len(s) && s[i+1] == '\n'
}

// Line finds the first control character of s, a text of one line (a title, a name): every
// control character is refused there. ok is false if there is none.
func Line(s string) (at int, r rune, ok bool) {
	for i, r := range s {
		if Control(r) {
			return i, r, true
		}
	}
	return 0, 0, false
}

// Text finds the first control character of s, a text of lines (a comment, a description),
// that does not lay it out (Layout): line breaks (\n, \r\n) and tabs are its text, and no
// other control character is. ok is false if there is none.
func Text(s string) (at int, r rune, ok bool) {
	for i, r := range s {
		if Control(r) && !Layout(s, i, r) {
			return i, r, true
		}
	}
	return 0, 0, false
}

// LineError is the message that refuses what (a field: "title") of one line for s, or "" if
// s has no control character.
func LineError(what, s string) string {
	at, r, ok := Line(s)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s has a control character (U+%04X) at byte %d: it is one line of text, without control characters", what, r, at)
}

// TextError is the message that refuses what (a field: "comment") of lines for s, or "" if
// s has no control character but line breaks and tabs.
func TextError(what, s string) string {
	at, r, ok := Text(s)
	if !ok {
		return ""
	}
	return fmt.Sprintf(`%s has a control character (U+%04X) at byte %d: it may hold line breaks (\n or \r\n) and tabs, and no other control character`, what, r, at)
}
