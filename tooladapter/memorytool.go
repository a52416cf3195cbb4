package tooladapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets"
)

// MemoryToolName is the name of the memory tool (type memory_20250818).
const MemoryToolName = "memory"

// Memory runs one command of the memory tool (memory_20250818): view, create, str_replace,
// insert, delete or rename, with the input the model sent. Its messages are those of the
// reference implementation in the official TypeScript SDK, except where README.md says
// otherwise. The error is internal only: a command that fails because of its input answers
// a Result with IsError set.
func (s *Session) Memory(ctx context.Context, raw []byte) (Result, error) {
	return finish(s.memory(ctx, raw))
}

func (s *Session) memory(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput("the memory tool", raw)
	if err != nil {
		return "", err
	}
	cmd, err := in.str("command")
	if err != nil {
		return "", toolErrorf(`Missing required parameter "command"; use one of view, create, str_replace, insert, delete, rename`)
	}
	in.tool = "the " + cmd + " command"
	switch cmd {
	case "view":
		return s.view(ctx, in)
	case "create":
		return s.create(ctx, in)
	case "str_replace":
		return s.strReplace(ctx, in)
	case "insert":
		return s.insert(ctx, in)
	case "delete":
		return s.delete(ctx, in)
	case "rename":
		return s.rename(ctx, in)
	}
	return "", toolErrorf("%s not implemented", cmd)
}

// resolveField resolves the path in the named field of in.
func (s *Session) resolveField(in input, name string) (target, error) {
	p, err := in.str(name)
	if err != nil {
		return target{}, err
	}
	return s.resolve(p)
}

func (s *Session) view(ctx context.Context, in input) (string, error) {
	t, err := s.resolveField(in, "path")
	if err != nil {
		return "", err
	}
	viewRange, err := in.optInts("view_range")
	if err != nil {
		return "", err
	}
	if t.isSessionRoot() || t.isStoreRoot() {
		return s.listing(ctx, t)
	}
	content, found, err := t.mount.read(ctx, t.path)
	if err != nil {
		return "", err
	}
	if !found {
		folder, err := t.mount.isFolder(ctx, t.path)
		if err != nil {
			return "", err
		}
		if folder {
			return s.listing(ctx, t)
		}
		return "", notExist(t)
	}
	return viewFile(t.shown, content, viewRange)
}

func notExist(t target) error {
	return toolErrorf("The path %s does not exist. Please provide a valid path.", t.shown)
}

func (s *Session) create(ctx context.Context, in input) (string, error) {
	t, err := s.resolveField(in, "path")
	if err != nil {
		return "", err
	}
	text, err := in.str("file_text")
	if err != nil {
		return "", err
	}
	if t.isSessionRoot() || t.isStoreRoot() {
		return "", toolErrorf("File %s already exists", t.shown)
	}
	var res gitstore.WriteResult
	err = t.mount.change(ctx, t.shown, func(ctx context.Context, st *gitstore.Store) (err error) {
		res, err = st.Write(ctx, gitstore.WriteInput{Path: t.path, Content: text,
			Precondition: &gitstore.Precondition{Type: gitstore.NotExists}, Actor: s.actor})
		return err
	})
	switch gitstore.ErrorKind(err) {
	case "":
		return "File created successfully at: " + t.shown + redactionNote(res.Redacted), nil
	case gitstore.KindPreconditionFailed:
		return "", toolErrorf("File %s already exists", t.shown)
	case gitstore.KindPathConflict:
		return "", t.conflict(err, "create "+t.shown)
	case gitstore.KindInvalid:
		return "", toolErrorf("Cannot create %s: %s", t.shown, storeMessage(err))
	}
	return "", err
}

// conflict explains a path conflict of a write to t: t is taken (a file or a folder), or a
// folder above it is a file.
func (t target) conflict(err error, doing string) error {
	var e *gitstore.Error
	if !errors.As(err, &e) || len(e.ConflictingPath) >= len(t.path) {
		return toolErrorf("File %s already exists", t.shown)
	}
	return toolErrorf("Cannot %s: %s is a file, so it cannot hold other files", doing, t.mount.shownPath(e.ConflictingPath))
}

func (s *Session) strReplace(ctx context.Context, in input) (string, error) {
	t, err := s.resolveField(in, "path")
	if err != nil {
		return "", err
	}
	oldStr, err := in.str("old_str")
	if err != nil {
		return "", err
	}
	newStr, err := in.str("new_str")
	if err != nil {
		return "", err
	}
	if oldStr == "" {
		return "", toolErrorf("No replacement was performed: old_str is empty. Give the exact text to replace, as it appears in %s.", t.shown)
	}
	var line int
	next, red, err := s.edit(ctx, t, func(cur string) (string, error) {
		out, at, err := replaceOnce(cur, oldStr, newStr, t.shown)
		line = strings.Count(cur[:max(at, 0)], "\n")
		return out, err
	}, notAFile)
	if err != nil {
		return "", err
	}
	return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" +
		numbered(splitLines(next), max(0, line-2), line+3) + redactionNote(red), nil
}

// replaceOnce replaces the one occurrence of old in content by new, taken literally. It
// fails, naming the lines where each occurrence starts, unless there is exactly one. at is
// the byte offset of the occurrence.
func replaceOnce(content, old, new, shown string) (out string, at int, err error) {
	at = strings.Index(content, old)
	if at < 0 {
		return "", -1, toolErrorf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", old, shown)
	}
	if strings.Count(content, old) > 1 {
		// The reference's message lists the line of every occurrence; where that would not
		// fit in an answer, the first distinct lines and how many there are.
		lines := occurrenceLines(content, old)
		listed := joinInts(lines)
		if utf8.RuneCountInString(old)+len(listed)+100 > MaxAnswerChars {
			listed = fewLines(lines) + fmt.Sprintf(" (%d occurrences)", len(lines))
		}
		return "", -1, toolErrorf("No replacement was performed. Multiple occurrences of old_str `%s` in lines: %s. Please ensure it is unique", old, listed)
	}
	return strings.Replace(content, old, new, 1), at, nil
}

// maxListedLines bounds how many distinct line numbers a message lists.
const maxListedLines = 10

// occurrenceLines returns the line where each occurrence of old in content starts, in
// order (a line once per occurrence).
func occurrenceLines(content, old string) []int {
	var lines []int
	line := 1
	for i := 0; ; {
		j := strings.Index(content[i:], old)
		if j < 0 {
			break
		}
		line += strings.Count(content[i:i+j], "\n")
		lines = append(lines, line)
		line += strings.Count(old, "\n")
		i += j + len(old)
	}
	return lines
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// fewLines lists the first maxListedLines distinct lines of lines (which are in order), and
// says how many more there are.
func fewLines(lines []int) string {
	distinct := slices.Compact(slices.Clone(lines))
	if len(distinct) <= maxListedLines {
		return joinInts(distinct)
	}
	return fmt.Sprintf("%s and %d more", joinInts(distinct[:maxListedLines]), len(distinct)-maxListedLines)
}

func (s *Session) insert(ctx context.Context, in input) (string, error) {
	t, err := s.resolveField(in, "path")
	if err != nil {
		return "", err
	}
	at, err := in.integer("insert_line")
	if err != nil {
		return "", err
	}
	text, err := in.str("insert_text")
	if err != nil {
		return "", err
	}
	_, red, err := s.edit(ctx, t, func(cur string) (string, error) {
		lines := splitLines(cur)
		if at < 0 || at > len(lines) {
			return "", toolErrorf("Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]", at, len(lines))
		}
		text := strings.TrimSuffix(text, "\n")
		lines = append(lines[:at], append([]string{text}, lines[at:]...)...)
		return strings.Join(lines, "\n"), nil
	}, notAFile)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("The file %s has been edited.", t.shown) + redactionNote(red), nil
}

// edit changes the content of the memory at t with fn, atomically: fn runs in the store's
// writer on the current content. It returns the new content as stored, and the secrets that
// the store's policy redacted from it. missing explains why there is no memory at t, in the
// words of the tool that edits.
func (s *Session) edit(ctx context.Context, t target, fn func(string) (string, error), missing func(context.Context, target) error) (string, []secrets.Finding, error) {
	if t.isSessionRoot() || t.isStoreRoot() {
		return "", nil, toolErrorf("The path %s is not a file.", t.shown)
	}
	var next string
	var res gitstore.WriteResult
	err := t.mount.change(ctx, t.shown, func(ctx context.Context, st *gitstore.Store) (err error) {
		res, err = st.UpdateMemory(ctx, gitstore.UpdateInput{FromPath: t.path, Actor: s.actor,
			Edit: func(cur string) (string, error) {
				out, err := fn(cur)
				next = out
				return out, err
			}})
		return err
	})
	switch gitstore.ErrorKind(err) {
	case "":
		if len(res.Redacted) > 0 {
			next = *res.Memory.Content
		}
		return next, res.Redacted, nil
	case gitstore.KindNotFound:
		return "", nil, missing(ctx, t)
	case gitstore.KindInvalid:
		return "", nil, toolErrorf("Cannot edit %s: %s", t.shown, storeMessage(err))
	}
	return "", nil, err
}

// redactionNote tells the model which secrets the store replaced with markers, so that it
// knows the memory does not hold them; "" if none.
func redactionNote(fs []secrets.Finding) string {
	if len(fs) == 0 {
		return ""
	}
	noun := "a secret"
	if len(fs) > 1 {
		noun = fmt.Sprintf("%d secrets", len(fs))
	}
	return fmt.Sprintf("\nNote: the store's secrets policy redacted %s before saving (%s); the memory holds %s in its place, "+
		"not the secret.", noun, secrets.Describe(fs), secrets.Marker(fs[0].Kind))
}

// notAFile explains, in the memory tool's words, why there is no file at t to edit.
func notAFile(ctx context.Context, t target) error {
	folder, err := t.mount.isFolder(ctx, t.path)
	if err != nil {
		return err
	}
	if folder {
		return toolErrorf("The path %s is not a file.", t.shown)
	}
	return notExist(t)
}

func (s *Session) delete(ctx context.Context, in input) (string, error) {
	t, err := s.resolveField(in, "path")
	if err != nil {
		return "", err
	}
	if err := s.removable(t, "delete"); err != nil {
		return "", err
	}
	err = t.mount.change(ctx, t.shown, func(ctx context.Context, st *gitstore.Store) error {
		_, err := st.DeletePath(ctx, gitstore.DeletePathInput{Path: t.path, Actor: s.actor})
		return err
	})
	if gitstore.IsKind(err, gitstore.KindNotFound) {
		return "", toolErrorf("The path %s does not exist", t.shown)
	}
	if err != nil {
		return "", err
	}
	return "Successfully deleted " + t.shown, nil
}

// removable refuses to delete or rename the root of the session or of one of its stores.
func (s *Session) removable(t target, verb string) error {
	switch {
	case t.isSessionRoot() || t.isStoreRoot() && len(s.mounts) == 1:
		return toolErrorf("Cannot %s the /memories directory itself", verb)
	case t.isStoreRoot():
		return toolErrorf("Cannot %s %s: it is the root of the memory store %s", verb, t.shown, t.mount.describe())
	}
	return nil
}

func (s *Session) rename(ctx context.Context, in input) (string, error) {
	from, err := s.resolveField(in, "old_path")
	if err != nil {
		return "", err
	}
	to, err := s.resolveField(in, "new_path")
	if err != nil {
		return "", err
	}
	if err := s.removable(from, "rename"); err != nil {
		return "", err
	}
	if to.isSessionRoot() || to.isStoreRoot() {
		return "", toolErrorf("The destination %s already exists", to.shown)
	}
	if from.mount != to.mount {
		return "", toolErrorf("Cannot rename %s to %s: they are in different memory stores (%s and %s); create it in the other store and delete it here",
			from.shown, to.shown, from.mount.describe(), to.mount.describe())
	}
	err = from.mount.change(ctx, from.shown, func(ctx context.Context, st *gitstore.Store) error {
		_, err := st.MovePath(ctx, gitstore.MovePathInput{From: from.path, To: to.path, Actor: s.actor})
		return err
	})
	switch gitstore.ErrorKind(err) {
	case "":
		return fmt.Sprintf("Successfully renamed %s to %s", from.shown, to.shown), nil
	case gitstore.KindNotFound:
		return "", toolErrorf("The path %s does not exist", from.shown)
	case gitstore.KindPathConflict:
		var e *gitstore.Error
		if errors.As(err, &e) && len(e.ConflictingPath) < len(to.path) {
			return "", toolErrorf("Cannot rename %s to %s: %s is a file, so it cannot hold other files", from.shown, to.shown, to.mount.shownPath(e.ConflictingPath))
		}
		return "", toolErrorf("The destination %s already exists", to.shown)
	case gitstore.KindInvalid:
		return "", toolErrorf("Cannot rename %s to %s: %s", from.shown, to.shown, storeMessage(err))
	}
	return "", err
}
