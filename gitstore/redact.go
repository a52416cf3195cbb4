package gitstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
)

// Redaction removes the content of one version from the store's history for real: the
// commits that hold the version's blob at its path are rewritten with a marker blob in its
// place, the commits after them are rewritten onto the new ones, main moves to the new
// history and the objects that only the old history reached are pruned, packed or loose.
//
// What a rewrite keeps: every version id, memory id, actor and time, because they live in
// trailers (gitmem's commits) or are derived from the original commit hash, which a
// rewritten commit made with plain git carries in a Gitmem-Derived-From trailer. The path
// stays in the trees (the marker sits where the content was), so that every commit changes
// the same files as before and the catalog reads the same versions from it; the path is
// scrubbed from the redacted version's commit message. The redaction itself is recorded
// in that commit as a Gitmem-Redacted trailer. Both trailers are in commitformat.go.

// redactedContent is the blob that takes the place of redacted content in every rewritten
// tree.
const redactedContent = "[redacted]\n"

// redactionMarker is the hash of the marker blob (redactedContent).
var redactionMarker = sync.OnceValue(func() plumbing.Hash { return blobObject([]byte(redactedContent)).Hash() })

// redactedPath replaces the redacted version's path in its commit message.
const redactedPath = "[redacted path]"

// RedactInput redacts version VersionID on behalf of Actor.
type RedactInput struct {
	VersionID string
	Actor     Actor
	// At is when the redaction was made; zero means now. Sync sets it to replay a redaction
	// that another replica made: the same redaction of the same commits gives the same
	// rewritten commits, so the replicas' histories join again.
	At time.Time
}

// RedactResult is what a redaction did.
type RedactResult struct {
	Version Version // the redacted version: no path or content, RedactedAt and RedactedBy set
	// OldHead and NewHead are main just before and after the rewrite (OldHead includes any
	// push that landed while it ran); both are "" when the version was redacted already and
	// nothing was rewritten. Mirrors of the store need a force push of NewHead.
	OldHead, NewHead string
	Rewritten        int // commits rewritten
	// ContentRemains is set when the redacted content is still in the repository because
	// something else holds the very same bytes: another version (of this memory or another)
	// or a file at another path. It is theirs, and stays.
	ContentRemains bool
	// Forks is what the redaction did to the forks of the store that held the version (the
	// proposals' copies of the store, package proposals), set by the data directory's
	// RedactWrapper.
	Forks []ForkRedaction
	Took  time.Duration
}

// ForkRedaction is what a redaction did to one fork of the store.
type ForkRedaction struct {
	ID string // the fork's name: a proposal's id
	// Closed: the version could not be redacted in the fork, which was removed instead (its
	// proposal rejected, or its changes dropped); otherwise it is redacted there as in main.
	Closed bool
}

// Redact scrubs the content and path of a version out of the store's history. It is
// refused for the current version of a live memory (update or delete the memory first) and
// for sessions, and needs the git program (to list and repack objects). Redacting a
// redacted version changes nothing and answers the same; it also finishes a pruning that a
// crash interrupted. It runs in the store's writer, alone; reads go on meanwhile.
func (s *Store) Redact(ctx context.Context, in RedactInput) (RedactResult, error) {
	if err := refuseTrial(ctx, "a redaction"); err != nil { // before the forks' (RedactWrapper)
		return RedactResult{}, err
	}
	if in.VersionID == "" {
		return RedactResult{}, invalidf("redact needs the id of the version to redact")
	}
	if err := validateActor(in.Actor); err != nil {
		return RedactResult{}, err
	}
	if in.Actor.Type == SessionActor {
		return RedactResult{}, invalidf("sessions cannot redact versions; redact as an API key or a user")
	}
	if err := needGit("redact"); err != nil {
		return RedactResult{}, err
	}
	if w := s.redactWrapper(); w != nil && !s.fork {
		return w(ctx, s, in, func(in RedactInput) (RedactResult, error) { return s.redactListed(ctx, in) })
	}
	return s.redactListed(ctx, in)
}

// redactListed is redactHere, with the version listed for the store's forks first
// (forkmarks.go).
func (s *Store) redactListed(ctx context.Context, in RedactInput) (RedactResult, error) {
	listed, err := s.listForks(in)
	if err != nil {
		return RedactResult{}, err
	}
	res, err := s.redactHere(ctx, in)
	if listed && err != nil {
		s.unlistRefused(ctx, in, err)
	}
	return res, err
}

// RedactWrapper wraps every redaction of a data directory's stores (DataDir.WrapRedact):
// redact does the store's own, with in as the wrapper passes it, and lists the version for
// the store's forks first (forkmarks.go). Proposals use it to redact the version in their
// forks, which hold copies of the store's history that the store's redaction cannot reach,
// and then call DataDir.ForksCaughtUp. It runs outside the store's writer, before the
// redaction queues.
type RedactWrapper func(ctx context.Context, s *Store, in RedactInput, redact func(RedactInput) (RedactResult, error)) (RedactResult, error)

// WrapRedact makes w wrap every redaction of the data directory's stores, in place of the
// wrapper set before (nil for none). Forks' own redactions are not wrapped.
func (d *DataDir) WrapRedact(w RedactWrapper) {
	if w == nil {
		d.opts.redactWrap.Store(nil)
		return
	}
	d.opts.redactWrap.Store(&w)
}

func (s *Store) redactWrapper() RedactWrapper {
	if s.opts.redactWrap == nil {
		return nil
	}
	if w := s.opts.redactWrap.Load(); w != nil {
		return *w
	}
	return nil
}

// redactHere is Redact of this store's repository alone.
func (s *Store) redactHere(ctx context.Context, in RedactInput) (RedactResult, error) {
	var res redactOutcome
	err := s.runTask(ctx, func() error {
		// Once begun, the redaction runs to the end, as every write the writer takes up: a
		// caller that went away must not leave main moved and the pruning undone.
		ctx := context.WithoutCancel(ctx)
		start := time.Now()
		var err error
		if res, err = s.redact(ctx, in); err != nil {
			s.settleUnsettled() // at once, if the catalog takes it now
			return err
		}
		if res.NewHead != "" {
			if !s.fork { // a fork's follows its store's, which counted (proposals/redact.go)
				s.opts.Observer.Redacted(s.id)
			}
			if afterPublish != nil {
				afterPublish()
			}
		}
		if err := s.finishRedaction(ctx); err != nil {
			return err
		}
		res.ContentRemains = !res.blob.IsZero() && s.repo.Git(ctx, "cat-file", "-e", res.blob.String()) == nil
		res.Took = time.Since(start)
		return nil
	})
	return res.RedactResult, err
}

// afterPublish, set by tests only, runs when a redaction has moved main and before it deals
// with the refs and objects of the old history: where a crash leaves the pruning undone.
var afterPublish func()

// redactOutcome is a RedactResult with the blob that was redacted, to look for at the end.
type redactOutcome struct {
	RedactResult
	blob plumbing.Hash
}

// redactTarget is what a redaction rewrites: version v's blob at v.Path, in the commits
// from v's until the memory's next version (stop).
type redactTarget struct {
	v    verRec
	blob plumbing.Hash // zero for a deletion: only the message is scrubbed
	stop plumbing.Hash // the commit of the memory's next version, zero if none
	next string        // the id of that version
	segs []string
}

// findTarget reads the version to redact and checks that it may be redacted. The current
// version of a live memory may not, unless current: a fork redacts what its store has
// redacted, which the proposal may not have changed since (its memory then holds the marker).
func (ct catTx) findTarget(id string, current bool) (redactTarget, error) {
	v, ok, err := ct.version(id)
	if err != nil {
		return redactTarget{}, err
	}
	if !ok {
		return redactTarget{}, notFoundf("memory version %s not found", id)
	}
	t := redactTarget{v: v, segs: treePath(v.Path)}
	if v.Redacted != nil {
		return t, nil
	}
	rec, ok, err := ct.memory(v.Memory)
	if err != nil {
		return t, err
	}
	if !ok {
		return t, fmt.Errorf("catalog version %s names unknown memory %s", v.ID, v.Memory)
	}
	if !rec.Deleted && rec.Version == v.ID && !current {
		return t, invalidf("version %s is the current version of memory %s at %s: update or delete the memory first, then redact this version", v.ID, v.Memory, rec.Path)
	}
	vs, err := ct.memoryVersions(v.Memory)
	if err != nil {
		return t, err
	}
	for i, w := range vs {
		if w.ID == v.ID && i+1 < len(vs) {
			t.stop, t.next = plumbing.NewHash(vs[i+1].Commit), vs[i+1].ID
		}
	}
	if v.Blob != "" {
		t.blob = plumbing.NewHash(v.Blob)
	}
	return t, nil
}

// redact rewrites the history and publishes it. If main moves meanwhile (a push), it
// catches up and rewrites just the new commits on top, until it wins the ref: a redaction
// rewrites the whole history once, however many pushes land while it does.
func (s *Store) redact(ctx context.Context, in RedactInput) (redactOutcome, error) {
	var out redactOutcome
	if err := s.catchUp(nil); err != nil {
		return out, err
	}
	// Rewrites an earlier redaction staged and did not record: recorded before this one
	// stages its own in their place.
	if err := s.settleRewrites(); err != nil {
		return out, fmt.Errorf("record the rewrites of an unfinished redaction: %w", err)
	}
	var t redactTarget
	var head plumbing.Hash
	err := s.readCatalog(func(ct catTx) error {
		head = ct.applied()
		var err error
		t, err = ct.findTarget(in.VersionID, s.fork)
		return err
	})
	if err != nil {
		return out, err
	}
	if t.v.Redacted != nil {
		out.Version = versionFrom(s.id, t.v)
		return out, nil
	}
	// The journal's records hold recent content, the redacted one maybe: make them durable
	// in the packs and overwrite them, so that neither a crash's recovery nor the disk brings
	// the content back. Not for a redaction refused or already done above.
	if err := s.repo.ForgetJournal(); err != nil {
		return out, err
	}
	now := in.At
	if now.IsZero() {
		now = s.opts.Clock()
	}
	red := redaction{At: now.UTC().UnixMilli(), ActorType: in.Actor.Type, ActorID: in.Actor.ID}
	rw := &rewriter{s: s, t: t, red: red, newOf: map[plumbing.Hash]plumbing.Hash{},
		inRange: map[plumbing.Hash]bool{}, trees: map[plumbing.Hash]plumbing.Hash{}, byHash: map[plumbing.Hash]bool{}}
	if err := rw.run(ctx, plumbing.ZeroHash, head); err != nil {
		return out, err
	}
	written, listed := 0, 0
	var lock *odb.RefLock // taken after a few lost races, so that pushes cannot starve the rewrite
	defer func() {
		if lock != nil {
			lock.Release()
		}
	}()
	for attempt := 0; ; attempt++ {
		newHead := rw.mapped(head)
		if written < len(rw.objs) {
			if err := s.repo.WritePack(rw.objs[written:]); err != nil {
				return out, err
			}
			written = len(rw.objs)
		}
		if err := s.stageRedaction(rw.old[listed:], newHead, rw.newOf); err != nil {
			return out, err
		}
		listed = len(rw.old)
		v, err := s.publishRedaction(t, rw.newOf, red, head, newHead, lock)
		if err == nil {
			s.log.Debug("redacted version", "store", s.id, "version", t.v.ID, "memory", t.v.Memory,
				"rewritten", len(rw.newOf), "new_head", newHead, "attempts", attempt+1)
			out.Version = versionFrom(s.id, v)
			out.OldHead, out.NewHead, out.Rewritten = head.String(), newHead.String(), len(rw.newOf)
			out.blob = t.blob
			return out, nil
		}
		if !errors.Is(err, errRefMoved) {
			return out, err
		}
		if lock != nil {
			return out, fmt.Errorf("%s moved while locked", mainRef)
		}
		if attempt == 2 {
			// Pushes keep winning: hold main.lock from here to the ref update. A push that
			// comes meanwhile waits, and is refused if the lock outlasts its patience.
			if lock, err = s.repo.lockRef(); err != nil {
				return out, err
			}
		}
		// A push moved main: rewrite its commits onto the new history too.
		if err := s.catchUp(nil); err != nil {
			return out, err
		}
		next := s.headHash()
		if err := rw.run(ctx, head, next); err != nil {
			return out, err
		}
		head = next
	}
}

// stageRedaction records, durably before main moves to newHead, the objects of the old
// history to prune once it has (hs, added to those of earlier attempts) and the rewrites of
// commits (newOf). A crash after the move leaves both, and so does a catalog update that
// fails after it (publishRedaction): the next redaction (of any version, or this one again)
// or the next open settles the rewrites, moves the other refs and prunes (finishRedaction).
func (s *Store) stageRedaction(hs []plumbing.Hash, newHead plumbing.Hash, newOf map[plumbing.Hash]plumbing.Hash) error {
	hs = inKeyOrder(slices.Values(hs))
	err := s.updateCatalog(func(ct catTx) error {
		if err := ct.addToPrune(hs); err != nil {
			return err
		}
		return ct.stageRewrites(newHead, newOf)
	})
	if err != nil {
		return fmt.Errorf("record the redaction's rewrites and objects to prune: %w", err)
	}
	return nil
}

// settleRewrites deals with rewrites that a redaction staged and did not record: it records
// them if main has the history they lead to (the catalog's update failed after main moved),
// and forgets them if not (the redaction failed before).
func (s *Store) settleRewrites() error {
	if settleFault != nil {
		if err := settleFault(); err != nil {
			return err
		}
	}
	var head plumbing.Hash
	var newOf map[plumbing.Hash]plumbing.Hash
	if err := s.readCatalog(func(ct catTx) error { head, newOf = ct.stagedRewrites(); return nil }); err != nil || head.IsZero() {
		return err
	}
	if err := s.catchUp(nil); err != nil {
		return err
	}
	history := map[plumbing.Hash]bool{}
	if err := s.repo.ancestors(s.headHash(), history); err != nil {
		return err
	}
	return s.updateCatalog(func(ct catTx) error {
		if history[head] {
			if err := ct.recordRewrites(newOf); err != nil {
				return err
			}
		}
		return ct.dropStagedRewrites()
	})
}

// settleUnsettled settles, in the writer, the rewrites of a redaction whose catalog update
// failed after main moved, as soon as the catalog takes them: until then sync would not
// know a remote's old history for what it is (RewrittenTo), and could merge it back.
func (s *Store) settleUnsettled() {
	if !s.unsettled {
		return
	}
	if err := s.settleRewrites(); err != nil {
		s.log.Error("record the rewrites of a redaction", "store", s.id, "err", err)
		return
	}
	s.unsettled = false
}

// settleFault, set by tests only, makes settleRewrites fail with what it returns.
var settleFault func() error

// redactionRecordFault, set by tests only, makes the catalog update of a redaction fail once
// main has moved.
var redactionRecordFault func() error

// publishRedaction moves main from head to newHead (through lock, if held) and updates the
// catalog in place in the same step. It returns errRefMoved if main is no longer at head;
// nothing changed then.
func (s *Store) publishRedaction(t redactTarget, newOf map[plumbing.Hash]plumbing.Hash, red redaction, head, newHead plumbing.Hash, lock *odb.RefLock) (verRec, error) {
	tx, err := s.db.Begin(true)
	if err != nil {
		return verRec{}, fmt.Errorf("begin catalog update: %w", err)
	}
	defer tx.Rollback()
	v, err := writeTx(tx).applyRedaction(t, newOf, red, newHead)
	if err == nil {
		err = catTx{tx}.dropStagedRewrites() // recorded by applyRedaction
	}
	if err != nil {
		return v, err
	}
	s.publishing.Store(newHead)
	if lock == nil {
		err = s.repo.casRef(head, newHead)
	} else if cur, rerr := s.repo.ReadRef(); rerr != nil || cur != head {
		err = errors.Join(errRefMoved, rerr)
	} else {
		err = lock.Commit(newHead)
	}
	if err != nil {
		return v, err
	}
	if redactionRecordFault != nil {
		err = redactionRecordFault()
	}
	if err == nil {
		err = tx.Commit()
	}
	if err == nil {
		err = s.db.sync() // the rewrites (catalog_kept.go) durable before the answer
	}
	s.moved.notify()
	if err != nil {
		// main has the new history, and the catalog rebuilds from it at the next write or open;
		// what history does not say, the rewrites of commits, is staged (stageRedaction).
		s.log.Error("update catalog after redaction", "store", s.id, "err", err)
		s.unsettled = true
		return v, &Error{Kind: KindUnavailable, Err: err,
			Message: fmt.Sprintf("version %s of memory %s is redacted in main's history, but the catalog could not record it, and the other refs and the old objects are left as they were; redact it again to finish", t.v.ID, t.v.Memory)}
	}
	return v, nil
}

// rewriter rewrites the commits that descend from the redacted version's commit.
type rewriter struct {
	s     *Store
	t     redactTarget
	red   redaction
	mark  plumbing.Hash
	newOf map[plumbing.Hash]plumbing.Hash // old commit -> new, for the commits that changed
	// inRange holds the (old) commits whose tree has the redacted blob at the path because
	// they inherit it from the version's commit.
	inRange map[plumbing.Hash]bool
	trees   map[plumbing.Hash]plumbing.Hash // old root tree -> new, for trees in range
	objs    []plumbing.EncodedObject
	byHash  map[plumbing.Hash]bool
	old     []plumbing.Hash // objects of the old history that the new one may no longer reach
}

func (rw *rewriter) emit(o plumbing.EncodedObject) {
	if !rw.byHash[o.Hash()] {
		rw.byHash[o.Hash()] = true
		rw.objs = append(rw.objs, o)
	}
}

func (rw *rewriter) mapped(h plumbing.Hash) plumbing.Hash {
	if n, ok := rw.newOf[h]; ok {
		return n
	}
	return h
}

// run lists the commits to rewrite, parents first, and rewrites them: the version's commit
// and every commit up to head, or up to another ref of the repository, that descends from
// it or, after a push moved main, the commits from from to head.
//
// The other refs are proposal branches (pushed ones, and proposals/<prop_id> that reading or
// approving a proposal makes) and sync's refs of remotes: each reaches the old history, so
// a clone with every ref (git clone --mirror) would find the content in it, and the repack
// would keep it. Their commits are rewritten by the same rules and with the same map as
// main's, and moveOtherRefs moves each ref to its rewritten tip; a ref that moves meanwhile
// onto the old history is deleted (dropStaleRefs).
func (rw *rewriter) run(ctx context.Context, from, head plumbing.Hash) error {
	args := []string{"rev-list", "--topo-order", "--reverse", head.String()}
	if !from.IsZero() {
		args = append(args, "^"+from.String())
	} else {
		tips, err := rw.s.otherRefs(ctx)
		if err != nil {
			return err
		}
		for _, tip := range tips {
			args = append(args, tip.hash)
		}
		c, err := rw.s.repo.commit(plumbing.NewHash(rw.t.v.Commit))
		if err != nil {
			return err
		}
		if len(c.ParentHashes) > 0 {
			args = append(args, "--ancestry-path", "^"+c.ParentHashes[0].String())
		}
	}
	listing, err := rw.s.repo.GitOutput(ctx, args...)
	if err != nil {
		return err
	}
	var hashes []plumbing.Hash
	for _, line := range strings.Fields(string(listing)) {
		h, ok := parseHash(line)
		if !ok {
			return fmt.Errorf("git rev-list printed %q, not a commit hash", line)
		}
		hashes = append(hashes, h)
	}
	if !rw.t.blob.IsZero() && rw.mark.IsZero() {
		m := blobObject([]byte(redactedContent))
		rw.emit(m)
		rw.mark = m.Hash()
		rw.old = append(rw.old, rw.t.blob)
	}
	return rw.s.repo.CatCommits(ctx, hashes, func(c *object.Commit) error { return rw.rewrite(c) })
}

// rewrite makes the new commit of c, if anything of it changes.
func (rw *rewriter) rewrite(c *object.Commit) error {
	old := c.Hash
	renamed, err := rw.renameAtPath(c)
	if err != nil {
		return err
	}
	changed := false
	parentInRange := false
	for i, p := range c.ParentHashes {
		parentInRange = parentInRange || rw.inRange[p]
		if n, ok := rw.newOf[p]; ok {
			c.ParentHashes[i], changed = n, true
		}
	}
	isVersion := old.String() == rw.t.v.Commit
	if !rw.t.blob.IsZero() && (isVersion || parentInRange && old != rw.t.stop) {
		tree, ok, err := rw.replaceTree(c.TreeHash)
		if err != nil {
			return err
		}
		if ok {
			rw.inRange[old] = true
			c.TreeHash, changed = tree, true
		}
	}
	if isVersion {
		c.Message = rw.scrubMessage(c.Message)
		changed = true
	}
	if !changed {
		return nil
	}
	t := parseTrailers(c.Message)
	if t.get(trailerVersion) == "" && t.get(trailerDerivedFrom) == "" {
		// The ids of a commit made with plain git derive from its hash: keep the original.
		c.Message = addTrailers(c.Message, trailers{{trailerDerivedFrom, old.String()}})
	}
	if renamed != nil {
		c.Message = addTrailers(c.Message, renamed)
	}
	// A signature cannot hold for the new content; the commit keeps its author and times.
	c.PGPSignature = ""
	o := &plumbing.MemoryObject{}
	if err := c.Encode(o); err != nil {
		return fmt.Errorf("encode rewritten commit of %s: %w", old, err)
	}
	rw.emit(o)
	rw.newOf[old] = o.Hash()
	rw.old = append(rw.old, old)
	return nil
}

// renameAtPath returns, for c, a commit made with plain git, the rename to or from the
// redacted path that it made, as a Gitmem-Renamed trailer, if no trailer records it yet.
// Such a rename is read by content (plainRenames), and the marker takes the place of the
// content on one side only: without the trailer, a rebuild of the catalog would read a
// deletion and a new memory where the catalog read one memory moved.
func (rw *rewriter) renameAtPath(c *object.Commit) (trailers, error) {
	isVersion := c.Hash.String() == rw.t.v.Commit
	if rw.t.blob.IsZero() || len(c.ParentHashes) == 0 || !isVersion && !rw.inRange[c.ParentHashes[0]] {
		return nil, nil // the marker is on neither side of its change
	}
	t := parseTrailers(c.Message)
	if t.get(trailerVersion) != "" {
		return nil, nil // gitmem's: its trailers name the memory
	}
	parent, err := rw.s.repo.commit(c.ParentHashes[0])
	if err != nil {
		return nil, err
	}
	changes, err := diffTrees(rw.s.repo, parent.TreeHash, c.TreeHash, "", nil)
	if err != nil {
		return nil, err
	}
	changes = onlyMemories(changes)
	for a, r := range plainRenames(changes, t) {
		from, to := changes[r].Path, changes[a].Path
		v := renamedValue(from, to)
		if from != rw.t.v.Path && to != rw.t.v.Path || slices.ContainsFunc(t, func(kv struct{ Key, Value string }) bool {
			return strings.EqualFold(kv.Key, trailerRenamed) && kv.Value == v
		}) {
			continue
		}
		return trailers{{trailerRenamed, v}}, nil
	}
	return nil, nil
}

// scrubMessage removes the version's path from its commit message and records the
// redaction in it.
func (rw *rewriter) scrubMessage(msg string) string {
	if p := rw.t.v.Path; p != "" {
		// Not in a merge's trailers nor in Gitmem-Renamed: they tell which memory lives at
		// which path, which a rebuild of the catalog reads, and the tree holds the path anyway.
		lines := strings.SplitAfter(msg, "\n")
		for i, l := range lines {
			lower := strings.ToLower(l)
			if !strings.HasPrefix(lower, strings.ToLower(mergeTrailerPrefix)) && !strings.HasPrefix(lower, strings.ToLower(trailerRenamed)+":") {
				lines[i] = scrubPath(l, p)
			}
		}
		msg = strings.Join(lines, "")
	}
	return addTrailers(msg, trailers{{trailerRedacted, redactedValue(rw.t.v.ID, rw.red)}})
}

// scrubPath replaces the memory path p in a commit message, with or without its leading
// slash ("/a/b.md", "a/b.md" as people write it), where it stands as a whole path: not the
// end of a longer one ("/x/a/b.md") nor the start ("/a/b.md2").
func scrubPath(msg, p string) string {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9._/-])/?` + regexp.QuoteMeta(strings.TrimPrefix(p, "/")) + `($|[^A-Za-z0-9_/-])`)
	for i := 0; i < 100; i++ { // matches do not overlap: go again for adjacent ones
		next := re.ReplaceAllString(msg, "${1}"+redactedPath+"${2}")
		if next == msg {
			break
		}
		msg = next
	}
	return msg
}

// replaceTree returns root with the redacted blob at the path replaced by the marker, and
// whether root had the blob there. The file keeps its mode.
func (rw *rewriter) replaceTree(root plumbing.Hash) (plumbing.Hash, bool, error) {
	if n, ok := rw.trees[root]; ok {
		return n, true, nil
	}
	n, ok, err := rw.replaceIn(root, rw.t.segs)
	if err == nil && ok {
		rw.trees[root] = n
	}
	return n, ok, err
}

func (rw *rewriter) replaceIn(tree plumbing.Hash, segs []string) (plumbing.Hash, bool, error) {
	entries, err := readTree(rw.s.repo, tree)
	if err != nil {
		return tree, false, err
	}
	for i, e := range entries {
		if e.Name != segs[0] {
			continue
		}
		var h plumbing.Hash
		switch {
		case len(segs) == 1 && e.Hash == rw.t.blob && isMemoryFile(e.Mode):
			h = rw.mark
		case len(segs) > 1 && e.Mode == filemode.Dir:
			sub, ok, err := rw.replaceIn(e.Hash, segs[1:])
			if err != nil || !ok {
				return tree, false, err
			}
			h = sub
		default:
			return tree, false, nil
		}
		out := append([]object.TreeEntry(nil), entries...)
		out[i].Hash = h
		o, err := encodeTree(out)
		if err != nil {
			return tree, false, err
		}
		rw.emit(o)
		rw.old = append(rw.old, tree)
		return o.Hash(), true, nil
	}
	return tree, false, nil
}

// applyRedaction updates the catalog in place for a rewrite: the redacted version, the
// commits of later versions, the keys that pushed rewritten commits, and the commit the
// catalog reflects. It leaves the catalog as a rebuild from the new history would.
func (ct catTx) applyRedaction(t redactTarget, newOf map[plumbing.Hash]plumbing.Hash, r redaction, newHead plumbing.Hash) (verRec, error) {
	var markSHA string
	var markBlob string
	if !t.blob.IsZero() {
		sum := sha256.Sum256([]byte(redactedContent))
		markSHA, markBlob = hex.EncodeToString(sum[:]), redactionMarker().String()
	}
	// The redacted version's commit may have made records before it (numbered in one run: its
	// store.json change, the versions of paths before its path in a commit made with git),
	// which name the commit that is rewritten too.
	from, err := ct.firstRecordOf(t.v.Commit, t.v.seq)
	if err != nil {
		return verRec{}, err
	}
	var redacted verRec
	var updates []verRec
	for v, err := range ct.versionsFrom(from) {
		if err != nil {
			return v, err
		}
		n, moved := newOf[plumbing.NewHash(v.Commit)]
		if moved {
			v.Commit = n.String()
		}
		if v.ID == t.v.ID {
			v.Redacted = &r
			if markBlob != "" {
				v.Blob, v.SHA, v.Size = markBlob, markSHA, len(redactedContent)
			}
			redacted = v
		} else if !moved {
			continue
		}
		updates = append(updates, v)
	}
	for _, v := range updates {
		if err := ct.putVersion(v); err != nil {
			return redacted, err
		}
	}
	var moved []storeChgRec
	for ch, err := range ct.storeChangesFrom(from) {
		if err != nil {
			return redacted, err
		}
		if n, ok := newOf[plumbing.NewHash(ch.Commit)]; ok {
			ch.Commit = n.String()
			moved = append(moved, ch)
		}
	}
	for _, ch := range moved {
		if err := ct.putStoreChange(ch); err != nil {
			return redacted, err
		}
	}
	// A deleted memory keeps the content of its last live version: if that is the
	// redacted one (the deletion came next), the marker. So does a live memory whose
	// current version is the redacted one (in a fork only: findTarget).
	if rec, ok, err := ct.memory(t.v.Memory); err != nil {
		return redacted, err
	} else if ok && markBlob != "" && rec.Blob == t.v.Blob && (rec.Deleted && rec.Version == t.next || !rec.Deleted && rec.Version == t.v.ID) {
		rec.Blob, rec.SHA, rec.Size = markBlob, markSHA, len(redactedContent)
		if err := ct.putMemory(t.v.Memory, rec); err != nil {
			return redacted, err
		}
	}
	if err := ct.recordRewrites(newOf); err != nil {
		return redacted, err
	}
	return redacted, ct.setApplied(newHead)
}

// RewrittenTo returns the commit that a redaction here put in the place of commit (of main's
// history, or of another ref's: rewriter.run), and true; or false if no redaction rewrote
// commit. Sync uses it to recognise a
// remote that still holds the history from before a redaction.
func (s *Store) RewrittenTo(ctx context.Context, commit string) (string, bool, error) {
	h, ok := parseHash(commit)
	if !ok {
		return "", false, invalidf("%q is not a commit hash", commit)
	}
	var to plumbing.Hash
	err := s.view(ctx, func(ct catTx) error { to = ct.rewrittenTo(h); return nil })
	return to.String(), err == nil && to != h, err
}

// FirstRewritten returns the first of commits that a redaction here rewrote, and true; or
// false if none was. One catalog read for them all: a push asks it of every commit it brings.
func (s *Store) FirstRewritten(ctx context.Context, commits []string) (string, bool, error) {
	hs := make([]plumbing.Hash, 0, len(commits))
	for _, c := range commits {
		h, ok := parseHash(c)
		if !ok {
			return "", false, invalidf("%q is not a commit hash", c)
		}
		hs = append(hs, h)
	}
	found := ""
	err := s.view(ctx, func(ct catTx) error {
		for i, h := range hs {
			if ct.rewrittenTo(h) != h {
				found = commits[i]
				return nil
			}
		}
		return nil
	})
	return found, found != "", err
}

// aRef is a ref of the repository and the commit it points at.
type aRef struct{ name, hash string }

// otherRefs lists the refs of the repository other than main that point at commits.
func (s *Store) otherRefs(ctx context.Context) ([]aRef, error) {
	out, err := s.repo.GitOutput(ctx, "for-each-ref", "--format=%(objectname) %(objecttype) %(refname)")
	if err != nil {
		return nil, err
	}
	var refs []aRef
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] == "commit" && f[2] != mainRef {
			refs = append(refs, aRef{name: f[2], hash: f[0]})
		}
	}
	return refs, nil
}

// moveOtherRefs moves the refs other than main that point at a rewritten commit (proposal
// branches, the commit last fetched from a remote, which sync keeps under refs/remotes/) to
// the commit that took its place: otherwise they would keep the redacted content reachable,
// and the repack would keep it. Each moves only from the commit it was listed at.
func (s *Store) moveOtherRefs(ctx context.Context) error {
	refs, err := s.otherRefs(ctx)
	if err != nil {
		return err
	}
	for _, r := range refs {
		to, rewritten, err := s.RewrittenTo(ctx, r.hash)
		if err != nil || !rewritten {
			continue
		}
		if err := s.repo.Git(ctx, "update-ref", r.name, to, r.hash); err != nil {
			return err
		}
	}
	return nil
}

// dropStaleRefs deletes the refs other than main that still reach a commit of the old
// history (one listed for pruning) once moveOtherRefs has moved the rewritten ones: a
// branch that a push or a proposal's reading set meanwhile onto the old history, which
// the rewrite did not see. Its proposal keeps its fork, which the proposals' redaction
// redacts; the branch comes back at the next push or reading.
func (s *Store) dropStaleRefs(ctx context.Context) error {
	var todo []plumbing.Hash
	if err := s.readCatalog(func(ct catTx) (err error) { todo, err = ct.toPrune(); return err }); err != nil || len(todo) == 0 {
		return err
	}
	refs, err := s.otherRefs(ctx)
	if err != nil || len(refs) == 0 {
		return err
	}
	old := make(map[string]bool, len(todo))
	for _, h := range todo {
		old[h.String()] = true
	}
	for len(refs) > 0 {
		args := []string{"rev-list"}
		for _, r := range refs {
			args = append(args, r.hash)
		}
		out, err := s.repo.GitOutput(ctx, append(args, "^"+mainRef)...)
		if err != nil {
			return err
		}
		stale := ""
		for _, c := range strings.Fields(string(out)) {
			if old[c] {
				stale = c // the last listed: the oldest, which the most refs reach
			}
		}
		if stale == "" {
			return nil
		}
		out, err = s.repo.GitOutput(ctx, "for-each-ref", "--format=%(refname)", "--contains", stale)
		if err != nil {
			return err
		}
		holders := strings.Fields(string(out))
		kept := refs[:0]
		for _, r := range refs {
			if !slices.Contains(holders, r.name) {
				kept = append(kept, r)
				continue
			}
			s.log.Warn("deleting a ref that moved onto the history a redaction rewrote", "store", s.id, "ref", r.name)
			if err := s.repo.Git(ctx, "update-ref", "-d", r.name, r.hash); err != nil {
				return err
			}
		}
		if len(kept) == len(refs) {
			return fmt.Errorf("commit %s of the old history is reachable, but from none of the refs listed", stale)
		}
		refs = kept
	}
	return nil
}

// finishRedaction deals with the old history once main has moved to the redacted one: it
// moves the other refs onto the new history and prunes the objects listed for pruning. It
// runs in the writer. Both steps are idempotent; what they leave undone (a crash, an error)
// is finished by the next redaction or when the store is opened again (finishPendingPrune).
func (s *Store) finishRedaction(ctx context.Context) error {
	if err := s.moveOtherRefs(ctx); err != nil {
		return fmt.Errorf("move refs onto the redacted history (the redaction is done; redact again or reopen the store to finish): %w", err)
	}
	if err := s.dropStaleRefs(ctx); err != nil {
		return fmt.Errorf("delete refs that hold the old history (the redaction is done; redact again or reopen the store to finish): %w", err)
	}
	if err := s.pruneRedacted(ctx); err != nil {
		return fmt.Errorf("prune after redaction (the redaction is done; redact again or reopen the store to finish pruning): %w", err)
	}
	return nil
}

// finishPendingPrune finishes, when the store opens, a redaction that main has but whose
// pruning a crash (or a failed catalog update) interrupted: the objects listed for pruning
// or the rewrites staged (durably, before main moved) are still there. It runs in the
// writer, before any request.
func (s *Store) finishPendingPrune(ctx context.Context) error {
	pending := false
	err := s.readCatalog(func(ct catTx) error {
		pending = ct.pruneListed() || ct.rewritesStaged()
		return nil
	})
	if err != nil || !pending {
		return err
	}
	if err := needGit("the pruning of an unfinished redaction"); err != nil {
		return err
	}
	if err := s.settleRewrites(); err != nil {
		return fmt.Errorf("record the rewrites of an unfinished redaction: %w", err)
	}
	s.log.Info("finishing the pruning of an interrupted redaction", "store", s.id)
	return s.finishRedaction(ctx)
}

// pruneRedacted deletes the objects of rewritten histories: it repacks the reachable
// objects into one pack, drops the old packs (and with them the unreachable objects they
// held) and deletes the listed loose objects that no longer belong to main. Objects that a
// push is adding meanwhile are in packs or loose files that this leaves alone.
func (s *Store) pruneRedacted(ctx context.Context) error {
	var todo []plumbing.Hash
	if err := s.readCatalog(func(ct catTx) (err error) { todo, err = ct.toPrune(); return err }); err != nil {
		return err
	}
	if len(todo) == 0 {
		return nil
	}
	r := s.repo
	for attempt := 0; ; attempt++ {
		moved, err := r.RepackAll(ctx)
		if err != nil {
			return err
		}
		if !moved {
			break
		}
		// A push moved main while git repacked: its objects may be in the old packs.
		if attempt == 3 {
			return &Error{Kind: KindUnavailable, Message: "main kept moving (pushes) while the repository was repacked; redact again to finish pruning"}
		}
		if err := s.catchUp(nil); err != nil {
			return err
		}
	}
	if err := r.Git(ctx, "prune-packed", "-q"); err != nil {
		return err
	}
	// What is still loose is not reachable from main: git repack would have packed it.
	for _, h := range todo {
		if err := os.Remove(r.LoosePath(h)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove redacted object: %w", err)
		}
	}
	if err := r.CountPacks(); err != nil {
		return err
	}
	return s.updateCatalog(func(ct catTx) error { return ct.clearPrune() })
}
