package search

import (
	"slices"
	"strings"
	"unicode/utf8"

	bsearch "github.com/blevesearch/bleve/v2/search"
)

// Snippet is one line of a memory that matched, so that a reader can go straight to it
// (the memory tool's view_range takes these line numbers).
type Snippet struct {
	Line int `json:"line"` // 1-based
	// Text is the line, cut to about maxSnippetBytes around its first match; a cut is
	// marked with "…".
	Text string `json:"text"`
	// Highlights are the byte ranges of Text that matched, in order, not overlapping.
	Highlights []Span `json:"highlights"`
}

// Span is a byte range [Start, End).
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Marked returns the snippet's text with each highlight wrapped in open and close.
func (s Snippet) Marked(open, close string) string {
	return s.MarkedFunc(open, close, func(text string) string { return text })
}

// MarkedFunc is Marked with each piece of the snippet's text, inside highlights and between
// them, written as text returns it (escaped for a page, or for a terminal). Highlights out
// of order or past the text are left out.
func (s Snippet) MarkedFunc(open, close string, text func(string) string) string {
	var b strings.Builder
	at := 0
	for _, h := range s.Highlights {
		if h.Start < at || h.End > len(s.Text) || h.Start > h.End {
			continue
		}
		b.WriteString(text(s.Text[at:h.Start]))
		b.WriteString(open)
		b.WriteString(text(s.Text[h.Start:h.End]))
		b.WriteString(close)
		at = h.End
	}
	b.WriteString(text(s.Text[at:]))
	return b.String()
}

const (
	maxSnippetBytes = 240
	snippetLead     = 60 // bytes kept before the first match of a cut line
)

// snippets picks up to limit lines of content that hold matches, the lines with the most
// distinct matched terms first, and returns them in line order. With no match in the
// content (the path matched), it returns the first non-blank line.
func snippets(content string, locs bsearch.FieldTermLocationMap, limit int) []Snippet {
	type hit struct {
		span Span
		term string
	}
	var hits []hit
	for _, field := range []string{fieldContent, fieldStem} {
		for term, ls := range locs[field] {
			for _, l := range ls {
				if int(l.Start) < int(l.End) && int(l.End) <= len(content) {
					hits = append(hits, hit{Span{int(l.Start), int(l.End)}, term})
				}
			}
		}
	}
	if len(hits) == 0 {
		for i, line := range strings.Split(content, "\n") {
			if strings.TrimSpace(line) != "" {
				return []Snippet{cut(i+1, line, nil)}
			}
		}
		return []Snippet{}
	}
	slices.SortFunc(hits, func(a, b hit) int { return a.span.Start - b.span.Start })
	type lineHits struct {
		line, start int // line number, and the offset where the line starts
		spans       []Span
		terms       map[string]bool
	}
	var lines []*lineHits
	lineNo, lineStart, scanned := 1, 0, 0
	for _, h := range hits {
		for {
			nl := strings.IndexByte(content[scanned:h.span.Start], '\n')
			if nl < 0 {
				break
			}
			lineNo++
			scanned += nl + 1
			lineStart = scanned
		}
		scanned = h.span.Start
		if len(lines) == 0 || lines[len(lines)-1].line != lineNo {
			lines = append(lines, &lineHits{line: lineNo, start: lineStart, terms: map[string]bool{}})
		}
		l := lines[len(lines)-1]
		l.terms[h.term] = true
		// Bigrams of Chinese and Japanese, and a word found both as written and stemmed,
		// overlap; the words of a phrase are apart by spaces: merge them. A match never
		// spans lines: cut it at the line's end.
		s := Span{h.span.Start - l.start, h.span.End - l.start}
		if end := strings.IndexByte(content[h.span.Start:h.span.End], '\n'); end >= 0 {
			s.End = s.Start + end
		}
		if n := len(l.spans); n > 0 && (s.Start <= l.spans[n-1].End ||
			strings.TrimSpace(content[l.start+l.spans[n-1].End:l.start+s.Start]) == "") {
			l.spans[n-1].End = max(l.spans[n-1].End, s.End)
		} else {
			l.spans = append(l.spans, s)
		}
	}
	best := slices.Clone(lines)
	slices.SortStableFunc(best, func(a, b *lineHits) int {
		if len(a.terms) != len(b.terms) {
			return len(b.terms) - len(a.terms)
		}
		return len(b.spans) - len(a.spans)
	})
	if len(best) > limit {
		best = best[:limit]
	}
	slices.SortFunc(best, func(a, b *lineHits) int { return a.line - b.line })
	out := make([]Snippet, 0, len(best))
	for _, l := range best {
		end := strings.IndexByte(content[l.start:], '\n')
		if end < 0 {
			end = len(content) - l.start
		}
		out = append(out, cut(l.line, content[l.start:l.start+end], l.spans))
	}
	return out
}

// cut returns the snippet of one line, shortened around its first highlight if long.
func cut(line int, text string, spans []Span) Snippet {
	text = strings.TrimSuffix(text, "\r")
	if len(text) <= maxSnippetBytes {
		return Snippet{Line: line, Text: text, Highlights: clip(spans, 0, len(text), 0)}
	}
	from := 0
	if len(spans) > 0 {
		from = max(0, spans[0].Start-snippetLead)
	}
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	to := min(len(text), from+maxSnippetBytes)
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to--
	}
	var b strings.Builder
	shift := -from
	if from > 0 {
		b.WriteString("…")
		shift += len("…")
	}
	b.WriteString(text[from:to])
	if to < len(text) {
		b.WriteString("…")
	}
	return Snippet{Line: line, Text: b.String(), Highlights: clip(spans, from, to, shift)}
}

// clip keeps the parts of spans inside [from, to) and moves them by shift.
func clip(spans []Span, from, to, shift int) []Span {
	out := []Span{}
	for _, s := range spans {
		s.Start, s.End = max(s.Start, from), min(s.End, to)
		if s.Start < s.End {
			out = append(out, Span{s.Start + shift, s.End + shift})
		}
	}
	return out
}
