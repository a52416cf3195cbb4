package webui

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gitmem/gitmem/internal/suspect"
)

// TestShowControls: the suspect runes of a page's text come out as marked escapes, its
// markup-less elements' as escapes alone, and a form's fields as they are.
func TestShowControls(t *testing.T) {
	span := func(esc, code, what string) string {
		return `<span class="ctl" title="U+` + code + `: ` + what + `">` + esc + `</span>`
	}
	rlo := span(`\u202e`, "202E", "a bidirectional control, which would reorder the text around it")
	const inv = "an invisible character, which can carry text that no reader sees"
	for _, c := range []struct{ in, want string }{
		{"<p>plain &#34;text&#34; &amp; \u05e9\u05dc\u05d5\u05dd\n\ttabbed</p>", ""}, // unchanged
		{"<p>a \u202etxt.exe</p>", "<p>a " + rlo + "txt.exe</p>"},
		{"<h1>Tidy&#34;\u202e</h1>", "<h1>Tidy&#34;" + rlo + "</h1>"},
		{"<p>&#x202E;&#8238;&rlm;</p>", "<p>" + rlo + rlo + span(`\u200f`, "200F", "a bidirectional control, which would reorder the text around it") + "</p>"},
		{"<p>esc\x1b[2J \u009b</p>", "<p>esc" + span(`\x1b`, "001B", "a control character") + "[2J " + span(`\u009b`, "009B", "a control character") + "</p>"},
		{"<pre>+ok\r\n+also\rfake</pre>", "<pre>+ok\r\n+also" + span(`\r`, "000D", "a control character") + "fake</pre>"},
		{"<title>a\u202eb &lt;</title>", `<title>a\u202eb &lt;</title>`},
		{"<select><option>a\u2066b</option></select><p>\u2066</p>", `<select><option>a\u2066b</option></select><p>` + span(`\u2066`, "2066", "a bidirectional control, which would reorder the text around it") + "</p>"},
		{"<textarea>keep\u202e\x1b</textarea><p>x</p>", ""},
		{`<input name="path" value="/a` + "\u202e" + `"><a href="/x" title="t` + "\u202e" + `">l</a>`, `<input name="path" value="/a` + "\u202e" + `"><a href="/x" title="t\u202e">l</a>`},
		{"<p>&#10;&#9;&#13;&#10; &amp;#8238;</p>", ""}, // line breaks and tabs, and an escaped reference
		// Invisible characters: a tag character (text a model reads and no reader sees), a
		// zero-width space, as runes and as references; a zero-width joiner (emoji) stays.
		{"<p>ok\U000e0072&#xE006D;&ZeroWidthSpace;\u2060 👩‍💻</p>", "<p>ok" +
			span(`\U000e0072`, "E0072", inv) + span(`\U000e006d`, "E006D", inv) + span(`\u200b`, "200B", inv) + span(`\u2060`, "2060", inv) + " 👩‍💻</p>"},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := string(showControls([]byte(c.in))); got != want {
			t.Errorf("showControls(%q)\n got %q\nwant %q", c.in, got, want)
		}
	}
}

func TestMayHoldSuspect(t *testing.T) {
	for s, want := range map[string]bool{
		"<p>&#34;&#39;&#43;&amp;&lt;&gt; \u05d0 \n\t\r\n</p>": false,
		"\u202e": true, "\x1b": true, "\x7f": true, "\u0085": true, "a\rb": true, "a\r": true,
		"&#8238;": true, "&#x202e;": true, "&#X202E": true, "&#0000000008238;": true, "&rlm;": true, "&lrm;": true,
		"&#27;": true, "&#10;": false, "&#99999999999999999999;": true, "&#;": false, "&#x;": false,
		"\u200b": true, "\ufeff": true, "\U000e0041": true, "&#x200b;": true, "&ZeroWidthSpace;": true, "&NoBreak;": true,
		"&InvisibleTimes;": true, "&it;": true, "&nbsp;&copy;&hellip;&mdash;": false, "&amp": false, "‍": false,
	} {
		if got := mayHoldSuspect([]byte(s)); got != want {
			t.Errorf("mayHoldSuspect(%q) = %v, want %v", s, got, want)
		}
	}
	if s := strings.Repeat("<td>ok</td>", 10); !strings.Contains(string(showControls([]byte(s))), "ok") {
		t.Error("a page without suspects changed")
	}
}

// BenchmarkShowControls: what showControls costs a page of 100 KB (a folder of 100
// memories is about that) without a suspect rune (the one pass over its bytes), and with one
// (the page tokenized, its text escaped):
//
//	go test ./webui -run '^$' -bench ShowControls
func BenchmarkShowControls(b *testing.B) {
	row := `<tr><td><a href="/ui/stores/memstore_x/memories/mem_x">/projects/p050/n05000.md</a></td><td>sesn_3 (key apikey_x) &#34;quoted&#34; · 2 min ago</td></tr>` + "\n"
	clean := []byte("<!doctype html><html><head><title>x</title></head><body><table>" + strings.Repeat(row, 100_000/len(row)) + "</table></body></html>")
	dirty := []byte(strings.Replace(string(clean), "quoted", "quo\u202eted", 1))
	for _, c := range []struct {
		name string
		page []byte
	}{{"clean", clean}, {"one_bidi", dirty}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.page)))
			for b.Loop() {
				showControls(c.page)
			}
		})
	}
}

// TestLookAt: mayHoldSuspect's table and its eight-bytes test miss no suspect rune's first
// byte.
func TestLookAt(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !suspect.Rune(r) {
			continue
		}
		if r == '\n' || r == '\t' { // a page's layout
			continue
		}
		b := []byte(string(r))
		if !lookAt[b[0]] {
			t.Errorf("U+%04X is suspect, and lookAt misses its first byte %#x", r, b[0])
		}
		for at := 0; at < 8; at++ { // the rune's first byte at each place of a word
			w := []byte("abcdefghijklmnop")
			copy(w[at:], b)
			if !anyToLookAt(binary.LittleEndian.Uint64(w)) {
				t.Errorf("U+%04X at byte %d of a word: not looked at", r, at)
			}
		}
	}
	for c := range 256 {
		w := []byte("abcdefgh")
		w[3] = byte(c)
		if lookAt[c] && !anyToLookAt(binary.LittleEndian.Uint64(w)) {
			t.Errorf("byte %#x: not looked at", c)
		}
	}
	if anyToLookAt(binary.LittleEndian.Uint64([]byte("<td>a b<"))) || anyToLookAt(binary.LittleEndian.Uint64([]byte(`"=/>~{|}`))) {
		t.Error("plain ASCII looked at")
	}
}

// TestShowControlsBounded: a page whose text is full of suspect runes (a proposal's diff
// of control characters, up to 8 MB of them) grows by a bounded factor, not by a span per
// rune: the first maxMarks runes are marked, the rest shown as their escape alone.
func TestShowControlsBounded(t *testing.T) {
	for _, r := range []string{"\x01", "\u202e", "\u0085"} {
		text := strings.Repeat(r+"a", 500_000)
		page := []byte("<pre>" + text + "</pre>")
		out := string(showControls(page))
		if limit := 4*len(page) + maxMarks*120; len(out) > limit {
			t.Errorf("%q: a page of %d bytes shown in %d bytes, more than %d", r, len(page), len(out), limit)
		}
		if n := strings.Count(out, `<span class="ctl"`); n != maxMarks {
			t.Errorf("%q: %d runes marked, want %d", r, n, maxMarks)
		}
		esc := suspect.Escape([]rune(r)[0])
		if n := strings.Count(out, esc); n != 500_000 {
			t.Errorf("%q: %d escapes %s shown, want 500000", r, n, esc)
		}
		if strings.Contains(out, r) {
			t.Errorf("%q: shown as it is", r)
		}
	}
}
