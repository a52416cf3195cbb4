package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitmem/gitmem/secrets"
)

func validatePrecondition(p *Precondition, allowNotExists bool) error {
	if p == nil {
		return nil
	}
	switch p.Type {
	case NotExists:
		if !allowNotExists {
			return invalidf("precondition type not_exists is not allowed here; use content_sha256")
		}
		return nil
	case ContentSHA256:
		return ValidateSHA256("precondition.content_sha256", p.ContentSHA256)
	default:
		return invalidf("precondition type %q is unknown; use not_exists or content_sha256", p.Type)
	}
}

// validateTarget checks how a write names its memory: by id, or else by a valid path.
func validateTarget(op, id, path string) error {
	switch {
	case id != "":
		return nil
	case path == "":
		return invalidf("%s needs the memory's id or its path", op)
	default:
		return ValidatePath(path)
	}
}

func validateActor(a Actor) error {
	if a.Type == "" || a.ID == "" {
		return invalidf("a write needs an actor (type and id)")
	}
	return nil
}

// Write creates the memory at in.Path, or replaces its content if one is there (an upsert).
// A NotExists precondition makes it create-only; a ContentSHA256 precondition makes it
// replace-only, and only if the current content has that hash (or already equals the new
// content). Writing the content a memory already has changes nothing and makes no commit.
func (s *Store) Write(ctx context.Context, in WriteInput) (WriteResult, error) {
	if err := ValidatePath(in.Path); err != nil {
		return WriteResult{}, err
	}
	if err := ValidateContent(in.Content); err != nil {
		return WriteResult{}, err
	}
	if err := validatePrecondition(in.Precondition, true); err != nil {
		return WriteResult{}, err
	}
	if err := validateActor(in.Actor); err != nil {
		return WriteResult{}, err
	}
	scan, err := s.prescan(in.Content)
	if err != nil {
		return WriteResult{}, err
	}
	return submitAs(ctx, s, func(b *batch) (WriteResult, error) {
		info, err := b.writableStore()
		if err != nil {
			return WriteResult{}, err
		}
		if err := b.review(info.Policy, in.Actor, in.ApprovedBy != nil, in.Path); err != nil {
			return WriteResult{}, err
		}
		b.approver = in.ApprovedBy
		defer func() { b.approver = nil }()
		id, rec, ok, err := b.ct.live(in.Path)
		if err != nil {
			return WriteResult{}, b.fail(err)
		}
		pre := in.Precondition
		if !ok {
			if pre != nil && pre.Type == ContentSHA256 {
				return WriteResult{}, preconditionf("precondition failed: no memory at %s to compare content_sha256 with", in.Path)
			}
			if err := b.checkPathFree(b.root, in.Path); err != nil {
				return WriteResult{}, err
			}
			if err := b.checkNewNames(b.root, in.Path); err != nil {
				return WriteResult{}, err
			}
			content, red, err := b.prepare(info.Policy, in.Content, scan, nil)
			if err != nil {
				return WriteResult{}, err
			}
			id, err := b.newMemoryID(in.MemoryID)
			if err != nil {
				return WriteResult{}, err
			}
			res, err := b.put(in.Actor, id, OpCreated, "", in.Path, &content)
			return redacted(res, err, red, content)
		}
		if pre != nil && pre.Type == NotExists {
			return WriteResult{}, &Error{Kind: KindPreconditionFailed, Message: fmt.Sprintf("precondition failed: %s already exists (memory %s)", in.Path, id),
				ConflictingMemoryID: id, ConflictingPath: in.Path}
		}
		if rec.SHA == sha256Hex(in.Content) {
			return b.result(id, nil)
		}
		if pre != nil && pre.Type == ContentSHA256 && pre.ContentSHA256 != rec.SHA {
			return WriteResult{}, preconditionf("precondition failed: content_sha256 %s does not match the current content of %s (%s)", pre.ContentSHA256, in.Path, rec.SHA)
		}
		content, red, err := b.prepare(info.Policy, in.Content, scan, &rec)
		if err != nil {
			return WriteResult{}, err
		}
		if rec.SHA == sha256Hex(content) {
			res, err := b.result(id, nil)
			return redacted(res, err, red, content)
		}
		res, err := b.put(in.Actor, id, OpModified, in.Path, in.Path, &content)
		return redacted(res, err, red, content)
	})
}

// UpdateMemory changes the content and/or the path of one memory; a rename keeps its id.
// With a ContentSHA256 precondition it applies only if the current content has that hash;
// it succeeds anyway, changing nothing, when the memory already has the requested content
// and path.
func (s *Store) UpdateMemory(ctx context.Context, in UpdateInput) (WriteResult, error) {
	if err := validateUpdate(in); err != nil {
		return WriteResult{}, err
	}
	var scan *scanned
	if in.Content != nil && in.Edit == nil {
		var err error
		if scan, err = s.prescan(*in.Content); err != nil {
			return WriteResult{}, err
		}
	}
	return submitAs(ctx, s, func(b *batch) (WriteResult, error) { return b.update(in, scan) })
}

// newMemoryID is the id of a memory that the batch creates: want, if it is a memory id
// that the store has never had, else a new one.
func (b *batch) newMemoryID(want string) (string, error) {
	if validID(MemoryPrefix, want) {
		_, known, err := b.ct.memory(want)
		if err != nil {
			return "", b.fail(err)
		}
		if !known {
			return want, nil
		}
	}
	return NewID(MemoryPrefix, b.now()), nil
}

// validateUpdate checks an update's input, before it is queued to the writer.
func validateUpdate(in UpdateInput) error {
	if err := validateTarget("update", in.ID, in.FromPath); err != nil {
		return err
	}
	if in.Content != nil {
		if err := ValidateContent(*in.Content); err != nil {
			return err
		}
	}
	if in.Path != nil {
		if err := ValidatePath(*in.Path); err != nil {
			return err
		}
	}
	if err := validatePrecondition(in.Precondition, false); err != nil {
		return err
	}
	return validateActor(in.Actor)
}

// update applies an UpdateMemory in the writer, against the state its commit builds on.
func (b *batch) update(in UpdateInput, scan *scanned) (WriteResult, error) {
	info, err := b.writableStore()
	if err != nil {
		return WriteResult{}, err
	}
	id, rec, err := b.resolve(in.ID, in.FromPath)
	if err != nil {
		return WriteResult{}, err
	}
	path := rec.Path
	to := path
	if in.Path != nil {
		to = *in.Path
	}
	if err := b.review(info.Policy, in.Actor, false, path, to); err != nil {
		return WriteResult{}, err
	}
	if in.Path != nil {
		path = *in.Path
	}
	content := in.Content
	if pre := in.Precondition; pre != nil && pre.ContentSHA256 != rec.SHA {
		same := (content == nil || sha256Hex(*content) == rec.SHA) && path == rec.Path && in.Edit == nil
		if same {
			return b.result(id, nil)
		}
		return WriteResult{}, preconditionf("precondition failed: content_sha256 %s does not match the current content of %s (%s)", pre.ContentSHA256, rec.Path, rec.SHA)
	}
	if in.Edit != nil {
		if content, err = b.edit(rec, content, in.Edit); err != nil {
			return WriteResult{}, err
		}
	}
	// The final content, also one that Edit computed, passes the store's policy.
	var red []secrets.Finding
	var stored string
	if content != nil && sha256Hex(*content) != rec.SHA {
		out, r, err := b.prepare(info.Policy, *content, scan, &rec)
		if err != nil {
			return WriteResult{}, err
		}
		content, red, stored = &out, r, out
	}
	if content != nil && sha256Hex(*content) == rec.SHA {
		content = nil
	}
	if content == nil && path == rec.Path {
		res, err := b.result(id, nil)
		return redacted(res, err, red, stored)
	}
	if path != rec.Path {
		if err := b.checkMove(rec.Path, path); err != nil {
			return WriteResult{}, err
		}
	}
	if content == nil {
		c, err := b.content(rec)
		if err != nil {
			return WriteResult{}, err
		}
		content = &c
	}
	res, err := b.put(in.Actor, id, OpModified, rec.Path, path, content)
	return redacted(res, err, red, stored)
}

// edit runs an update's Edit on the memory's content (or on the update's content, if it
// has one) and checks what it returns.
func (b *batch) edit(rec memRec, content *string, edit func(string) (string, error)) (*string, error) {
	cur, err := b.content(rec)
	if err != nil {
		return nil, err
	}
	if content != nil {
		cur = *content
	}
	next, err := edit(cur)
	if err != nil {
		return nil, err
	}
	if err := ValidateContent(next); err != nil {
		return nil, err
	}
	return &next, nil
}

// checkMove checks that a memory at from may move to path: path is free once from is, and
// its new names are names that every clone can hold.
func (b *batch) checkMove(from, path string) error {
	without, err := b.setFile(b.root, from, nil)
	if err != nil {
		return err
	}
	if err := b.checkPathFree(without, path); err != nil {
		return err
	}
	return b.checkNewNames(without, path)
}

// Delete deletes one memory. With ExpectedSHA256 set it deletes only if the current content
// has that hash. It returns the deleted version.
func (s *Store) Delete(ctx context.Context, in DeleteInput) (Version, error) {
	if err := validateTarget("delete", in.ID, in.Path); err != nil {
		return Version{}, err
	}
	if in.ExpectedSHA256 != "" {
		if err := ValidateSHA256("expected_content_sha256", in.ExpectedSHA256); err != nil {
			return Version{}, err
		}
	}
	if err := validateActor(in.Actor); err != nil {
		return Version{}, err
	}
	return submitAs(ctx, s, func(b *batch) (Version, error) {
		id, rec, err := b.target(in.ID, in.Path)
		if err != nil {
			return Version{}, err
		}
		if in.ExpectedSHA256 != "" && in.ExpectedSHA256 != rec.SHA {
			return Version{}, preconditionf("precondition failed: expected_content_sha256 %s does not match the current content of %s (%s); nothing was deleted", in.ExpectedSHA256, rec.Path, rec.SHA)
		}
		info, err := b.writableStore()
		if err != nil {
			return Version{}, err
		}
		if err := b.review(info.Policy, in.Actor, in.ApprovedBy != nil, rec.Path); err != nil {
			return Version{}, err
		}
		b.approver = in.ApprovedBy
		defer func() { b.approver = nil }()
		res, err := b.put(in.Actor, id, OpDeleted, rec.Path, "", nil)
		if err != nil {
			return Version{}, err
		}
		return *res.Version, nil
	})
}

// target finds the live memory a write changes, by id or else by path, in a writable store.
func (b *batch) target(id, path string) (string, memRec, error) {
	if _, err := b.writableStore(); err != nil {
		return "", memRec{}, err
	}
	return b.resolve(id, path)
}

// resolve finds a live memory by id, or by path if id is empty.
func (b *batch) resolve(id, path string) (string, memRec, error) {
	if id == "" {
		mid, rec, ok, err := b.ct.live(path)
		if err != nil {
			return "", rec, b.fail(err)
		}
		if !ok {
			return "", rec, notFoundf("no memory at %s", path)
		}
		return mid, rec, nil
	}
	rec, ok, err := b.ct.memory(id)
	if err != nil {
		return "", rec, b.fail(err)
	}
	if !ok || rec.Deleted {
		return "", rec, notFoundf("memory %s not found", id)
	}
	return id, rec, nil
}

// put commits one version of memory id: content at path (nil content deletes from). from is
// the memory's current path, "" for a new memory.
func (b *batch) put(actor Actor, id string, op Operation, from, to string, content *string) (WriteResult, error) {
	when := b.now()
	verID := NewID(VersionPrefix, when)
	root := b.root
	var err error
	if from != "" && from != to {
		if root, err = b.setFile(root, from, nil); err != nil {
			return WriteResult{}, err
		}
	}
	if to != "" {
		if root, err = b.setFile(root, to, content); err != nil {
			return WriteResult{}, err
		}
	}
	var subject string
	switch {
	case op == OpCreated:
		subject = "create " + to
	case op == OpDeleted:
		subject = "delete " + from
	case from != to:
		rec, _, _ := b.ct.memory(id)
		if content != nil && sha256Hex(*content) != rec.SHA {
			subject = fmt.Sprintf("update and rename %s to %s", from, to)
		} else {
			subject = fmt.Sprintf("rename %s to %s", from, to)
		}
	default:
		subject = "update " + to
	}
	t := trailers{{trailerMemory, id}, {trailerVersion, verID}, {trailerOperation, string(op)}}
	t = append(t, actorTrailers(actor)...)
	if a := b.approver; a != nil {
		t = append(t, struct{ Key, Value string }{trailerApprovedBy, string(a.Type) + " " + a.ID})
	}
	if err := b.commit(root, subject, t, actor, when); err != nil {
		return WriteResult{}, err
	}
	return b.result(id, &verID)
}

// result reads back memory id (and version verID, if one was made) from the batch's catalog.
func (b *batch) result(id string, verID *string) (WriteResult, error) {
	rec, _, err := b.ct.memory(id)
	if err != nil {
		return WriteResult{}, b.fail(err)
	}
	res := WriteResult{Memory: memoryFrom(b.s.id, id, rec)}
	if verID != nil {
		v, err := b.ct.versionBySeq(b.ct.versionKey(*verID))
		if err != nil {
			return WriteResult{}, b.fail(err)
		}
		ver := versionFrom(b.s.id, v)
		res.Version = &ver
	}
	return res, nil
}

func memoryFrom(storeID, id string, r memRec) Memory {
	return Memory{ID: id, StoreID: storeID, VersionID: r.Version, Path: r.Path, ContentSHA256: r.SHA,
		SizeBytes: r.Size, CreatedAt: msTime(r.Created), UpdatedAt: msTime(r.Updated)}
}

func versionFrom(storeID string, v verRec) Version {
	out := Version{ID: v.ID, MemoryID: v.Memory, StoreID: storeID, Operation: v.Op, Path: v.Path,
		ContentSHA256: v.SHA, SizeBytes: v.Size, CreatedBy: v.actor(), CreatedAt: msTime(v.At), Commit: v.Commit}
	if typ, id, ok := strings.Cut(v.ApprovedBy, " "); ok {
		out.ApprovedBy = &Actor{Type: ActorType(typ), ID: id}
	}
	if r := v.Redacted; r != nil {
		at := msTime(r.At)
		out.Path, out.ContentSHA256, out.SizeBytes = "", "", 0
		out.RedactedAt, out.RedactedBy = &at, &Actor{Type: r.ActorType, ID: r.ActorID}
	}
	return out
}

// contentBlob is the blob of the content that a version left, "" for a deletion or a
// redacted version.
func (v verRec) contentBlob() string {
	if v.Redacted != nil {
		return ""
	}
	return v.Blob
}

// view runs fn on a consistent snapshot of the catalog, after making sure that the catalog
// reflects main (a git process may have moved it).
func (s *Store) view(ctx context.Context, fn func(ct catTx) error) error {
	if err := s.fresh(ctx); err != nil {
		return err
	}
	return s.readCatalog(fn)
}

// fresh has the writer catch the catalog up if main is at a commit that neither the catalog
// nor the writer's group being published is at: a push or a commit made with git. Reads
// thus never wait for the writer's own groups, only once after an outside change.
func (s *Store) fresh(ctx context.Context) error {
	if behind, err := s.behind(); err != nil || !behind {
		return err
	}
	return s.Refresh(ctx)
}

// behind tells whether main is at a commit that neither the catalog nor the writer's group
// being published is at.
func (s *Store) behind() (bool, error) {
	head, err := s.repo.ReadRef()
	if err != nil {
		return false, err
	}
	if p, _ := s.publishing.Load().(plumbing.Hash); p == head {
		return false, nil
	}
	var applied plumbing.Hash
	if err := s.readCatalog(func(ct catTx) error { applied = ct.applied(); return nil }); err != nil {
		return false, err
	}
	return head != applied, nil
}

func (s *Store) loadContent(blob string) (*string, error) {
	raw, err := s.repo.Blob(plumbing.NewHash(blob))
	if err != nil {
		return nil, err
	}
	c := string(raw)
	return &c, nil
}

// Get returns the memory with the given id.
func (s *Store) Get(ctx context.Context, id string, withContent bool) (Memory, error) {
	var m Memory
	err := s.view(ctx, func(ct catTx) error {
		rec, ok, err := ct.memory(id)
		if err != nil {
			return err
		}
		if !ok || rec.Deleted {
			return notFoundf("memory %s not found", id)
		}
		m = memoryFrom(s.id, id, rec)
		if withContent {
			m.Content, err = s.loadContent(rec.Blob)
		}
		return err
	})
	if err == nil {
		s.touch(m.ID)
	}
	return m, err
}

// GetByPath returns the memory at path.
func (s *Store) GetByPath(ctx context.Context, path string, withContent bool) (Memory, error) {
	if err := ValidatePath(path); err != nil {
		return Memory{}, err
	}
	var m Memory
	err := s.view(ctx, func(ct catTx) error {
		id, rec, ok, err := ct.live(path)
		if err != nil {
			return err
		}
		if !ok {
			return notFoundf("no memory at %s", path)
		}
		m = memoryFrom(s.id, id, rec)
		if withContent {
			m.Content, err = s.loadContent(rec.Blob)
		}
		return err
	})
	if err == nil {
		s.touch(m.ID)
	}
	return m, err
}

func checkLimit(limit, def, max int) (int, error) {
	if limit == 0 {
		return def, nil
	}
	if limit < 1 || limit > max {
		return 0, invalidf("limit must be between 1 and %d, got %d", max, limit)
	}
	return limit, nil
}

// listing checks a listing's options and returns its page size, its prefix ("/" for all)
// and the path its cursor says to continue after (nil on the first page).
func (opts ListOptions) listing() (limit int, prefix string, after []byte, err error) {
	if err := ValidatePathPrefix(opts.PathPrefix); err != nil {
		return 0, "", nil, err
	}
	if opts.Depth < 0 {
		return 0, "", nil, invalidf("depth must be 0 (all) or a positive number of levels, got %d", opts.Depth)
	}
	if limit, err = checkLimit(opts.Limit, 20, 1000); err != nil {
		return 0, "", nil, err
	}
	prefix = opts.PathPrefix
	if prefix == "" {
		prefix = "/"
	}
	if opts.Cursor != "" {
		if after, err = decodeCursor('p', opts.Cursor); err != nil {
			return 0, "", nil, err
		}
	}
	return limit, prefix, after, nil
}

// List lists memories below opts.PathPrefix in path order, one page at a time.
func (s *Store) List(ctx context.Context, opts ListOptions) (ListPage, error) {
	limit, prefix, after, err := opts.listing()
	if err != nil {
		return ListPage{}, err
	}
	var page ListPage
	err = s.view(ctx, func(ct catTx) error {
		c := ct.pathCursor()
		k, v := c.seek([]byte(prefix))
		if after != nil {
			k, v = c.seek(after)
			for k != nil && (bytes.Equal(k, after) || after[len(after)-1] == '/' && bytes.HasPrefix(k, after)) {
				k, v = c.next()
			}
		}
		for k != nil && bytes.HasPrefix(k, []byte(prefix)) {
			if len(page.Items) == limit {
				page.NextCursor = encodeCursor('p', lastKey(page.Items))
				return nil
			}
			rest := string(k[len(prefix):])
			if opts.Depth > 0 && strings.Count(rest, "/") >= opts.Depth {
				segs := strings.SplitN(rest, "/", opts.Depth+1)
				roll := prefix + strings.Join(segs[:opts.Depth], "/") + "/"
				page.Items = append(page.Items, ListItem{Prefix: roll})
				// Skip everything below the rolled-up prefix: "0" is the byte after "/".
				k, v = c.seek([]byte(roll[:len(roll)-1] + "0"))
				continue
			}
			rec, ok, err := ct.memory(string(v))
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("catalog path %s names unknown memory %s", k, v)
			}
			m := memoryFrom(s.id, string(v), rec)
			if opts.WithContent {
				if m.Content, err = s.loadContent(rec.Blob); err != nil {
					return err
				}
			}
			page.Items = append(page.Items, ListItem{Memory: &m})
			k, v = c.next()
		}
		return nil
	})
	return page, err
}

func lastKey(items []ListItem) []byte {
	it := items[len(items)-1]
	if it.Memory != nil {
		return []byte(it.Memory.Path)
	}
	return []byte(it.Prefix)
}

// Versions lists versions newest first. A filter by memory, session or API key walks the
// versions of that memory, session or key (catalog_versions.go, versionIndex); the other
// filters alone walk the store's versions until a page is full, and the walk ends with
// ctx's error once ctx is done.
func (s *Store) Versions(ctx context.Context, f VersionFilter) (VersionPage, error) {
	limit, err := checkLimit(f.Limit, 20, 1000)
	if err != nil {
		return VersionPage{}, err
	}
	if f.Operation != "" && !f.Operation.Valid() {
		return VersionPage{}, invalidf("operation must be created, modified or deleted, got %q", f.Operation)
	}
	var before []byte
	if f.Cursor != "" {
		if before, err = decodeCursor('v', f.Cursor); err != nil {
			return VersionPage{}, err
		}
	}
	var page VersionPage
	err = s.view(ctx, func(ct catTx) error {
		walked := 0
		for v, err := range ct.versionsBefore(f, before) {
			if err != nil {
				return err
			}
			if walked++; walked%versionsPerCheck == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if !f.matches(v) {
				continue
			}
			if len(page.Versions) == limit {
				page.NextCursor = encodeCursor('v', lastSeq(ct, page.Versions))
				return nil
			}
			ver := versionFrom(s.id, v)
			if f.WithContent && v.contentBlob() != "" {
				if ver.Content, err = s.loadContent(v.Blob); err != nil {
					return err
				}
			}
			page.Versions = append(page.Versions, ver)
		}
		return nil
	})
	return page, err
}

// versionsPerCheck is how many versions a listing walks between looks at its context: a
// few hundred microseconds.
const versionsPerCheck = 256

func lastSeq(ct catTx, vs []Version) []byte {
	return ct.versionKey(vs[len(vs)-1].ID)
}

func (f VersionFilter) matches(v verRec) bool {
	at := msTime(v.At)
	a := v.actor()
	return (f.Operation == "" || v.Op == f.Operation) &&
		(f.SessionID == "" || a.SessionID() == f.SessionID) &&
		(f.APIKeyID == "" || a.KeyID() == f.APIKeyID) &&
		(f.ActorID == "" || a.ID == f.ActorID) &&
		(f.PathPrefix == "" || v.Redacted == nil && strings.HasPrefix(v.Path, f.PathPrefix)) &&
		(f.CreatedAtGTE.IsZero() || !at.Before(f.CreatedAtGTE)) &&
		(f.CreatedAtLTE.IsZero() || !at.After(f.CreatedAtLTE))
}

// Version returns one version.
func (s *Store) Version(ctx context.Context, id string, withContent bool) (Version, error) {
	var ver Version
	err := s.view(ctx, func(ct catTx) error {
		v, ok, err := ct.version(id)
		if err != nil {
			return err
		}
		if !ok {
			return notFoundf("memory version %s not found", id)
		}
		ver = versionFrom(s.id, v)
		if withContent && v.contentBlob() != "" {
			ver.Content, err = s.loadContent(v.Blob)
		}
		return err
	})
	return ver, err
}
