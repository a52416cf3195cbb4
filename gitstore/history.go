package gitstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// History operations over a memory's versions: restore, diff and blame. Each reads the
// versions of the memory from the catalog, oldest first, and their contents from the blobs
// of the repository.

// RestoreInput restores the memory of version VersionID to that version's content and path.
// If MemoryID is set, the version must be one of that memory's.
type RestoreInput struct {
	VersionID string
	MemoryID  string
	Actor     Actor
}

// Restore makes a new version of a memory whose content and path are those of an earlier
// version. The memory keeps its id; a deleted memory comes back. The new version's operation
// is modified, never created: in the version model created starts a memory's lineage, and a
// restore continues one (the memory's id and created_at stay). History is never reset: every
// version stays, and the restore is one more commit on top.
//
// Restoring a version that is a deletion is refused (KindInvalid), as is a version of
// another memory than in.MemoryID (KindPreconditionFailed). If the version's path is now
// another memory's, or below or above one, it fails with KindPathConflict naming it.
// Restoring the state the memory is already in changes nothing (Version is nil).
func (s *Store) Restore(ctx context.Context, in RestoreInput) (WriteResult, error) {
	if in.VersionID == "" {
		return WriteResult{}, invalidf("restore needs the id of the version to restore")
	}
	if err := validateActor(in.Actor); err != nil {
		return WriteResult{}, err
	}
	return submitAs(ctx, s, func(b *batch) (WriteResult, error) {
		if _, err := b.writableStore(); err != nil {
			return WriteResult{}, err
		}
		v, ok, err := b.ct.version(in.VersionID)
		if err != nil {
			return WriteResult{}, b.fail(err)
		}
		if !ok {
			return WriteResult{}, notFoundf("memory version %s not found", in.VersionID)
		}
		if in.MemoryID != "" && v.Memory != in.MemoryID {
			return WriteResult{}, preconditionf("version %s belongs to memory %s, not to memory %s; nothing was restored", v.ID, v.Memory, in.MemoryID)
		}
		if v.Op == OpDeleted || v.Blob == "" {
			return WriteResult{}, invalidf("version %s is the deletion of memory %s and has no content to restore; restore a version before it", v.ID, v.Memory)
		}
		if v.Redacted != nil {
			return WriteResult{}, invalidf("version %s of memory %s was redacted: its content is gone and cannot be restored", v.ID, v.Memory)
		}
		rec, ok, err := b.ct.memory(v.Memory)
		if err != nil {
			return WriteResult{}, b.fail(err)
		}
		if !ok {
			return WriteResult{}, b.fail(fmt.Errorf("catalog version %s names unknown memory %s", v.ID, v.Memory))
		}
		if !rec.Deleted && rec.Path == v.Path && rec.SHA == v.SHA {
			return b.result(v.Memory, nil) // already in that state: no version
		}
		o, err := b.object(plumbing.NewHash(v.Blob))
		if err != nil {
			return WriteResult{}, b.fail(err)
		}
		raw, err := readEncoded(o)
		if err != nil {
			return WriteResult{}, b.fail(err)
		}
		content := string(raw)
		from := ""
		tree := b.root
		if !rec.Deleted {
			from = rec.Path
			if tree, err = b.setFile(b.root, rec.Path, nil); err != nil {
				return WriteResult{}, err
			}
		}
		if from != v.Path {
			if err := b.checkPathFree(tree, v.Path); err != nil {
				return WriteResult{}, err
			}
			if err := b.checkNewNames(tree, v.Path); err != nil {
				return WriteResult{}, err
			}
		}
		return b.restorePut(in.Actor, v, from, &content)
	})
}

// restorePut commits the restore of version v: its content at its path, removing the
// memory's current path from (if live and different).
func (b *batch) restorePut(actor Actor, v verRec, from string, content *string) (WriteResult, error) {
	info, err := b.writableStore()
	if err != nil {
		return WriteResult{}, err
	}
	if err := b.review(info.Policy, actor, false, from, v.Path); err != nil {
		return WriteResult{}, err
	}
	when := b.now()
	verID := NewID(VersionPrefix, when)
	root := b.root
	if from != "" && from != v.Path {
		if root, err = b.setFile(root, from, nil); err != nil {
			return WriteResult{}, err
		}
	}
	if root, err = b.setFile(root, v.Path, content); err != nil {
		return WriteResult{}, err
	}
	subject := fmt.Sprintf("restore %s to version %s", v.Path, v.ID)
	if from != "" && from != v.Path {
		subject = fmt.Sprintf("restore %s to version %s (from %s)", v.Path, v.ID, from)
	}
	t := trailers{{trailerMemory, v.Memory}, {trailerVersion, verID}, {trailerOperation, string(OpModified)},
		{trailerRestoredFrom, v.ID}}
	t = append(t, actorTrailers(actor)...)
	if err := b.commit(root, subject, t, actor, when); err != nil {
		return WriteResult{}, err
	}
	return b.result(v.Memory, &verID)
}

// versionContent is the content a version leaves: "" for a deletion or a redacted version.
func (s *Store) versionContent(v verRec) (string, error) {
	if v.contentBlob() == "" {
		return "", nil
	}
	raw, err := s.repo.Blob(plumbing.NewHash(v.Blob))
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

// MemoryDiff is the difference between two versions of one memory.
type MemoryDiff struct {
	MemoryID string
	From, To Version // without content; From is zero when diffing against nothing
	// Diff is a unified diff with 3 lines of context, as git diff shows it: "--- a/path" and
	// "+++ b/path" (/dev/null for a deletion or for nothing), then the hunks. It is "" when
	// the two contents are the same, even if the path changed.
	Diff string
}

// DiffMemory diffs two versions of memory memoryID (or, if memoryID is empty, of the memory
// that the versions belong to). An empty toID is the memory's head version; an empty fromID
// is the version before toID, or nothing if toID is the memory's first version. At least
// one of memoryID and fromID must be set.
func (s *Store) DiffMemory(ctx context.Context, memoryID, fromID, toID string) (MemoryDiff, error) {
	if memoryID == "" && fromID == "" && toID == "" {
		return MemoryDiff{}, invalidf("diff needs a memory or a version")
	}
	var out MemoryDiff
	var from, to *verRec
	err := s.view(ctx, func(ct catTx) error {
		byID := func(id string) (*verRec, error) {
			v, ok, err := ct.version(id)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, notFoundf("memory version %s not found", id)
			}
			if memoryID != "" && v.Memory != memoryID {
				return nil, invalidf("version %s belongs to memory %s, not to memory %s", id, v.Memory, memoryID)
			}
			memoryID = v.Memory
			return &v, nil
		}
		var err error
		if fromID != "" {
			if from, err = byID(fromID); err != nil {
				return err
			}
		}
		if toID != "" {
			if to, err = byID(toID); err != nil {
				return err
			}
		}
		if to != nil && from != nil {
			return nil
		}
		versions, err := ct.memoryVersions(memoryID)
		if err != nil {
			return err
		}
		if len(versions) == 0 {
			return notFoundf("memory %s not found", memoryID)
		}
		if to == nil {
			to = &versions[len(versions)-1]
		}
		if from == nil && fromID == "" {
			for i := range versions {
				if versions[i].ID == to.ID && i > 0 {
					from = &versions[i-1]
				}
			}
		}
		return nil
	})
	if err != nil {
		return MemoryDiff{}, err
	}
	out.MemoryID = memoryID
	out.To = versionFrom(s.id, *to)
	var a string
	aName := "/dev/null"
	if from != nil {
		out.From = versionFrom(s.id, *from)
		if a, err = s.versionContent(*from); err != nil {
			return MemoryDiff{}, err
		}
		if from.contentBlob() != "" {
			aName = "a" + from.Path
		}
	}
	b, err := s.versionContent(*to)
	if err != nil {
		return MemoryDiff{}, err
	}
	bName := "/dev/null"
	if to.contentBlob() != "" {
		bName = "b" + to.Path
	}
	out.Diff = UnifiedDiff(aName, bName, a, b)
	return out, nil
}

// lineOp is one line of a line diff: ' ' kept, '-' removed, '+' added.
type lineOp struct {
	kind byte
	text string // with its newline, if it has one
}

// splitLines splits s into lines that keep their newlines; the last may have none.
func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// DiffTimeout bounds the search of one line diff for the shortest diff, whose time grows
// with the product of the two contents' lines (16 s, unbounded, for two memories of 100 KB
// that share no line): past it the lines not yet matched are shown removed and added whole,
// still a diff from one content to the other, if not the shortest. Memories as people and
// agents write them diff in milliseconds.
const DiffTimeout = time.Second

// maxDiffCells bounds the product of the lines that a line diff compares, once the lines the
// two contents begin and end with alike are set aside: beyond it the lines between are shown
// removed and added whole, without a search. The diff library has steps that no deadline
// bounds and that take time in that product (a search for one text in the other, its
// "half match" of repeated lines): 5 s for 50,000 lines that differ only at both ends. A
// memory of 100 KB has a few thousand lines, far below.
const maxDiffCells = 1 << 25

// BlameTimeout bounds a blame, which diffs every two consecutive versions of a memory.
const BlameTimeout = 10 * time.Second

// lineDiff diffs a and b line by line (Myers, through diff-match-patch, within DiffTimeout
// and maxDiffCells). In each run of changes between kept lines the removed lines come first,
// as git shows them.
func lineDiff(a, b string) []lineOp {
	var out, del, ins []lineOp
	flush := func() {
		out = append(append(out, del...), ins...)
		del, ins = del[:0], ins[:0]
	}
	for _, d := range lineDiffs(a, b) {
		for _, l := range splitLines(d.Text) {
			switch d.Type {
			case diffmatchpatch.DiffDelete:
				del = append(del, lineOp{'-', l})
			case diffmatchpatch.DiffInsert:
				ins = append(ins, lineOp{'+', l})
			default:
				flush()
				out = append(out, lineOp{' ', l})
			}
		}
	}
	flush()
	return out
}

// lineDiffs is the line diff of a and b as diff-match-patch makes it (go-git's diff.Do), but
// bounded: within DiffTimeout, and with the lines between the common beginning and end
// replaced whole when more than maxDiffCells pairs of them would be compared.
func lineDiffs(a, b string) []diffmatchpatch.Diff {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = DiffTimeout
	ra, rb, lines := dmp.DiffLinesToRunes(a, b)
	pre := 0
	for pre < len(ra) && pre < len(rb) && ra[pre] == rb[pre] {
		pre++
	}
	suf := 0
	for suf < len(ra)-pre && suf < len(rb)-pre && ra[len(ra)-1-suf] == rb[len(rb)-1-suf] {
		suf++
	}
	var diffs []diffmatchpatch.Diff
	if midA, midB := len(ra)-pre-suf, len(rb)-pre-suf; midA*midB <= maxDiffCells {
		diffs = dmp.DiffMainRunes(ra, rb, false)
	} else {
		for _, d := range []diffmatchpatch.Diff{
			{Type: diffmatchpatch.DiffEqual, Text: string(ra[:pre])},
			{Type: diffmatchpatch.DiffDelete, Text: string(ra[pre : len(ra)-suf])},
			{Type: diffmatchpatch.DiffInsert, Text: string(rb[pre : len(rb)-suf])},
			{Type: diffmatchpatch.DiffEqual, Text: string(ra[len(ra)-suf:])},
		} {
			if d.Text != "" {
				diffs = append(diffs, d)
			}
		}
	}
	return dmp.DiffCharsToLines(diffs, lines)
}

// diffContext is the number of unchanged lines shown around each change.
const diffContext = 3

// UnifiedDiff returns the unified diff of a and b under the names aName and bName ("a/…",
// "b/…" or "/dev/null"), with 3 lines of context: the format of git diff without its
// "diff --git" and "index" lines, and without the function name after a hunk's "@@". It
// returns "" if a and b are equal.
func UnifiedDiff(aName, bName, a, b string) string {
	if a == b {
		return ""
	}
	ops := lineDiff(a, b)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", aName, bName)
	// oldAt[i] and newAt[i]: how many old and new lines come before ops[i].
	oldAt := make([]int, len(ops)+1)
	newAt := make([]int, len(ops)+1)
	for i, op := range ops {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if op.kind != '+' {
			oldAt[i+1]++
		}
		if op.kind != '-' {
			newAt[i+1]++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk starts diffContext lines before this change and takes in every change that
		// follows within 2*diffContext kept lines, as git's xdiff merges them.
		start := max(0, i-diffContext)
		end := i // one past the last change in the hunk
		for j := i; j < len(ops); {
			if ops[j].kind != ' ' {
				end = j + 1
				j++
				continue
			}
			k := j
			for k < len(ops) && ops[k].kind == ' ' {
				k++
			}
			if k == len(ops) || k-j > 2*diffContext {
				break
			}
			j = k
		}
		stop := min(len(ops), end+diffContext)
		oldN, newN := oldAt[stop]-oldAt[start], newAt[stop]-newAt[start]
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(oldAt[start], oldN), hunkRange(newAt[start], newN))
		for _, op := range ops[start:stop] {
			sb.WriteByte(op.kind)
			sb.WriteString(op.text)
			if !strings.HasSuffix(op.text, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return sb.String()
}

// hunkRange formats one side of a hunk header: the first line (1-based; for an empty range,
// the line before it) and the count, omitted when 1.
func hunkRange(before, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	default:
		return fmt.Sprintf("%d,%d", before+1, n)
	}
}

// BlameLine is one line of a memory's current content and the version that last changed it.
type BlameLine struct {
	Line    int    // 1-based
	Text    string // without its newline
	Version Version
}

// Blame returns, for each line of the current content of memory memoryID, the version that
// last changed it: the versions are walked oldest to newest, and each line keeps the version
// it came from through every line diff of consecutive contents, as git blame does (a diff
// past DiffTimeout gives the lines it did not match to the newer version; a blame past
// BlameTimeout is refused). A
// deletion empties the content, so the lines of a restored memory belong to the restore.
// A renamed memory is followed through its renames.
func (s *Store) Blame(ctx context.Context, memoryID string) ([]BlameLine, error) {
	var versions []verRec
	err := s.view(ctx, func(ct catTx) error {
		rec, ok, err := ct.memory(memoryID)
		if err != nil {
			return err
		}
		if !ok || rec.Deleted {
			return notFoundf("memory %s not found", memoryID)
		}
		versions, err = ct.memoryVersions(memoryID)
		return err
	})
	if err != nil {
		return nil, err
	}
	var prev string
	var origin []int // for each line of prev, the index of its version
	start := time.Now()
	for i, v := range versions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Since(start) > BlameTimeout {
			return nil, invalidf("the blame of memory %s was stopped at its time budget of %s, at version %d of %d: "+
				"its versions are too large and too unlike one another to follow line by line; read their diffs instead", memoryID, BlameTimeout, i+1, len(versions))
		}
		cur, err := s.versionContent(v)
		if err != nil {
			return nil, err
		}
		next := make([]int, 0, len(origin)+8)
		old := 0
		for _, op := range lineDiff(prev, cur) {
			switch op.kind {
			case ' ':
				next = append(next, origin[old])
				old++
			case '-':
				old++
			case '+':
				next = append(next, i)
			}
		}
		prev, origin = cur, next
	}
	lines := splitLines(prev)
	out := make([]BlameLine, len(lines))
	for i, l := range lines {
		out[i] = BlameLine{Line: i + 1, Text: strings.TrimSuffix(l, "\n"), Version: versionFrom(s.id, versions[origin[i]])}
	}
	return out, nil
}
