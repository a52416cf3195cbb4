package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/internal/english"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// This file merges a remote's main into the store's main: what gitmem sync does when both
// sides changed since they last met. The rules and their reasons are in docs/git.md.

// MergeOutcome says what Integrate did.
type MergeOutcome string

const (
	UpToDate    MergeOutcome = "up to date"   // main is the remote's main
	Ahead       MergeOutcome = "ahead"        // main contains the remote's main: push it
	FastForward MergeOutcome = "fast-forward" // main moved to the remote's main
	Merged      MergeOutcome = "merged"       // a merge commit joined both
)

// Conflict is a memory that both sides changed in overlapping ways: the remote's content
// stays at Path and ours is kept beside it at CopyPath, as the memory CopyMemoryID.
type Conflict struct {
	Path         string `json:"path"`
	CopyPath     string `json:"copy_path"`
	MemoryID     string `json:"memory_id"`
	CopyMemoryID string `json:"copy_memory_id"`
}

// MergeResult is what Integrate did.
type MergeResult struct {
	Outcome MergeOutcome `json:"outcome"`
	Before  string       `json:"before"` // main before
	After   string       `json:"after"`  // main after
	// Fetched is how many of the remote's commits main did not have.
	Fetched int `json:"fetched"`
	// TextMerged are the paths that both sides changed and that merged as text.
	TextMerged []string `json:"text_merged,omitempty"`
	// Kept are the paths deleted on one side and changed on the other: the change is kept.
	Kept       []string   `json:"kept,omitempty"`
	Conflicts  []Conflict `json:"conflicts,omitempty"`
	FromRemote int        `json:"from_remote"` // memory paths the remote changed since the merge base
	FromHere   int        `json:"from_here"`   // memory paths we changed since the merge base
}

// ErrUnrelated is returned by Integrate when the remote's main shares no commit with ours.
var ErrUnrelated = &Error{Kind: KindConflict, Message: "the remote's main shares no history with this store: " +
	"a remote must hold this store's history (push this store to an empty repository, or import the store from the remote)"}

// Integrate brings the commit theirs (the remote named remote's main, fetched into the
// repository) into main: nothing if main has it, a fast-forward if main is in its history,
// else a merge commit by SystemActor with theirs as first parent and our main as second,
// made by the rules of docs/git.md. It runs in the store's writer and moves main with one
// compare-and-swap, so it never races the API's writes; if a push moved main meanwhile it
// merges again. It needs the git program (merge-base, merge-file, log).
func (s *Store) Integrate(ctx context.Context, remote string, theirs string) (MergeResult, error) {
	return s.IntegrateWith(ctx, remote, theirs, IntegrateOptions{})
}

// IntegrateOptions change an Integrate.
type IntegrateOptions struct {
	// RefuseConflicts refuses a merge that would conflict, with a *MergeConflictError, and
	// writes nothing: decided inside the writer, so no write can slip in between.
	RefuseConflicts bool
}

// MergeConflictError refuses a merge that would conflict (IntegrateOptions.RefuseConflicts).
type MergeConflictError struct{ Conflicts []Conflict }

func (e *MergeConflictError) Error() string {
	paths := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		paths[i] = c.Path
	}
	return "the merge would conflict at " + strings.Join(paths, ", ") + "; nothing was written"
}

// Unwrap makes it a KindConflict error.
func (e *MergeConflictError) Unwrap() error { return &Error{Kind: KindConflict, Message: e.Error()} }

// IntegrateWith is Integrate with options.
func (s *Store) IntegrateWith(ctx context.Context, remote string, theirs string, opts IntegrateOptions) (MergeResult, error) {
	if err := needGit("sync"); err != nil {
		return MergeResult{}, err
	}
	th, ok := parseHash(theirs)
	if !ok {
		return MergeResult{}, invalidf("%q is not a commit hash", theirs)
	}
	var res MergeResult
	err := s.runTask(ctx, func() error {
		// git fetch wrote packs that the set of packs does not list yet.
		s.repo.Reload()
		if _, ok := s.repo.hasObject(th); !ok {
			return fmt.Errorf("integrate %s: commit %s is not in the repository (fetch it first)", remote, theirs)
		}
		m := &merger{s: s, ctx: ctx, remote: remote, theirs: th, refuseConflicts: opts.RefuseConflicts}
		req := &request{ctx: ctx, fn: func(b *batch) (any, error) { return m.run(b) }}
		for attempt := 0; ; attempt++ {
			results, err := s.tryGroup([]*request{req})
			if errors.Is(err, errRefMoved) && attempt < 5 {
				continue // a push moved main: merge with the new main
			}
			if err != nil {
				return err
			}
			if results[0].err != nil {
				return results[0].err
			}
			res = results[0].v.(MergeResult)
			return nil
		}
	})
	return res, err
}

// merger builds one merge inside the writer.
type merger struct {
	s      *Store
	ctx    context.Context
	remote string
	theirs plumbing.Hash
	// refuseConflicts: a merge with conflicts returns a MergeConflictError before its commit.
	refuseConflicts bool

	b          *batch
	base, ours plumbing.Hash
	result     plumbing.Hash // the merged tree being built, from theirs' tree
	short      string        // of our head, in conflict paths
	when       time.Time
	live       []mergeLive
	gone       []mergeGone
	free       []string // paths
	res        MergeResult
}

func (m *merger) run(b *batch) (MergeResult, error) {
	// Afresh on every try: a push may have moved main since the last one.
	m.b, m.ours = b, b.head
	m.res = MergeResult{Before: b.head.String()}
	m.live, m.gone, m.free = nil, nil, nil
	if m.theirs == m.ours {
		m.res.Outcome, m.res.After = UpToDate, m.ours.String()
		return m.res, nil
	}
	base, err := m.mergeBase()
	if err != nil {
		return m.res, err
	}
	m.base = base
	if base == m.theirs {
		m.res.Outcome, m.res.After = Ahead, m.ours.String()
		return m.res, nil
	}
	chain, err := m.newCommits()
	if err != nil {
		return m.res, err
	}
	m.res.Fetched = len(chain)
	theirsCommit, err := m.s.repo.commit(m.theirs)
	if err != nil {
		return m.res, b.fail(err)
	}
	if base == m.ours {
		for _, c := range chain {
			if err := b.ct.applyAny(m.s.repo, c); err != nil {
				return m.res, b.fail(err)
			}
		}
		b.head, b.root = m.theirs, theirsCommit.TreeHash
		m.res.Outcome, m.res.After = FastForward, m.theirs.String()
		return m.res, nil
	}
	if err := m.merge(theirsCommit, chain); err != nil {
		return m.res, err
	}
	m.res.Outcome, m.res.After = Merged, b.head.String()
	return m.res, nil
}

// mergeBase finds the best common ancestor of ours and theirs with git merge-base.
func (m *merger) mergeBase() (plumbing.Hash, error) {
	out, err := m.gitOut(nil, "merge-base", m.ours.String(), m.theirs.String())
	if err != nil {
		if gitexec.ExitCode(err) == 1 {
			return plumbing.ZeroHash, ErrUnrelated
		}
		return plumbing.ZeroHash, m.b.fail(err)
	}
	h, ok := parseHash(strings.TrimSpace(string(out)))
	if !ok {
		return plumbing.ZeroHash, m.b.fail(fmt.Errorf("git merge-base: unexpected output %q", out))
	}
	return h, nil
}

// newCommits lists the commits of theirs that ours lacks, parents first (git rev-list,
// which walks a long history much faster than decoding it commit by commit here).
func (m *merger) newCommits() ([]*object.Commit, error) {
	out, err := m.gitOut(nil, "rev-list", "--reverse", "--topo-order", m.theirs.String(), "--not", m.ours.String())
	if err != nil {
		return nil, m.b.fail(err)
	}
	var chain []*object.Commit
	for _, line := range strings.Fields(string(out)) {
		h, ok := parseHash(line)
		if !ok {
			return nil, m.b.fail(fmt.Errorf("git rev-list: unexpected output %q", line))
		}
		c, err := m.s.repo.commit(h)
		if err != nil {
			return nil, m.b.fail(err)
		}
		chain = append(chain, c)
	}
	return chain, nil
}

// gitOut runs git in the store's repository and returns its standard output.
func (m *merger) gitOut(stdin []byte, args ...string) ([]byte, error) {
	dir, err := filepath.Abs(m.s.repo.Path())
	if err != nil {
		return nil, err
	}
	cmd := gitexec.Command(m.ctx, args...)
	cmd.Env = []string{"GIT_DIR=" + dir, "GIT_LITERAL_PATHSPECS=1"}
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// merge builds the merged tree and the merge commit, applies theirs' side (chain) and then
// the merge to the catalog, and moves the batch's head to the merge.
func (m *merger) merge(theirsCommit *object.Commit, chain []*object.Commit) error {
	b := m.b
	baseCommit, err := m.s.repo.commit(m.base)
	if err != nil {
		return b.fail(err)
	}
	m.when = b.now()
	m.short = m.ours.String()[:7]
	m.result = theirsCommit.TreeHash
	dO, err := memoryChanges(b, baseCommit.TreeHash, b.root)
	if err != nil {
		return b.fail(err)
	}
	dT, err := memoryChanges(b, baseCommit.TreeHash, theirsCommit.TreeHash)
	if err != nil {
		return b.fail(err)
	}
	// A merge on either side may have made versions without changing content (a conflict
	// that kept the remote's content): the paths its trailers name count as changed too.
	if err := m.addMergedPaths(dO, baseCommit.TreeHash, b.root, m.ours); err != nil {
		return err
	}
	if err := m.addMergedPaths(dT, baseCommit.TreeHash, theirsCommit.TreeHash, m.theirs); err != nil {
		return err
	}
	m.res.FromHere, m.res.FromRemote = len(dO), len(dT)
	// The store's metadata: ours if only we changed it, else the remote's.
	storeO, _ := m.fileIn(b.root, "/"+storeFile)
	storeB, _ := m.fileIn(baseCommit.TreeHash, "/"+storeFile)
	storeT, _ := m.fileIn(theirsCommit.TreeHash, "/"+storeFile)
	if storeO != storeB && storeT == storeB {
		if err := m.set("/"+storeFile, storeO); err != nil {
			return err
		}
	}
	paths := make([]string, 0, len(dO))
	for p := range dO {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// First the paths only we changed, so that the conflict copies below see them.
	for _, p := range paths {
		if _, both := dT[p]; !both {
			if err := m.oursOnly(p, dO[p]); err != nil {
				return err
			}
		}
	}
	for _, p := range paths {
		if t, both := dT[p]; both {
			if err := m.both(p, dO[p], t, dT); err != nil {
				return err
			}
		}
	}
	if m.refuseConflicts && len(m.res.Conflicts) > 0 {
		return &MergeConflictError{Conflicts: m.res.Conflicts} // before the commit: main does not move
	}
	// The commit, then the catalog: theirs' side, then the merge's resolutions.
	commit, err := m.commit(theirsCommit)
	if err != nil {
		return err
	}
	for _, c := range chain {
		if err := b.ct.applyAny(m.s.repo, c); err != nil {
			return b.fail(err)
		}
	}
	if err := b.ct.applyMerge(b, commit); err != nil {
		return b.fail(err)
	}
	b.head, b.root = commit.Hash, commit.TreeHash
	return nil
}

// addMergedPaths adds to changes the paths named by the trailers of the merges that gitmem
// made between the merge base and side (whose tree is tree).
func (m *merger) addMergedPaths(changes map[string]fileChange, baseTree, tree, side plumbing.Hash) error {
	out, err := m.gitOut(nil, "log", "--merges", "--format=%x00%B", m.base.String()+".."+side.String())
	if err != nil {
		return m.b.fail(err)
	}
	for _, msg := range strings.Split(string(out), "\x00") {
		for _, kv := range parseTrailers(msg) {
			path := mergedPath(kv.Key, kv.Value)
			if _, ok := changes[path]; ok || path == "" {
				continue
			}
			from, err := m.fileIn(baseTree, path)
			if err != nil {
				return err
			}
			to, err := m.fileIn(tree, path)
			if err != nil {
				return err
			}
			changes[path] = fileChange{Path: path, From: from, To: to}
		}
	}
	return nil
}

// memoryChanges lists the memory files that differ between two trees, by path.
func memoryChanges(or objectReader, a, b plumbing.Hash) (map[string]fileChange, error) {
	changes, err := diffTrees(or, a, b, "", nil)
	if err != nil {
		return nil, err
	}
	out := map[string]fileChange{}
	for _, ch := range changes {
		if strings.HasPrefix(ch.Path, "/"+reservedDir+"/") {
			continue
		}
		out[ch.Path] = ch
	}
	return out, nil
}

// fileIn returns the blob at path in tree root, or the zero hash.
func (m *merger) fileIn(root plumbing.Hash, path string) (plumbing.Hash, error) {
	h, err := fileAt(m.b, root, path)
	if err != nil {
		return h, m.b.fail(err)
	}
	return h, nil
}

// set puts blob at path in the merged tree (the zero hash removes it).
func (m *merger) set(path string, blob plumbing.Hash) error {
	h, err := setEntry(m.b, m.result, treePath(path), blob, m.b.emit)
	if err != nil {
		return m.b.fail(err)
	}
	m.result = h
	return nil
}

// setContent puts content at path in the merged tree.
func (m *merger) setContent(path string, content []byte) (plumbing.Hash, error) {
	o := blobObject(content)
	m.b.emit(o)
	return o.Hash(), m.set(path, o.Hash())
}

// occupied reports whether something in the merged tree is in the way of a new file at
// path: a file or folder at path, or a file where one of its folders would be. A file at
// path with the content was (what both sides started from) is not in the way.
func (m *merger) occupied(path string, was plumbing.Hash) (bool, error) {
	e, found, blocked, err := entryAt(m.b, m.result, treePath(path))
	if err != nil {
		return false, m.b.fail(err)
	}
	return blocked != "" || found && (!e.Mode.IsFile() || e.Hash != was), nil
}

// oursOnly carries a change that only we made into the merged tree. A file of the
// remote's in the way (a file where we have a folder, or the other way) keeps its place,
// and ours goes to a conflict path.
func (m *merger) oursOnly(path string, ch fileChange) error {
	if ch.To.IsZero() {
		return m.set(path, ch.To)
	}
	id, _, _, err := m.b.ct.live(path)
	if err != nil {
		return m.b.fail(err)
	}
	_, err = m.placeOurs(path, ch.From, ch.To, id, false)
	return err
}

// placeOurs puts our content blob of memory id at path in the merged tree, or, if the
// remote's tree has something else in the way there (a folder at path, a file where one of
// its folders would be), beside it at a conflict path, reported as a conflict. was is the
// content at path that is not in the way (what both sides started from). With live set, the
// memory gets a version at its place in any case; else only when it moves. It returns
// the path used.
func (m *merger) placeOurs(path string, was, blob plumbing.Hash, id string, live bool) (string, error) {
	taken, err := m.occupied(path, was)
	if err != nil {
		return "", err
	}
	at := path
	if taken {
		if at, err = m.conflictPath(path); err != nil {
			return "", err
		}
		m.res.Conflicts = append(m.res.Conflicts, Conflict{Path: path, CopyPath: at, CopyMemoryID: id})
	}
	if err := m.set(at, blob); err != nil {
		return "", err
	}
	if taken || live {
		m.addLive(id, OpModified, at)
	}
	return at, nil
}

// both resolves a path that both sides changed.
func (m *merger) both(path string, o, t fileChange, dT map[string]fileChange) error {
	b := m.b
	base, ours, theirs := o.From, o.To, t.To
	switch {
	case ours.IsZero() && theirs.IsZero(): // deleted (or moved away) on both sides
		return m.bothGone(path, dT)
	case base.IsZero() && (ours.IsZero() || theirs.IsZero()):
		// Created on one side; the other only freed the path (a merge's trailers): the
		// memory lives there whichever side the catalog applies last.
		if theirs.IsZero() {
			id, _, _, err := b.ct.live(path)
			if err != nil {
				return b.fail(err)
			}
			_, err = m.placeOurs(path, plumbing.ZeroHash, ours, id, false)
			return err
		}
		return nil
	case ours.IsZero(): // we deleted (or moved) it, the remote changed it
		mem, _, err := m.lastChange(m.base, path)
		if err != nil {
			return err
		}
		rec, ok, err := b.ct.memory(mem)
		if err != nil {
			return b.fail(err)
		}
		if ok && !rec.Deleted && rec.Path != path {
			// We moved it: the remote's change follows it to its new path.
			return m.followMove(path, rec.Path, mem, base, theirs)
		}
		m.addLive(mem, OpModified, path) // the remote's content is at path already
		m.res.Kept = append(m.res.Kept, path)
		return nil
	case theirs.IsZero(): // the remote deleted (or moved) it, we changed it
		mem, _, err := m.lastChange(m.base, path)
		if err != nil {
			return err
		}
		if moved, err := m.movedIn(mem, dT); err != nil || moved != "" {
			if err != nil {
				return err
			}
			return m.followTheirMove(path, moved, mem, base, ours)
		}
		at, err := m.placeOurs(path, plumbing.ZeroHash, ours, mem, true)
		if err == nil && at == path {
			m.res.Kept = append(m.res.Kept, path)
		}
		return err
	}
	idO, _, _, err := b.ct.live(path)
	if err != nil {
		return b.fail(err)
	}
	idT, _, err := m.lastChange(m.theirs, path)
	if err != nil {
		return err
	}
	if idO == idT && !base.IsZero() {
		merged, clean, err := m.merge3(ours, base, theirs)
		if err != nil {
			return err
		}
		if clean {
			if _, err := m.setContent(path, merged); err != nil {
				return err
			}
			m.addLive(idT, OpModified, path)
			if ours != theirs {
				m.res.TextMerged = append(m.res.TextMerged, path)
			}
			return nil
		}
	}
	// Overlapping changes, or a memory created at the path on both sides: the remote's
	// stays, ours goes beside it.
	return m.conflict(path, idO, idT, ours)
}

// bothGone resolves a path whose memory both sides deleted or moved away. A memory that one
// side moved lives where it was moved; one that both moved lives where the remote moved it,
// and our copy becomes a new memory; one that both deleted is deleted.
func (m *merger) bothGone(path string, dT map[string]fileChange) error {
	mem, _, err := m.lastChange(m.base, path)
	if err != nil || mem == "" {
		return err
	}
	rec, ok, err := m.b.ct.memory(mem)
	if err != nil {
		return m.b.fail(err)
	}
	oursAt := ""
	if ok && !rec.Deleted && rec.Path != path {
		oursAt = rec.Path
	}
	theirsAt, err := m.movedIn(mem, dT)
	if err != nil {
		return err
	}
	switch {
	case theirsAt != "" && oursAt != "" && theirsAt != oursAt:
		m.addLive(mem, OpModified, theirsAt)
		m.addLive(NewID(MemoryPrefix, m.when), OpCreated, oursAt)
	case theirsAt != "":
		m.addLive(mem, OpModified, theirsAt)
	case oursAt != "":
		m.addLive(mem, OpModified, oursAt)
	default:
		_, ver, err := m.lastChange(m.theirs, path)
		if err != nil {
			return err
		}
		m.gone = append(m.gone, mergeGone{mem: mem, ver: ver, path: path})
	}
	return nil
}

// conflict keeps the remote's memory idT at path and ours (content ours) beside it, as
// our memory idO if that is another memory, else as a new memory.
func (m *merger) conflict(path, idO, idT string, ours plumbing.Hash) error {
	cp, err := m.conflictPath(path)
	if err != nil {
		return err
	}
	if err := m.set(cp, ours); err != nil {
		return err
	}
	m.addLive(idT, OpModified, path)
	copyID, op := idO, OpModified
	if idO == idT || idO == "" {
		copyID, op = NewID(MemoryPrefix, m.when), OpCreated
	}
	m.addLive(copyID, op, cp)
	m.res.Conflicts = append(m.res.Conflicts, Conflict{Path: path, CopyPath: cp, MemoryID: idT, CopyMemoryID: copyID})
	return nil
}

// followMove merges the remote's change of a memory (base -> theirs at path) into the memory
// that we moved to newPath. If the changes overlap, the remote's content stays at path as a
// new memory, and ours stays where we moved it.
func (m *merger) followMove(path, newPath, mem string, base, theirs plumbing.Hash) error {
	ours, err := m.fileIn(m.result, newPath)
	if err != nil {
		return err
	}
	if err := m.set(path, plumbing.ZeroHash); err != nil {
		return err
	}
	m.free = append(m.free, path)
	if clean, err := m.mergeMoved(newPath, mem, ours, base, theirs); err != nil || clean {
		return err
	}
	if err := m.set(path, theirs); err != nil {
		return err
	}
	copyID := NewID(MemoryPrefix, m.when)
	m.free = m.free[:len(m.free)-1]
	m.addLive(copyID, OpCreated, path)
	m.addLive(mem, OpModified, newPath)
	m.res.Conflicts = append(m.res.Conflicts, Conflict{Path: newPath, CopyPath: path, MemoryID: mem, CopyMemoryID: copyID})
	return nil
}

// followTheirMove merges our change of a memory (base -> ours at path) into the memory that
// the remote moved to newPath. If the changes overlap, ours goes beside newPath.
func (m *merger) followTheirMove(path, newPath, mem string, base, ours plumbing.Hash) error {
	theirs, err := m.fileIn(m.result, newPath)
	if err != nil {
		return err
	}
	m.free = append(m.free, path)
	if clean, err := m.mergeMoved(newPath, mem, ours, base, theirs); err != nil || clean {
		return err
	}
	return m.conflict(newPath, "", mem, ours)
}

// mergeMoved merges both sides' changes of memory mem, which one side moved to newPath, as
// text into newPath; clean is false if they overlap, and then nothing changed.
func (m *merger) mergeMoved(newPath, mem string, ours, base, theirs plumbing.Hash) (clean bool, err error) {
	merged, clean, err := m.merge3(ours, base, theirs)
	if err != nil || !clean {
		return false, err
	}
	if _, err := m.setContent(newPath, merged); err != nil {
		return false, err
	}
	m.addLive(mem, OpModified, newPath)
	m.res.TextMerged = append(m.res.TextMerged, newPath)
	return true, nil
}

// movedIn returns where the remote moved memory mem to: a path the remote changed where
// mem lives in its tree, or "".
func (m *merger) movedIn(mem string, dT map[string]fileChange) (string, error) {
	var paths []string
	for p, ch := range dT {
		if !ch.To.IsZero() && ch.From.IsZero() {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		id, _, err := m.lastChange(m.theirs, p)
		if err != nil {
			return "", err
		}
		if id == mem {
			return p, nil
		}
	}
	return "", nil
}

// addLive records that memory mem lives at path after the merge, with a new version. A
// path whose memory history does not name (a file the catalog never read as a memory) gets
// no record.
func (m *merger) addLive(mem string, op Operation, path string) {
	if mem == "" {
		return
	}
	m.live = append(m.live, mergeLive{mem: mem, ver: NewID(VersionPrefix, m.when), op: string(op), path: path})
}

// conflictPath returns a free path beside path for our conflicting copy:
// /a/b.md -> /a/b.conflict-1a2b3c4.md (and -2, -3, ... if that is taken).
func (m *merger) conflictPath(path string) (string, error) {
	dir, name := filepath.Split(path)
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" {
		stem, ext = name, ""
	}
	for n := 1; ; n++ {
		suffix := ".conflict-" + m.short
		if n > 1 {
			suffix += fmt.Sprintf("-%d", n)
		}
		cp := dir + stem + suffix + ext
		if ValidateNewPath(cp) != nil {
			cp = fmt.Sprintf("/conflict-%s-%d%s", m.short, n, ext)
		}
		taken, err := m.occupied(cp, plumbing.ZeroHash)
		if err != nil {
			return "", err
		}
		if !taken {
			return cp, nil
		}
	}
}

// merge3 merges the changes base -> ours and base -> theirs as text (git merge-file). clean
// is false where they overlap, or where the result would not be valid memory content.
func (m *merger) merge3(ours, base, theirs plumbing.Hash) ([]byte, bool, error) {
	dir, err := os.MkdirTemp("", "gitmem-merge")
	if err != nil {
		return nil, false, m.b.fail(err)
	}
	defer os.RemoveAll(dir)
	var files []string
	for _, h := range []plumbing.Hash{ours, base, theirs} {
		var content []byte
		if !h.IsZero() {
			o, err := m.b.object(h)
			if err != nil {
				return nil, false, m.b.fail(err)
			}
			if content, err = readEncoded(o); err != nil {
				return nil, false, m.b.fail(err)
			}
		}
		f := filepath.Join(dir, fmt.Sprint(len(files)))
		if err := os.WriteFile(f, content, 0o600); err != nil {
			return nil, false, m.b.fail(err)
		}
		files = append(files, f)
	}
	out, err := m.gitOut(nil, append([]string{"merge-file", "-p", "-q"}, files...)...)
	if code := gitexec.ExitCode(err); code > 0 && code < 128 {
		return nil, false, nil // that many conflicts
	}
	if err != nil {
		return nil, false, m.b.fail(err)
	}
	if ValidateContent(string(out)) != nil {
		return nil, false, nil
	}
	return out, true, nil
}

// lastChange returns the memory and version of the change that last touched path in the
// history of rev, as the catalog reads them (memoryAt). mem is "" if no commit did.
func (m *merger) lastChange(rev plumbing.Hash, path string) (mem, ver string, err error) {
	if mem, ver, err = memoryAt(m.b, rev, path); err != nil {
		return "", "", m.b.fail(err)
	}
	return mem, ver, nil
}

// commit makes the merge commit of the merged tree: parents theirs and ours, author
// SystemActor, a subject and body that say what merged, and the trailers for the catalog.
func (m *merger) commit(theirsCommit *object.Commit) (*object.Commit, error) {
	r := &m.res
	subject := fmt.Sprintf("merge %s/main: %s changed on the remote, %d here", m.remote,
		english.Count(r.FromRemote, "path"), r.FromHere)
	var body strings.Builder
	for _, p := range r.TextMerged {
		fmt.Fprintf(&body, "Merged as text: %s\n", p)
	}
	for _, p := range r.Kept {
		fmt.Fprintf(&body, "Kept (deleted on one side, changed on the other): %s\n", p)
	}
	for _, c := range r.Conflicts {
		fmt.Fprintf(&body, "Conflict: %s (the remote's content stays; ours is at %s)\n", c.Path, c.CopyPath)
	}
	if len(r.Conflicts) > 0 {
		subject += fmt.Sprintf(", %s", english.Count(len(r.Conflicts), "conflict"))
	}
	t := append(actorTrailers(SystemActor), mergeTrailers(m.live, m.gone, m.free)...)
	msg := formatMessage(subject, t)
	if body.Len() > 0 {
		msg = subject + "\n\n" + body.String() + "\n" + strings.TrimPrefix(msg, subject+"\n\n")
	}
	tree, err := m.b.gitTree(m.result)
	if err != nil {
		return nil, m.b.fail(err)
	}
	name, email := authorOf(SystemActor)
	c := &object.Commit{
		Author:       object.Signature{Name: name, Email: email, When: m.when},
		Committer:    object.Signature{Name: "gitmem", Email: "gitmem@localhost", When: m.when},
		Message:      msg,
		TreeHash:     tree,
		ParentHashes: []plumbing.Hash{m.theirs, m.ours},
	}
	o := &plumbing.MemoryObject{}
	if err := c.Encode(o); err != nil {
		return nil, m.b.fail(fmt.Errorf("encode merge commit: %w", err))
	}
	c.Hash = o.Hash()
	m.b.emit(o)
	return c, nil
}

// applyMerge reads a merge commit that gitmem made into the catalog: its two sides are
// applied already (in either order); its trailers say which memory lives at each path that
// both changed, which memories are deleted and which versions are current.
func (c catTx) applyMerge(or objectReader, commit *object.Commit) error {
	if h, err := fileAt(or, commit.TreeHash, "/"+storeFile); err != nil {
		return err
	} else if err := c.applyStoreFile(or, h, nil); err != nil { // each side recorded its own changes
		return err
	}
	t := parseTrailers(commit.Message)
	actor, _ := actorFromTrailers(t, commit.Author.Name, commit.Author.Email)
	for _, kv := range t {
		if strings.EqualFold(kv.Key, trailerMergeFree) && kv.Value != mergeFreeNone {
			if err := c.deletePath(kv.Value); err != nil {
				return err
			}
		}
	}
	for _, kv := range t {
		if !strings.EqualFold(kv.Key, trailerMergeGone) {
			continue
		}
		g, ok := parseMergeGone(kv.Value)
		if !ok {
			return fmt.Errorf("merge %s: bad %s trailer %q", commit.Hash, trailerMergeGone, kv.Value)
		}
		rec, ok, err := c.memory(g.mem)
		if err != nil || !ok {
			return err
		}
		if err := c.freePath(g.path, g.mem); err != nil {
			return err
		}
		if !rec.Deleted {
			if err := c.freePath(rec.Path, g.mem); err != nil {
				return err
			}
			if err := c.addUsage(liveDelta(true, false, rec.Size, 0)); err != nil {
				return err
			}
		}
		rec.Deleted, rec.Version = true, g.ver
		if err := c.putMemory(g.mem, rec); err != nil {
			return err
		}
	}
	for _, kv := range t {
		if !strings.EqualFold(kv.Key, trailerMergeLive) {
			continue
		}
		l, ok := parseMergeLive(kv.Value)
		if !ok {
			return fmt.Errorf("merge %s: bad %s trailer %q", commit.Hash, trailerMergeLive, kv.Value)
		}
		if l.path == redactedPath {
			// A redaction of this version scrubbed the path from the trailer (before it
			// left merge trailers alone).
			p, err := c.scrubbedLivePath(or, commit, t, l.mem)
			if err != nil {
				return err
			}
			l.path = p
		}
		blob, err := fileAt(or, commit.TreeHash, l.path)
		if err != nil {
			return err
		}
		if blob.IsZero() {
			return fmt.Errorf("merge %s: %s names %s, which its tree does not have", commit.Hash, trailerMergeLive, l.path)
		}
		when, ok := idTime(l.ver)
		if !ok {
			when = commit.Author.When
		}
		v := verRec{ID: l.ver, Memory: l.mem, Op: Operation(l.op), Path: l.path, At: when.UnixMilli(), actorRec: recOf(actor)}
		v.APIKey = "" // a merge's versions name no key
		if err := c.record(or, commit, v, blob); err != nil {
			return err
		}
	}
	return c.setApplied(commit.Hash)
}

// scrubbedLivePath finds the path of merge commit's Gitmem-Merge-Live trailer of memory mem
// that a redaction scrubbed: the version is redacted, so the merge's tree holds the marker
// there. The memory's path as the sides left it is tried first; but a rebuild reads the
// merge's first parent first, and the other side's change of a memory that the first one
// moved leaves it at the path the merge freed. Then it is the one path that the merge
// changes from a parent to the marker and that no other trailer of the merge names.
func (c catTx) scrubbedLivePath(or objectReader, commit *object.Commit, t trailers, mem string) (string, error) {
	mark := redactionMarker()
	if rec, ok, err := c.memory(mem); err != nil {
		return "", err
	} else if ok {
		if h, err := fileAt(or, commit.TreeHash, rec.Path); err != nil {
			return "", err
		} else if h == mark {
			return rec.Path, nil
		}
	}
	named := map[string]bool{}
	for _, kv := range t {
		if strings.EqualFold(kv.Key, trailerMergeLive) {
			if l, ok := parseMergeLive(kv.Value); ok {
				named[l.path] = true
			}
		}
	}
	var found []string
	for _, p := range commit.ParentHashes {
		pc, err := readCommit(or, p)
		if err != nil {
			return "", err
		}
		changes, err := diffTrees(or, pc.TreeHash, commit.TreeHash, "", nil)
		if err != nil {
			return "", err
		}
		for _, ch := range onlyMemories(changes) {
			if ch.To == mark && !named[ch.Path] && !slices.Contains(found, ch.Path) {
				found = append(found, ch.Path)
			}
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("merge %s: the %s trailer of memory %s names %s, and %d paths of its tree may be it", commit.Hash, trailerMergeLive, mem, redactedPath, len(found))
	}
	return found[0], nil
}

// fileAt returns the blob at path in tree root, or the zero hash.
func fileAt(or objectReader, root plumbing.Hash, path string) (plumbing.Hash, error) {
	e, found, _, err := entryAt(or, root, treePath(path))
	if err != nil || !found || !e.Mode.IsFile() {
		return plumbing.ZeroHash, err
	}
	return e.Hash, nil
}
