package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets"
)

// wireMemory is a memory, or a folder of a listing (type memory_prefix), as the API answers.
type wireMemory struct {
	Type            string    `json:"type"`
	ID              string    `json:"id"`
	MemoryStoreID   string    `json:"memory_store_id"`
	MemoryVersionID string    `json:"memory_version_id"`
	Path            string    `json:"path"`
	Content         *string   `json:"content"`
	ContentSHA256   string    `json:"content_sha256"`
	SizeBytes       int       `json:"content_size_bytes"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	// RedactedSecrets is, in a write's answer, what the store's secrets policy replaced.
	RedactedSecrets []struct {
		Type   string `json:"type"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
	} `json:"redacted_secrets"`
}

func (w wireMemory) memory() gitstore.Memory {
	return gitstore.Memory{ID: w.ID, StoreID: w.MemoryStoreID, VersionID: w.MemoryVersionID, Path: w.Path,
		Content: w.Content, ContentSHA256: w.ContentSHA256, SizeBytes: w.SizeBytes, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
}

func view(full bool) url.Values {
	if full {
		return url.Values{"view": {"full"}}
	}
	return url.Values{"view": {"basic"}}
}

// Get returns the memory with an id.
func (s *Store) Get(ctx context.Context, id string, withContent bool) (gitstore.Memory, error) {
	var w wireMemory
	err := s.c.do(ctx, http.MethodGet, s.path("memories", id), view(withContent), nil, &w)
	return w.memory(), err
}

// GetByPath returns the memory at path: the API names memories by id, so the listing of
// the path's folder finds it.
func (s *Store) GetByPath(ctx context.Context, path string, withContent bool) (gitstore.Memory, error) {
	return s.at("").GetByPath(ctx, path, withContent)
}

// List lists memories and folders, one page at a time.
func (s *Store) List(ctx context.Context, opts gitstore.ListOptions) (gitstore.ListPage, error) {
	return s.at("").List(ctx, opts)
}

// ReaderAt reads the store as it is (at "") or as it was at a time or commit.
func (s *Store) ReaderAt(ctx context.Context, at string) (gitstore.MemoryReader, error) {
	return s.at(at), nil
}

func (s *Store) at(at string) reader { return reader{s: s, at: at} }

// reader reads a store now or at a point of its history (the API's ?at=).
type reader struct {
	s  *Store
	at string
}

func (r reader) query(full bool) url.Values {
	q := view(full)
	if r.at != "" {
		q.Set("at", r.at)
	}
	return q
}

func (r reader) Get(ctx context.Context, id string, withContent bool) (gitstore.Memory, error) {
	var w wireMemory
	err := r.s.c.do(ctx, http.MethodGet, r.s.path("memories", id), r.query(withContent), nil, &w)
	return w.memory(), err
}

func (r reader) GetByPath(ctx context.Context, path string, withContent bool) (gitstore.Memory, error) {
	if err := gitstore.ValidatePath(path); err != nil {
		return gitstore.Memory{}, err
	}
	dir := path[:strings.LastIndex(path, "/")+1]
	for cursor := ""; ; {
		page, err := r.List(ctx, gitstore.ListOptions{PathPrefix: dir, Depth: 1, Limit: 100, Cursor: cursor})
		if err != nil {
			return gitstore.Memory{}, err
		}
		for _, it := range page.Items {
			if it.Memory != nil && it.Memory.Path == path {
				if !withContent {
					return *it.Memory, nil
				}
				return r.Get(ctx, it.Memory.ID, true)
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			msg := "no memory at " + path
			if r.at != "" {
				msg += " as of " + r.at
			}
			return gitstore.Memory{}, &gitstore.Error{Kind: gitstore.KindNotFound, Message: msg}
		}
	}
}

func (r reader) List(ctx context.Context, opts gitstore.ListOptions) (gitstore.ListPage, error) {
	q := r.query(opts.WithContent)
	if opts.PathPrefix != "" {
		q.Set("path_prefix", opts.PathPrefix)
	}
	if opts.Depth > 0 {
		q.Set("depth", strconv.Itoa(opts.Depth))
	}
	limit := opts.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	if opts.WithContent && limit > 20 {
		limit = 20
	}
	q.Set("limit", strconv.Itoa(limit))
	if opts.Cursor != "" {
		q.Set("page", opts.Cursor)
	}
	var page struct {
		Data     []wireMemory `json:"data"`
		NextPage *string      `json:"next_page"`
	}
	if err := r.s.c.do(ctx, http.MethodGet, r.s.path("memories"), q, nil, &page); err != nil {
		return gitstore.ListPage{}, err
	}
	out := gitstore.ListPage{NextCursor: deref(page.NextPage)}
	for _, w := range page.Data {
		if w.Type == "memory_prefix" {
			out.Items = append(out.Items, gitstore.ListItem{Prefix: w.Path})
			continue
		}
		m := w.memory()
		out.Items = append(out.Items, gitstore.ListItem{Memory: &m})
	}
	return out, nil
}

func precondition(p *gitstore.Precondition) any {
	if p == nil {
		return nil
	}
	if p.Type == gitstore.NotExists {
		return map[string]string{"type": string(p.Type)}
	}
	return map[string]string{"type": string(p.Type), "content_sha256": p.ContentSHA256}
}

// Write creates a memory at a path or replaces its content. The server writes as the
// client's key (in.Actor is not sent: a client cannot claim to be someone else).
func (s *Store) Write(ctx context.Context, in gitstore.WriteInput) (gitstore.WriteResult, error) {
	body := map[string]any{"path": in.Path, "content": in.Content}
	if p := precondition(in.Precondition); p != nil {
		body["precondition"] = p
	}
	var w wireMemory
	hdr, err := s.c.doHeader(ctx, http.MethodPost, s.path("memories"), nil, body, &w)
	if err != nil {
		return gitstore.WriteResult{}, err
	}
	return s.writeResult(ctx, hdr, w)
}

// UpdateMemory changes a memory's content or path, by id or by its current path.
func (s *Store) UpdateMemory(ctx context.Context, in gitstore.UpdateInput) (gitstore.WriteResult, error) {
	id := in.ID
	if id == "" {
		m, err := s.GetByPath(ctx, in.FromPath, false)
		if err != nil {
			return gitstore.WriteResult{}, err
		}
		id = m.ID
	}
	body := map[string]any{}
	if in.Content != nil {
		body["content"] = *in.Content
	}
	if in.Path != nil {
		body["path"] = *in.Path
	}
	if p := precondition(in.Precondition); p != nil {
		body["precondition"] = p
	}
	var w wireMemory
	hdr, err := s.c.doHeader(ctx, http.MethodPost, s.path("memories", id), nil, body, &w)
	if err != nil {
		return gitstore.WriteResult{}, err
	}
	return s.writeResult(ctx, hdr, w)
}

// writeResult is the answer of a write from its reply: the memory unchanged
// (UnchangedHeader), or the memory and its new version; and the proposal it went to, if any
// (ProposalHeader). A proposal's version is read only by a caller whose reads see the
// proposal (a propose key): for another (the store reviews the path), Version stays nil,
// and the server says so (ProposalReadsHeader), so that it is not asked for.
func (s *Store) writeResult(ctx context.Context, hdr http.Header, w wireMemory) (gitstore.WriteResult, error) {
	res := gitstore.WriteResult{Memory: w.memory(), Proposal: hdr.Get(ProposalHeader)}
	for _, r := range w.RedactedSecrets {
		res.Redacted = append(res.Redacted, secrets.Finding{Kind: r.Type, Line: r.Line, Column: r.Column})
	}
	if hdr.Get(UnchangedHeader) == "true" || readsMain(hdr) {
		return res, nil
	}
	v, err := s.Version(ctx, w.MemoryVersionID)
	if res.Proposal != "" && gitstore.IsKind(err, gitstore.KindNotFound) {
		return res, nil // the caller reads main (a server that does not send ProposalReadsHeader)
	} else if err != nil {
		return res, err
	}
	res.Version = &v
	return res, nil
}

// readsMain tells from a write's answer that the write went to a proposal that the caller's
// reads do not see: its version is not to be read.
func readsMain(hdr http.Header) bool {
	return hdr.Get(ProposalHeader) != "" && hdr.Get(ProposalReadsHeader) == "false"
}

// Delete deletes a memory, by id or path, and returns its deleting version.
func (s *Store) Delete(ctx context.Context, in gitstore.DeleteInput) (gitstore.Version, error) {
	id := in.ID
	if id == "" {
		m, err := s.GetByPath(ctx, in.Path, false)
		if err != nil {
			return gitstore.Version{}, err
		}
		id = m.ID
	}
	var q url.Values
	if in.ExpectedSHA256 != "" {
		q = url.Values{"expected_content_sha256": {in.ExpectedSHA256}}
	}
	hdr, err := s.c.doHeader(ctx, http.MethodDelete, s.path("memories", id), q, nil, nil)
	if err != nil {
		return gitstore.Version{}, err
	}
	if readsMain(hdr) {
		return gitstore.Version{MemoryID: id, Operation: gitstore.OpDeleted}, nil // main does not have it
	}
	page, err := s.Versions(ctx, gitstore.VersionFilter{MemoryID: id, Operation: gitstore.OpDeleted, Limit: 1})
	if err != nil || len(page.Versions) == 0 {
		return gitstore.Version{ID: "", MemoryID: id, Operation: gitstore.OpDeleted}, err
	}
	return page.Versions[0], nil
}

// MovePath moves a memory or a folder of memories, as the store's MovePath does: the memory
// tool's rename, run by the server, which publishes the versions of a folder together. Its
// refusals come back as KindInvalid errors with the tool's message.
func (s *Store) MovePath(ctx context.Context, in gitstore.MovePathInput) ([]gitstore.WriteResult, error) {
	input, err := json.Marshal(map[string]string{"command": "rename", "old_path": "/memories" + in.From, "new_path": "/memories" + in.To})
	if err != nil {
		return nil, err
	}
	text, isError, err := s.CallTool(ctx, "memory", input)
	if err != nil {
		return nil, err
	}
	if isError {
		return nil, &gitstore.Error{Kind: gitstore.KindInvalid, Message: strings.TrimPrefix(text, "Error: ")}
	}
	return nil, nil // the tool does not say which versions it made
}
