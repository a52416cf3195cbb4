package gitstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// How a commit becomes catalog records: the versions it makes, the memories they move and
// the store metadata it changes. A merge that gitmem made is read by applyMerge (merge.go),
// and catchUp (catchup.go) decides which of the two reads a commit.

// applyCommit reads one commit into the catalog: the versions it makes and the store
// metadata it changes. It is the one way into the catalog, for the writer's own commits and
// for commits made elsewhere (git push, plain git, sync) alike.
func (c catTx) applyCommit(or objectReader, commit *object.Commit, parentTree plumbing.Hash) error {
	changes, err := diffTrees(or, parentTree, commit.TreeHash, "", nil)
	if err != nil {
		return fmt.Errorf("diff commit %s: %w", commit.Hash, err)
	}
	for _, ch := range changes {
		if ch.Path == "/"+storeFile {
			if err := c.applyStoreFile(or, ch.To, commit); err != nil {
				return err
			}
		}
	}
	if len(changes) == 0 {
		if t := parseTrailers(commit.Message); t.get(trailerProposal) != "" {
			if err := c.addStoreChange(proposalStep(commit, t)); err != nil {
				return err
			}
		}
	}
	if mem := onlyMemories(changes); len(mem) > 0 {
		t := parseTrailers(commit.Message)
		if _, _, ok := t.version(); ok {
			err = c.applyGitmemCommit(or, commit, t, mem)
		} else {
			err = c.applyPlainCommit(or, commit, t, mem)
		}
		if err != nil {
			return err
		}
	}
	if strings.Contains(commit.Message, trailerRedacted) {
		if err := c.applyRedactedInPlace(or, commit, changes); err != nil {
			return err
		}
	}
	return c.setApplied(commit.Hash)
}

// applyRedactedInPlace records a redacted version of commit that its change no longer shows:
// a version that changed its memory in place, after a version that is redacted too, holds
// the marker where the parent holds it, so the commit changes nothing there. The version
// is its memory's, at the path where the commit holds the marker: for a commit of gitmem's
// the memory its trailers name, for one made with git the path its version id derives from.
func (c catTx) applyRedactedInPlace(or objectReader, commit *object.Commit, changes []fileChange) error {
	mark := redactionMarker()
	t := parseTrailers(commit.Message)
	var files []fileChange // the commit's files, read once if needed
	for _, kv := range t {
		if !strings.EqualFold(kv.Key, trailerRedacted) {
			continue
		}
		f := strings.Fields(kv.Value)
		if len(f) == 0 {
			continue
		}
		id := f[0]
		if v, ok, err := c.version(id); err != nil {
			return err
		} else if ok && v.Commit == commit.Hash.String() {
			continue // the commit's change made it
		}
		if memID, verID, ok := t.version(); ok {
			if verID != id || len(onlyMemories(changes)) > 0 {
				continue
			}
			rec, ok, err := c.memory(memID)
			if err != nil || !ok || rec.Deleted {
				return err
			}
			if h, err := fileAt(or, commit.TreeHash, rec.Path); err != nil {
				return err
			} else if h == mark {
				if err := c.applyGitmemCommit(or, commit, t, []fileChange{{Path: rec.Path, From: mark, To: mark, ToMode: filemode.Regular}}); err != nil {
					return err
				}
			}
			continue
		}
		if files == nil {
			all, err := diffTrees(or, plumbing.ZeroHash, commit.TreeHash, "", nil)
			if err != nil {
				return err
			}
			files = onlyMemories(all)
		}
		for _, ch := range files {
			if ch.To == mark && plainVersionID(commit, ch.Path) == id {
				if err := c.applyPlainCommit(or, commit, t, []fileChange{{Path: ch.Path, From: mark, To: mark, ToMode: ch.ToMode}}); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// onlyMemories keeps the changes of a commit that are changes of memories: none under
// .gitmem/, and a symlink or a submodule is no memory (a file that becomes one is deleted).
func onlyMemories(changes []fileChange) []fileChange {
	var mem []fileChange
	for _, ch := range changes {
		if ch.Path == "/"+storeFile || strings.HasPrefix(ch.Path, "/"+reservedDir+"/") {
			continue
		}
		if !ch.To.IsZero() && !ch.ToMode.IsFile() || ch.ToMode == filemode.Symlink {
			ch.To = plumbing.ZeroHash
		}
		if ch.From.IsZero() && ch.To.IsZero() {
			continue
		}
		mem = append(mem, ch)
	}
	return mem
}

// applyStoreFile records the store.json of blob h as the store's metadata and, when commit
// is not nil and the metadata changed, the change (storechg), to be seen in the feed.
func (c catTx) applyStoreFile(or objectReader, h plumbing.Hash, commit *object.Commit) error {
	if h.IsZero() {
		return nil // a store without store.json keeps the metadata it had
	}
	o, err := or.object(h)
	if err != nil {
		return err
	}
	raw, err := readEncoded(o)
	if err != nil {
		return err
	}
	var info StoreInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return fmt.Errorf("decode %s: %w", storeFile, err)
	}
	before := c.tx.Bucket(bMeta).Get(kStore)
	if commit != nil && !bytes.Equal(before, raw) {
		if err := c.addStoreChange(storeChange(commit, before, info)); err != nil {
			return err
		}
	}
	return c.putStoreFile(raw)
}

// storeChange is the record of commit's change of store.json to info (from before, nil for
// the store's first): its operation from gitmem's trailer, or, for a commit made elsewhere,
// from what changed. Its id derives from the commit, as a version's made with plain git does,
// so that a rebuild of the catalog and every replica give it the same.
func storeChange(commit *object.Commit, before []byte, info StoreInfo) storeChgRec {
	t := parseTrailers(commit.Message)
	op := t.get(trailerStoreOp)
	if op == "" {
		var old StoreInfo
		switch {
		case before == nil:
			op = "created"
		case json.Unmarshal(before, &old) == nil && old.ArchivedAt == nil && info.ArchivedAt != nil:
			op = "archived"
		default:
			op = "updated"
		}
	}
	// git keeps whole seconds: the writer's own commit, applied before it was ever read back,
	// has finer ones, and a rebuild must derive the same id and time.
	when := commit.Author.When.Truncate(time.Second)
	return storeChgRec{ID: derivedID(StoreChangePrefix, when, "store", derivationSource(commit)),
		Op: op, At: when.UnixMilli(), actorRec: recOf(commitActor(commit, t)), Commit: commit.Hash.String()}
}

// proposalStep is the record of a commit that records a step of a proposal's review. Its id
// derives from the commit, as a store change's does.
func proposalStep(commit *object.Commit, t trailers) storeChgRec {
	when := commit.Author.When.Truncate(time.Second)
	return storeChgRec{ID: derivedID(StoreChangePrefix, when, "proposal", derivationSource(commit)),
		Op: t.get(trailerProposalState), Prop: t.get(trailerProposal), At: when.UnixMilli(),
		actorRec: recOf(commitActor(commit, t)), Commit: commit.Hash.String()}
}

// commitActor is who made a commit: the actor its gitmem trailers name, else the user its
// author is (a commit made with plain git).
func commitActor(commit *object.Commit, t trailers) Actor {
	if actor, ok := actorFromTrailers(t, commit.Author.Name, commit.Author.Email); ok {
		return actor
	}
	return userActor(commit.Author.Name, commit.Author.Email)
}

// applyGitmemCommit reads a commit that gitmem made: one version of one memory, named by
// its trailers.
func (c catTx) applyGitmemCommit(or objectReader, commit *object.Commit, t trailers, changes []fileChange) error {
	memID, verID, _ := t.version()
	op := Operation(t.get(trailerOperation))
	actor := commitActor(commit, t)
	at, ok := idTime(verID)
	if !ok {
		at = commit.Author.When
	}
	var path string
	var blob plumbing.Hash
	for _, ch := range changes {
		if !ch.To.IsZero() {
			path, blob = ch.Path, ch.To
		} else if path == "" {
			path = ch.Path
		}
	}
	if blob.IsZero() {
		op = OpDeleted
	}
	return c.record(or, commit, verRec{ID: verID, Memory: memID, Op: op, Path: path, At: at.UnixMilli(),
		actorRec: recOf(actor)}, blob)
}

// applyPlainCommit reads a commit made with plain git: each changed file is a version, with
// ids derived from the commit and the path. A file removed and a file added with the same
// content in one commit are a rename of one memory.
func (c catTx) applyPlainCommit(or objectReader, commit *object.Commit, t trailers, changes []fileChange) error {
	actor := userActor(commit.Author.Name, commit.Author.Email)
	renamedFrom := plainRenames(changes, t)
	paired := map[int]bool{}
	for _, r := range renamedFrom {
		paired[r] = true
	}
	base := verRec{At: commit.Author.When.UnixMilli(), actorRec: recOf(actor)}
	base.APIKey = c.pushKey(commit.Hash) // the key that pushed it, if it came over HTTP
	for i, ch := range changes {
		if paired[i] {
			continue
		}
		v := base
		v.ID = plainVersionID(commit, ch.Path)
		v.Path = ch.Path
		src := ch.Path
		if r, ok := renamedFrom[i]; ok {
			src = changes[r].Path
		}
		id, ok, err := c.memoryBefore(or, commit, src)
		if err != nil {
			return err
		}
		switch {
		case ch.To.IsZero():
			if !ok {
				continue // a file the catalog never knew (not a memory)
			}
			v.Memory, v.Op = id, OpDeleted
		case ok:
			v.Memory, v.Op = id, OpModified
		default:
			v.Memory = plainMemoryID(commit, ch.Path)
			v.Op = OpCreated
		}
		if err := c.record(or, commit, v, ch.To); err != nil {
			return err
		}
	}
	return nil
}

// memoryBefore returns the memory that lives at path in the parent of commit, made with plain
// git. The catalog knows it when the parent is the commit it applied last; a commit on the
// second side of a merge comes after the first side, and there it is read from history, so
// that every replica and every rebuild gives a change the same memory, whichever side it
// applied first.
func (c catTx) memoryBefore(or objectReader, commit *object.Commit, path string) (string, bool, error) {
	applied := c.applied()
	if len(commit.ParentHashes) == 0 && applied.IsZero() || len(commit.ParentHashes) > 0 && commit.ParentHashes[0] == applied {
		id, _, ok, err := c.live(path)
		return id, ok, err
	}
	if len(commit.ParentHashes) == 0 {
		return "", false, nil
	}
	id, _, err := memoryAt(or, commit.ParentHashes[0], path)
	return id, id != "", err
}

// after is the state in which version v leaves a memory that was in state r (existed: the
// memory had a state; else v makes it).
func (r memRec) after(v verRec, existed bool) memRec {
	if !existed {
		r = memRec{Created: v.At}
	}
	if v.Op == OpDeleted {
		r.Deleted = true
		if r.Path == "" {
			r.Path = v.Path
		}
	} else {
		r.Path, r.Blob, r.SHA, r.Size, r.Deleted = v.Path, v.Blob, v.SHA, v.Size, false
	}
	r.Version = v.ID
	if v.At > r.Updated { // a git commit time has whole seconds: never move backwards
		r.Updated = v.At
	}
	return r
}

// record adds a version and moves its memory to the state it leaves.
func (c catTx) record(or objectReader, commit *object.Commit, v verRec, blob plumbing.Hash) error {
	v.Commit = commit.Hash.String()
	v.ApprovedBy = parseTrailers(commit.Message).get(trailerApprovedBy)
	if !blob.IsZero() {
		o, err := or.object(blob)
		if err != nil {
			return err
		}
		content, err := readEncoded(o)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(content)
		v.Blob, v.SHA, v.Size = blob.String(), hex.EncodeToString(sum[:]), len(content)
	}
	rec, existed, err := c.memory(v.Memory)
	if err != nil {
		return err
	}
	wasLive, oldSize := existed && !rec.Deleted, rec.Size
	if existed && !rec.Deleted && rec.Path != v.Path {
		if err := c.freePath(rec.Path, v.Memory); err != nil {
			return err
		}
	}
	if v.Op == OpDeleted {
		if err := c.freePath(v.Path, v.Memory); err != nil {
			return err
		}
	} else if id, _ := c.pathID(v.Path); id != v.Memory {
		// An update in place finds the entry as it must be, and a Put of the same would still
		// rewrite its page and the pages above it (3 of a write's 21 at 100,000 memories).
		if err := c.setPath(v.Path, v.Memory); err != nil {
			return err
		}
	}
	rec = rec.after(v, existed)
	if err := c.putMemory(v.Memory, rec); err != nil {
		return err
	}
	if err := c.addUsage(liveDelta(wasLive, !rec.Deleted, oldSize, rec.Size)); err != nil {
		return err
	}
	v.Redacted = redactionOf(commit.Message, v.ID)
	return c.addVersion(v)
}
