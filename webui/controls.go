package webui

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"html/template"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/gitmem/gitmem/internal/suspect"
)

// Every page shows the control characters and bidirectional controls of the text that
// others wrote (a proposal's title, a comment, an actor's name from a pushed commit, a path,
// a line of a diff, a memory's content, as Markdown too) as what they are, never as what
// they do: a bidirectional control (U+202E) would reorder what follows it, so that a line of
// a diff reads other than what it holds ("Trojan Source"); a lone carriage return would break
// a line of a diff in two, the second without its + or -. Which runes those are is package
// suspect's to say, as for the CLI.
//
// It is done once, on each page as rendered (UI.render), rather than in each template: the
// page's text, wherever it came from (a template's field, the Markdown renderer, an error's
// message), is HTML, read here as a browser reads it. Each such rune of the text is shown
// as its Go escape in a marked span (<span class="ctl" title="...">\u202e</span>), the
// first maxMarks of a page, the others as the escape alone (a page full of them would grow
// by a span for each); where no markup may stand (the page's <title>, an <option>) and in
// attributes (a link's title) as the escape alone. Line breaks (\n, \r\n) and tabs stay:
// in HTML they are white space, or the lines of a <pre>. A form's field keeps what it holds
// (a <textarea>'s text, a value attribute), so that saving it writes back the text as it
// is: the editor says, above the text, how many such runes it holds.

// showControls returns page with the suspect runes of its text shown (see above). A page
// without any is returned as it is, after one pass over its bytes.
func showControls(page []byte) []byte {
	if !mayHoldSuspect(page) {
		return page
	}
	z := html.NewTokenizer(bytes.NewReader(page))
	var out bytes.Buffer
	out.Grow(len(page) + 512)
	plain := "" // the element whose text takes no markup ("title", "option"), or keeps it ("textarea")
	marks := maxMarks
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF { // never, from a byte slice: keep the page as it was
				return page
			}
			break
		}
		raw := bytes.Clone(z.Raw()) // Token and TagName may change what Raw returned
		switch tt {
		case html.TextToken:
			text := html.UnescapeString(string(raw))
			switch {
			case !holdsSuspect(text), plain == "textarea":
				out.Write(raw)
			case plain != "":
				out.WriteString(template.HTMLEscapeString(escapeSuspects(text)))
			default:
				markSuspects(&out, text, &marks)
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "title", "textarea", "option":
				plain = tok.Data
			}
			changed := false
			for i, a := range tok.Attr {
				if a.Key != "value" && holdsSuspect(a.Val) { // a form's value goes back as it is
					tok.Attr[i].Val, changed = escapeSuspects(a.Val), true
				}
			}
			if changed {
				out.WriteString(tok.String())
			} else {
				out.Write(raw)
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == plain || string(name) == "select" {
				plain = ""
			}
			out.Write(raw)
		default:
			out.Write(raw)
		}
	}
	return out.Bytes()
}

// shownAsIs tells whether r, at byte i of s, shows as it is: not suspect, or the line break
// or tab of a text of lines (suspect.Layout).
func shownAsIs(s string, i int, r rune) bool { return !suspect.Rune(r) || suspect.Layout(s, i, r) }

// holdsSuspect tells whether s holds a rune that a page shows escaped.
func holdsSuspect(s string) bool {
	for i, r := range s {
		if !shownAsIs(s, i, r) {
			return true
		}
	}
	return false
}

// countSuspects is how many runes of s a page shows escaped.
func countSuspects(s string) int {
	n := 0
	for i, r := range s {
		if !shownAsIs(s, i, r) {
			n++
		}
	}
	return n
}

// escapeSuspects is s with each rune that a page shows escaped as its escape alone.
func escapeSuspects(s string) string {
	var b strings.Builder
	for i, r := range s {
		if shownAsIs(s, i, r) {
			b.WriteRune(r)
		} else {
			b.WriteString(suspect.Escape(r))
		}
	}
	return b.String()
}

// maxRefName bounds the name of a named character reference with its semicolon: HTML's
// longest is 32 bytes (&CounterClockwiseContourIntegral;).
const maxRefName = 33

// maxMarks is how many runes of a page are shown in a marked span; the page's others are
// shown as their escape alone, as in a <title>. A span is some 60 to 110 bytes for a rune of
// 1 to 3: unbounded, a proposal's diff of 8 MB (proposals.MaxDiffBytes) of control characters
// would be a page of 500 MB, made at each view. Past it a rune costs its escape, at most 4
// bytes for each of its bytes.
const maxMarks = 1000

// markSuspects writes text as HTML, each rune that a page shows escaped as its escape in a
// marked span that says what it is, while marks (the page's) lasts; then as its escape
// alone. The rest is escaped as html/template escapes it, which leaves a \r as it is, so
// that a \r\n stays the line break it was (x/net/html's EscapeString writes &#13;).
func markSuspects(out *bytes.Buffer, text string, marks *int) {
	from := 0
	for i, r := range text {
		if shownAsIs(text, i, r) {
			continue
		}
		out.WriteString(template.HTMLEscapeString(text[from:i]))
		from = i + utf8.RuneLen(r)
		if *marks <= 0 {
			out.WriteString(template.HTMLEscapeString(suspect.Escape(r)))
			continue
		}
		*marks--
		what := "a control character"
		switch {
		case suspect.Bidi(r):
			what = "a bidirectional control, which would reorder the text around it"
		case suspect.Invisible(r):
			what = "an invisible character, which can carry text that no reader sees"
		}
		fmt.Fprintf(out, `<span class="ctl" title="U+%04X: %s">%s</span>`, r, what, template.HTMLEscapeString(suspect.Escape(r)))
	}
	out.WriteString(template.HTMLEscapeString(text[from:]))
}

// mayHoldSuspect tells, in one pass over page's bytes, whether its text may hold a rune that
// a page shows escaped: such a rune as it is, or a character reference that may be one
// (&#8238;, &rlm;). It errs only towards yes; showControls decides.
func mayHoldSuspect(page []byte) bool {
	for i := 0; i < len(page); i++ {
		// Eight bytes at once while none is one to look at (most of a page: ASCII text and
		// markup, but for its line feeds).
		for i+8 <= len(page) && !anyToLookAt(binary.LittleEndian.Uint64(page[i:])) {
			i += 8
		}
		if i >= len(page) {
			break
		}
		c := page[i]
		if !lookAt[c] {
			continue
		}
		switch {
		case c == '&':
			if refMayBeSuspect(page[i+1:]) {
				return true
			}
		case c == '\r':
			if i+1 == len(page) || page[i+1] != '\n' {
				return true
			}
		case c >= utf8.RuneSelf:
			if r, _ := utf8.DecodeRune(page[i:]); suspect.Rune(r) {
				return true
			}
		default: // the other control characters
			return true
		}
	}
	return false
}

// anyToLookAt tells whether one of the eight bytes of w may be one that lookAt holds: a byte
// below 0x20 (a line feed and a tab too) or from 0x80, an & or a DEL.
func anyToLookAt(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	amp, del := w^(ones*'&'), w^(ones*0x7f)
	// (x - ones*n) & ^x & highs is not 0 if a byte of x is below n (n <= 0x80); w & highs if
	// one is from 0x80.
	return ((w-ones*0x20)&^w|w|(amp-ones)&^amp|(del-ones)&^del)&highs != 0
}

// lookAt holds the bytes that mayHoldSuspect looks at more closely: the control characters
// but \n and \t, &, and the first bytes of the UTF-8 of the suspect runes past ASCII (C2 for
// C1, D8 for U+061C, E2 for U+200B-200F, U+202A-202E and U+2060-2069, EF for U+FEFF, F3 for
// the tag characters). Every other byte of a page, most of them, costs one look-up.
var lookAt = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = c != '\n' && c != '\t'
	}
	for _, c := range []byte{0x7f, '&', 0xc2, 0xd8, 0xe2, 0xef, 0xf3} {
		t[c] = true
	}
	return t
}()

// refMayBeSuspect tells whether the character reference after an & (b starts after it) may
// stand for a suspect rune: a numeric one for one (or past what this reads), or a named one
// (&rlm;, &ZeroWidthSpace;). What html/template writes (&#34;, &#39;, &#43;, &amp;, &lt;,
// &gt;) is not.
func refMayBeSuspect(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if b[0] != '#' {
		end := bytes.IndexByte(b[:min(len(b), maxRefName)], ';')
		if end < 0 || string(b[:end]) == "amp" || string(b[:end]) == "lt" || string(b[:end]) == "gt" {
			return false // HTML's names without a semicolon stand for none of them
		}
		return strings.ContainsFunc(html.UnescapeString("&"+string(b[:end+1])), suspect.Rune)
	}
	b = b[1:]
	base := rune(10)
	if len(b) > 0 && (b[0] == 'x' || b[0] == 'X') {
		b, base = b[1:], 16
	}
	var v rune
	n := 0
	for ; n < len(b); n++ {
		var d rune
		switch c := rune(b[n]); {
		case c >= '0' && c <= '9':
			d = c - '0'
		case base == 16 && c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return n > 0 && suspect.Rune(v) && v != '\n' && v != '\t'
		}
		if v = v*base + d; v > utf8.MaxRune {
			return true // past any character: the browser shows the replacement character, but look
		}
	}
	return n > 0 && suspect.Rune(v) && v != '\n' && v != '\t'
}
