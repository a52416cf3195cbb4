package webui

import (
	"strconv"
	"strings"
)

// diffRow is one row of a diff shown side by side: the old line on the left, the new on the
// right. A hunk header is a row of its own; removed and added lines are paired in order.
type diffRow struct {
	Hunk           string // the "@@ ... @@" line, for a hunk's first row
	OldNo, NewNo   int    // 0: no line on that side
	Old, New       string
	OldDel, NewAdd bool
}

// unifiedLine is one line of a diff shown unified.
type unifiedLine struct {
	Text  string
	Class string // "add", "del", "hunk", "head" or ""
}

// splitRows turns a unified diff (gitstore.UnifiedDiff's form) into side-by-side rows.
func splitRows(unified string) []diffRow {
	var rows []diffRow
	var dels, adds []string
	oldNo, newNo := 0, 0
	flush := func() {
		for i := 0; i < len(dels) || i < len(adds); i++ {
			var row diffRow
			if i < len(dels) {
				oldNo++
				row.OldNo, row.Old, row.OldDel = oldNo, dels[i], true
			}
			if i < len(adds) {
				newNo++
				row.NewNo, row.New, row.NewAdd = newNo, adds[i], true
			}
			rows = append(rows, row)
		}
		dels, adds = dels[:0], adds[:0]
	}
	for _, line := range strings.Split(strings.TrimSuffix(unified, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, `\`), line == "":
		case strings.HasPrefix(line, "@@"):
			flush()
			oldNo, newNo = hunkStarts(line)
			rows = append(rows, diffRow{Hunk: line})
		case line[0] == '-':
			dels = append(dels, line[1:])
		case line[0] == '+':
			adds = append(adds, line[1:])
		default:
			flush()
			oldNo++
			newNo++
			rows = append(rows, diffRow{OldNo: oldNo, NewNo: newNo, Old: line[1:], New: line[1:]})
		}
	}
	flush()
	return rows
}

// hunkStarts reads "@@ -a,b +c,d @@": the line numbers before the hunk's first lines.
func hunkStarts(h string) (oldNo, newNo int) {
	for _, f := range strings.Fields(h) {
		n, _, _ := strings.Cut(f[1:], ",")
		v, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		switch f[0] {
		case '-':
			oldNo = v - 1
		case '+':
			newNo = v - 1
		}
	}
	// An empty side ("-0,0") starts before line 1 as well.
	return max(oldNo, 0), max(newNo, 0)
}

// unifiedLines classes the lines of a unified diff for display.
func unifiedLines(unified string) []unifiedLine {
	var out []unifiedLine
	for _, line := range strings.Split(strings.TrimSuffix(unified, "\n"), "\n") {
		l := unifiedLine{Text: line}
		switch {
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "):
			l.Class = "head"
		case strings.HasPrefix(line, "@@"):
			l.Class = "hunk"
		case strings.HasPrefix(line, "+"):
			l.Class = "add"
		case strings.HasPrefix(line, "-"):
			l.Class = "del"
		}
		out = append(out, l)
	}
	return out
}
