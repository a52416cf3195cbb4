package suspect

import (
	"strings"
	"testing"
)

func TestRune(t *testing.T) {
	for _, r := range []rune{0, '\a', '\n', '\r', '\t', 0x1b, 0x7f, 0x80, 0x9b, 0x9f,
		0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069,
		0x200b, 0x2060, 0x2064, 0xfeff, 0xe0000, 0xe0041, 0xe007f} {
		if !Rune(r) {
			t.Errorf("U+%04X is not suspect", r)
		}
	}
	for _, r := range []rune{' ', 'a', 0xa0, 0xe9, 0x05d0, 0x0627, 0x200c, 0x200d, 0x2029, 0x2065, 0x206a, 0xfefe, 0xdffff, 0xe0080, 0x1f3f4} {
		if Rune(r) {
			t.Errorf("U+%04X is suspect", r)
		}
	}
	if Control(0x202e) || !Bidi(0x202e) || Bidi(0x1b) || !Control(0x1b) || !Invisible(0xe0041) || Invisible(0x202e) {
		t.Error("Control, Bidi and Invisible mix")
	}
	// A memory that says one thing to its reviewer and another to a model: "ok" and, in tag
	// characters, "rm -rf".
	hidden := "ok"
	for _, c := range "rm -rf" {
		hidden += string(0xe0000 + c)
	}
	if got, want := String(hidden, ""), `ok\U000e0072\U000e006d\U000e0020\U000e002d\U000e0072\U000e0066`; got != want {
		t.Errorf("String of tag characters = %q, want %q", got, want)
	}
}

func TestString(t *testing.T) {
	const in = "a\x1b]0;x\a\r\n\tb\u009b\u202edesrever\u2066"
	if got, want := String(in, ""), `a\x1b]0;x\a\r\n\tb\u009b\u202edesrever\u2066`; got != want {
		t.Errorf("String(%q, \"\") = %q, want %q", in, got, want)
	}
	if got, want := String(in, "\n\t"), "a\\x1b]0;x\\a\\r\n\tb\\u009b\\u202edesrever\\u2066"; got != want {
		t.Errorf("String(%q, \"\\n\\t\") = %q, want %q", in, got, want)
	}
	if s := "plain, and \u05e9\u05dc\u05d5\u05dd"; String(s, "") != s {
		t.Errorf("String changed %q", s)
	}
}

func TestLineAndText(t *testing.T) {
	for _, c := range []struct {
		s          string
		line, text int // the byte of the refused control, -1 none
	}{
		{"a title", -1, -1},
		{"right\u202eto left \u05d0", -1, -1}, // bidi controls are text
		{"two\nlines", 3, -1},
		{"crlf\r\nlines\r\n", 4, -1},
		{"tab\there", 3, -1},
		{"lone\rreturn", 4, 4},
		{"ends\r", 4, 4},
		{"esc\x1b[2J", 3, 3},
		{"ok\nthen\x00", 2, 7},
		{"del\x7f", 3, 3},
		{"c1\u009b", 2, 2},
	} {
		at, _, ok := Line(c.s)
		if !ok {
			at = -1
		}
		if at != c.line {
			t.Errorf("Line(%q) at %d, want %d", c.s, at, c.line)
		}
		at, _, ok = Text(c.s)
		if !ok {
			at = -1
		}
		if at != c.text {
			t.Errorf("Text(%q) at %d, want %d", c.s, at, c.text)
		}
	}
	if m := LineError("title", "a\nb"); !strings.Contains(m, "title has a control character (U+000A) at byte 1") {
		t.Errorf("LineError: %q", m)
	}
	if m := TextError("comment", "a\x1bb"); !strings.Contains(m, `comment has a control character (U+001B) at byte 1: it may hold line breaks (\n or \r\n) and tabs`) {
		t.Errorf("TextError: %q", m)
	}
	if LineError("title", "fine") != "" || TextError("comment", "fine\r\n") != "" {
		t.Error("a fine text is refused")
	}
}
