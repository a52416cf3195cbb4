package tooladapter

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gitmem/gitmem/gitstore"
)

// MaxViewChars bounds what one view shows, as the memory tool documentation asks: a longer
// file is shown in part, with the view_range that shows the rest.
const MaxViewChars = 16000

// maxLines is the reference's limit on the lines of a file it views.
const maxLines = 999999

// read returns the content of the memory at path, if there is one.
func (m *mount) read(ctx context.Context, path string) (string, bool, error) {
	mem, err := m.reads().GetByPath(ctx, path, true)
	if gitstore.IsKind(err, gitstore.KindNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return *mem.Content, true, nil
}

// isFolder tells whether memories live below path.
func (m *mount) isFolder(ctx context.Context, path string) (bool, error) {
	page, err := m.reads().List(ctx, gitstore.ListOptions{PathPrefix: path + "/", Limit: 1})
	if err != nil {
		return false, err
	}
	return len(page.Items) > 0, nil
}

// all lists every memory below prefix ("" for all), in path order.
func (m *mount) all(ctx context.Context, prefix string) ([]gitstore.Memory, error) {
	var out []gitstore.Memory
	opts := gitstore.ListOptions{PathPrefix: prefix, Limit: 1000}
	for {
		page, err := m.reads().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out = append(out, *it.Memory)
		}
		if page.NextCursor == "" {
			return out, nil
		}
		opts.Cursor = page.NextCursor
	}
}

// splitLines splits content into lines as the reference does: on "\n" only, so that a
// final newline makes a last, empty line.
func splitLines(content string) []string { return strings.Split(content, "\n") }

// numberLine formats one line of a view: its number right-aligned in six columns, a tab.
func numberLine(n int, line string) string {
	return fmt.Sprintf("%6d\t%s", n, line)
}

// numbered formats lines[from:to] (clamped), numbered from from+1, joined by "\n".
func numbered(lines []string, from, to int) string {
	to = min(to, len(lines))
	out := make([]string, 0, max(0, to-from))
	for i := from; i < to; i++ {
		out = append(out, numberLine(i+1, lines[i]))
	}
	return strings.Join(out, "\n")
}

// viewFile shows a file with line numbers, all of it or viewRange ([start, end], 1-based,
// end -1 for the last line), and at most MaxViewChars characters of it.
func viewFile(shown, content string, viewRange []int) (string, error) {
	lines := splitLines(content)
	if len(lines) > maxLines {
		return "", toolErrorf("File %s has too many lines (%d). Maximum is 999,999 lines.", shown, len(lines))
	}
	from, to := 0, len(lines)
	if len(viewRange) == 2 {
		// As the reference slices: -1 is the last line, other negative ends count back from
		// the end, and a range past the end or reversed shows nothing.
		from = max(1, viewRange[0]) - 1
		switch end := viewRange[1]; {
		case end == -1:
		case end < 0:
			to = max(len(lines)+end, 0)
		default:
			to = min(end, len(lines))
		}
	}
	header := "Here's the content of " + shown + " with line numbers:\n"
	if from >= to {
		return header, nil
	}
	var b strings.Builder
	b.WriteString(header)
	chars := utf8.RuneCountInString(header)
	for i := from; i < to; i++ {
		line := numberLine(i+1, lines[i])
		n := utf8.RuneCountInString(line) + 1
		if chars+n > MaxViewChars {
			if i == from {
				// One line longer than a whole view: show its start.
				b.WriteString(truncateRunes(line, MaxViewChars-chars))
				fmt.Fprintf(&b, "\n\n[Line %d is %d characters long and is cut here: a view shows at most %d characters.]", i+1, utf8.RuneCountInString(lines[i]), MaxViewChars)
				return b.String(), nil
			}
			fmt.Fprintf(&b, "\n[Showing lines %d-%d of %d: a view shows at most %d characters. View the rest with view_range [%d, %d].]",
				from+1, i, len(lines), MaxViewChars, i+1, to)
			return b.String(), nil
		}
		if i > from {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		chars += n
	}
	return b.String(), nil
}

func truncateRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// formatSize writes a size as the reference does: 0B, 512B, 1K, 1.5K, 2M; one decimal
// unless the size is a whole number of units, rounded half up as JavaScript's toFixed.
func formatSize(bytes int64) string {
	if bytes <= 0 {
		return "0B"
	}
	units := []string{"B", "K", "M", "G"}
	i, unit := 0, int64(1)
	for i < len(units)-1 && bytes >= unit*1024 {
		i, unit = i+1, unit*1024
	}
	if bytes%unit == 0 {
		return strconv.FormatInt(bytes/unit, 10) + units[i]
	}
	tenths := (bytes*20 + unit) / (2 * unit) // bytes*10/unit, rounded half up
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10) + units[i]
}

// entry is a file or folder of a listing; a folder's size is the total of the files below
// it, since git has no size for a directory.
type entry struct {
	name     string
	size     int64
	folder   bool
	children map[string]*entry
}

func (e *entry) add(segs []string, size int64) {
	e.size += size
	if len(segs) == 1 {
		e.children[segs[0]] = &entry{name: segs[0], size: size}
		return
	}
	c := e.children[segs[0]]
	if c == nil {
		c = &entry{name: segs[0], folder: true, children: map[string]*entry{}}
		e.children[segs[0]] = c
	}
	c.add(segs[1:], size)
}

// hidden names are left out of listings, as the reference leaves them out.
func hidden(name string) bool { return strings.HasPrefix(name, ".") || name == "node_modules" }

// lessUTF16 orders names as JavaScript's default sort does, by UTF-16 code units, so that
// listings come out in the reference's order.
func lessUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// lines appends the listing lines of e's children to out, depth levels deep.
func (e *entry) lines(out []string, shown, rel string, depth int) []string {
	names := make([]string, 0, len(e.children))
	for name := range e.children {
		if !hidden(name) {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, lessUTF16)
	for _, name := range names {
		c := e.children[name]
		path := rel + name
		if c.folder {
			out = append(out, formatSize(c.size)+"\t"+shown+"/"+path+"/")
			if depth > 1 {
				out = c.lines(out, shown, path+"/", depth-1)
			}
			continue
		}
		out = append(out, formatSize(c.size)+"\t"+shown+"/"+path)
	}
	return out
}

// listing shows a folder (or the root of the session or of a store) two levels deep.
func (s *Session) listing(ctx context.Context, t target) (string, error) {
	root := &entry{folder: true, children: map[string]*entry{}}
	mounts := s.mounts
	if t.mount != nil {
		mounts = []mount{*t.mount}
	}
	for _, m := range mounts {
		mems, err := m.all(ctx, t.prefix())
		if err != nil {
			return "", err
		}
		base := len(t.prefix())
		if t.prefix() == "" {
			base = 1
		}
		for _, mem := range mems {
			segs := strings.Split(mem.Path[base:], "/")
			if t.isSessionRoot() {
				segs = append([]string{m.slug}, segs...)
			}
			root.add(segs, int64(mem.SizeBytes))
		}
		if t.isSessionRoot() && root.children[m.slug] == nil {
			root.children[m.slug] = &entry{name: m.slug, folder: true, children: map[string]*entry{}}
		}
	}
	lines := root.lines([]string{formatSize(root.size) + "\t" + t.shown}, t.shown, "", 2)
	header := "Here're the files and directories up to 2 levels deep in " + t.shown + ", excluding hidden items and node_modules:"
	var b strings.Builder
	b.WriteString(header)
	chars := utf8.RuneCountInString(header)
	for i, line := range lines {
		n := utf8.RuneCountInString(line) + 1
		if chars+n > MaxViewChars {
			fmt.Fprintf(&b, "\n[%d more entries are not shown: a view shows at most %d characters. View a folder above to see its part.]", len(lines)-i, MaxViewChars)
			break
		}
		b.WriteByte('\n')
		b.WriteString(line)
		chars += n
	}
	return b.String(), nil
}
