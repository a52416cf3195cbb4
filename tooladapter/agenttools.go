package tooladapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/english"
	"github.com/gitmem/gitmem/search"
)

// The agent tools work in the memory tool's namespace (/memories/...), so that a model
// that has both sees the same paths, and several stores appear as folders alike.

const defaultListLimit = 200

// maxListLimit is memory_list's largest limit, the largest page a store lists (gitstore.List).
const maxListLimit = 1000

// folderTarget resolves a path_prefix: a folder under /memories, with or without a
// trailing "/".
func (s *Session) folderTarget(in input) (target, error) {
	p, err := in.optStr("path_prefix", memoriesRoot+"/")
	if err != nil {
		return target{}, err
	}
	return s.resolve(p)
}

func (s *Session) list(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput(ListTool, raw)
	if err != nil {
		return "", err
	}
	t, err := s.folderTarget(in)
	if err != nil {
		return "", err
	}
	depth, err := in.optInt("depth", 0)
	if err != nil {
		return "", err
	}
	limit, err := in.optInt("limit", defaultListLimit)
	if err != nil {
		return "", err
	}
	if depth < 0 {
		return "", toolErrorf("depth must be 0 (every memory below) or 1 or more levels, got %d", depth)
	}
	if limit < 1 || limit > maxListLimit {
		return "", toolErrorf("limit must be between 1 and %d, got %d", maxListLimit, limit)
	}
	mounts := s.mounts
	if t.mount != nil {
		mounts = []mount{*t.mount}
	}
	var lines []string
	more := false
	for _, m := range mounts {
		d := depth
		if t.isSessionRoot() {
			if depth == 1 {
				lines = append(lines, "-\t-\t"+m.root()+"/")
				continue
			}
			d = max(depth-1, 0)
		}
		// one more than is left, to tell whether there are more, within the store's maximum page
		page, err := m.reads().List(ctx, gitstore.ListOptions{PathPrefix: t.prefix(), Depth: d, Limit: min(limit-len(lines)+1, maxListLimit)})
		if err != nil {
			return "", err
		}
		for _, it := range page.Items {
			if len(lines) == limit {
				more = true
				break
			}
			if it.Memory == nil {
				lines = append(lines, "-\t-\t"+m.shownPath(it.Prefix))
				continue
			}
			lines = append(lines, fmt.Sprintf("%s\t%s\t%s", formatSize(int64(it.Memory.SizeBytes)),
				it.Memory.UpdatedAt.Format("2006-01-02 15:04"), m.shownPath(it.Memory.Path)))
		}
		more = more || page.NextCursor != ""
		if more {
			break
		}
	}
	folder := strings.TrimSuffix(t.shown, "/") + "/"
	if len(lines) == 0 {
		if !t.isSessionRoot() && !t.isStoreRoot() {
			if _, found, err := t.mount.read(ctx, t.path); err != nil {
				return "", err
			} else if found {
				return "", toolErrorf("%s is a memory, not a folder; read it with memory_read", t.shown)
			}
		}
		return fmt.Sprintf("No memories under %s.", folder), nil
	}
	head := fmt.Sprintf("Memories under %s (size, last changed, path):", folder)
	if more {
		head = fmt.Sprintf("The first %d entries under %s (size, last changed, path); raise limit or list a subfolder for more:", len(lines), folder)
	}
	return head + "\n" + strings.Join(lines, "\n"), nil
}

func (s *Session) searchTool(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput(SearchTool, raw)
	if err != nil {
		return "", err
	}
	query, err := in.str("query")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(query) == "" {
		return "", toolErrorf("query is empty: give the words to look for")
	}
	t, err := s.folderTarget(in)
	if err != nil {
		return "", err
	}
	limit, err := in.optInt("limit", 10)
	if err != nil {
		return "", err
	}
	if limit < 1 || limit > search.MaxLimit {
		return "", toolErrorf("limit must be between 1 and %d, got %d", search.MaxLimit, limit)
	}
	if s.search == nil {
		return "", toolErrorf("Search is not available here: this gitmem runs without a search index. Use memory_list and memory_read instead")
	}
	if at := s.mounts[0].at; at != "" {
		return "", toolErrorf("Search reads the stores as they are now, not as they were at %s. Use memory_list and memory_read instead", at)
	}
	mounts := s.mounts
	if t.mount != nil {
		mounts = []mount{*t.mount}
	}
	type hit struct {
		m *mount
		search.Hit
	}
	var hits []hit
	var total uint64
	for i := range mounts {
		m := &mounts[i]
		res, err := s.search.Search(ctx, m.store().ID(), search.Request{Query: query, PathPrefix: t.prefix(), Limit: limit})
		if err != nil {
			return "", err
		}
		total += res.Total
		for _, h := range res.Hits {
			hits = append(hits, hit{m, h})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	hits = hits[:min(len(hits), limit)]
	if len(hits) == 0 {
		return fmt.Sprintf("No memories match %q.", query), nil
	}
	var b strings.Builder
	matches := fmt.Sprintf("%d memories match", total)
	if total == 1 {
		matches = "1 memory matches"
	}
	fmt.Fprintf(&b, "%s %q; the best %d, with their matching lines (line number, tab, text):", matches, query, len(hits))
	for _, h := range hits {
		fmt.Fprintf(&b, "\n\n%s (score %.2f)", h.m.shownPath(h.Path), h.Score)
		for _, sn := range h.Snippets {
			b.WriteString("\n" + numberLine(sn.Line, sn.Text))
		}
	}
	return b.String(), nil
}

// memoryTarget resolves the path field of a tool that acts on one memory.
func (s *Session) memoryTarget(in input) (target, error) {
	t, err := s.resolveField(in, "path")
	if err != nil {
		return t, err
	}
	if t.isSessionRoot() || t.isStoreRoot() {
		return t, toolErrorf("%s is a folder, not a memory; use memory_list to see what it holds", t.shown)
	}
	return t, nil
}

// missingMemory explains why there is no memory at t.
func missingMemory(ctx context.Context, t target) error {
	folder, err := t.mount.isFolder(ctx, t.path)
	if err != nil {
		return err
	}
	if folder {
		return toolErrorf("%s is a folder, not a memory; use memory_list to see what it holds", t.shown)
	}
	return toolErrorf("There is no memory at %s; memory_list and memory_search find the ones there are", t.shown)
}

func (s *Session) read(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput(ReadTool, raw)
	if err != nil {
		return "", err
	}
	t, err := s.memoryTarget(in)
	if err != nil {
		return "", err
	}
	viewRange, err := in.optInts("view_range")
	if err != nil {
		return "", err
	}
	if viewRange != nil && len(viewRange) != 2 {
		return "", toolErrorf("view_range must be two line numbers [start, end], got %d", len(viewRange))
	}
	content, found, err := t.mount.read(ctx, t.path)
	if err != nil {
		return "", err
	}
	if !found {
		return "", missingMemory(ctx, t)
	}
	return viewFile(t.shown, content, viewRange)
}

func (s *Session) write(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput(WriteTool, raw)
	if err != nil {
		return "", err
	}
	t, err := s.memoryTarget(in)
	if err != nil {
		return "", err
	}
	content, err := in.str("content")
	if err != nil {
		return "", err
	}
	var res gitstore.WriteResult
	err = t.mount.change(ctx, t.shown, func(ctx context.Context, st *gitstore.Store) (err error) {
		res, err = st.Write(ctx, gitstore.WriteInput{Path: t.path, Content: content, Actor: s.actor})
		return err
	})
	switch gitstore.ErrorKind(err) {
	case "":
	case gitstore.KindPathConflict:
		var e *gitstore.Error
		if errors.As(err, &e) && len(e.ConflictingPath) > len(t.path) {
			return "", toolErrorf("%s is a folder, not a memory; choose another path", t.shown)
		}
		return "", t.conflict(err, "write "+t.shown)
	case gitstore.KindInvalid:
		return "", toolErrorf("Cannot write %s: %s", t.shown, storeMessage(err))
	default:
		return "", err
	}
	switch {
	case res.Version == nil:
		return fmt.Sprintf("%s already has this content; nothing changed.", t.shown) + redactionNote(res.Redacted), nil
	case res.Version.Operation == gitstore.OpCreated:
		return fmt.Sprintf("Created %s (%d bytes).", t.shown, res.Memory.SizeBytes) + redactionNote(res.Redacted), nil
	}
	return fmt.Sprintf("Replaced the content of %s (%d bytes).", t.shown, res.Memory.SizeBytes) + redactionNote(res.Redacted), nil
}

func (s *Session) editTool(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput(EditTool, raw)
	if err != nil {
		return "", err
	}
	t, err := s.memoryTarget(in)
	if err != nil {
		return "", err
	}
	oldStr, err := in.str("old_string")
	if err != nil {
		return "", err
	}
	newStr, err := in.str("new_string")
	if err != nil {
		return "", err
	}
	all, err := in.optBool("replace_all")
	if err != nil {
		return "", err
	}
	if oldStr == "" {
		return "", toolErrorf("old_string is empty: give the exact text to replace, copied from %s", t.shown)
	}
	var n, line int
	next, red, err := s.edit(ctx, t, func(cur string) (string, error) {
		n = strings.Count(cur, oldStr)
		at := strings.Index(cur, oldStr)
		switch {
		case n == 0:
			return "", toolErrorf("old_string was not found in %s; read it with memory_read and copy the text exactly, without the line numbers", t.shown)
		case n > 1 && !all:
			return "", toolErrorf("old_string occurs %d times in %s (at lines %s); add surrounding text to make it unique, or set replace_all",
				n, t.shown, fewLines(occurrenceLines(cur, oldStr)))
		}
		line = strings.Count(cur[:at], "\n")
		if all {
			return strings.ReplaceAll(cur, oldStr, newStr), nil
		}
		return cur[:at] + newStr + cur[at+len(oldStr):], nil
	}, missingMemory)
	if err != nil {
		return "", err
	}
	replaced := 1
	if all {
		replaced = n
	}
	return fmt.Sprintf("Edited %s: replaced %s. The first change, with line numbers:\n%s", t.shown, english.Count(replaced, "occurrence"),
		numbered(splitLines(next), max(0, line-2), line+3+strings.Count(newStr, "\n"))) + redactionNote(red), nil
}

func (s *Session) deleteTool(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput(DeleteTool, raw)
	if err != nil {
		return "", err
	}
	t, err := s.resolveField(in, "path")
	if err != nil {
		return "", err
	}
	if err := s.removable(t, "delete"); err != nil {
		return "", err
	}
	var vs []gitstore.Version
	err = t.mount.change(ctx, t.shown, func(ctx context.Context, st *gitstore.Store) (err error) {
		vs, err = st.DeletePath(ctx, gitstore.DeletePathInput{Path: t.path, Actor: s.actor})
		return err
	})
	if gitstore.IsKind(err, gitstore.KindNotFound) {
		return "", toolErrorf("There is no memory or folder at %s", t.shown)
	}
	if err != nil {
		return "", err
	}
	if len(vs) == 1 && vs[0].Path == t.path {
		return fmt.Sprintf("Deleted %s.", t.shown), nil
	}
	if len(vs) == 1 {
		return fmt.Sprintf("Deleted the folder %s and the memory in it.", t.shown), nil
	}
	return fmt.Sprintf("Deleted the folder %s and the %d memories in it.", t.shown, len(vs)), nil
}
