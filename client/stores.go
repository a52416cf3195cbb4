package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// wireStore is a store as the API answers it.
type wireStore struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	ArchivedAt  *time.Time        `json:"archived_at"`
	Policy      gitstore.Policy   `json:"policy"`
	Usage       struct {
		Memories int   `json:"memories"`
		Bytes    int64 `json:"bytes"`
	} `json:"usage"`
	Head string `json:"head"`
}

func (w wireStore) info() gitstore.StoreInfo {
	p := w.Policy
	if p.Secrets == gitstore.SecretsPolicy("reject") {
		p.Secrets = "" // the default, as store.json keeps it
	}
	return gitstore.StoreInfo{ID: w.ID, Name: w.Name, Description: w.Description, Metadata: w.Metadata,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt, ArchivedAt: w.ArchivedAt, Policy: p}
}

// ListStores returns one page of the server's stores, newest first.
func (c *Client) ListStores(ctx context.Context, opts gitstore.StoreListOptions) (gitstore.StorePage, error) {
	q := url.Values{}
	if opts.IncludeArchived {
		q.Set("include_archived", "true")
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(opts.Limit, 100)))
	}
	if opts.Cursor != "" {
		q.Set("page", opts.Cursor)
	}
	var page struct {
		Data     []wireStore `json:"data"`
		NextPage *string     `json:"next_page"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/memory_stores", q, nil, &page); err != nil {
		return gitstore.StorePage{}, err
	}
	out := gitstore.StorePage{NextCursor: deref(page.NextPage)}
	for _, s := range page.Data {
		out.Stores = append(out.Stores, s.info())
	}
	return out, nil
}

// CreateStore creates a store; the server records its caller (the key) as the actor.
func (c *Client) CreateStore(ctx context.Context, in gitstore.CreateStoreInput) (*Store, error) {
	body := map[string]any{"name": in.Name}
	if in.Description != "" {
		body["description"] = in.Description
	}
	if len(in.Metadata) > 0 {
		body["metadata"] = in.Metadata
	}
	if !in.Policy.IsZero() {
		body["policy"] = in.Policy
	}
	var w wireStore
	if err := c.do(ctx, http.MethodPost, "/v1/memory_stores", nil, body, &w); err != nil {
		return nil, err
	}
	return c.Store(w.ID), nil
}

// Store is one store of the server, by id.
func (c *Client) Store(id string) *Store { return &Store{c: c, id: id} }

// Store is a store on a server; its methods are those of *gitstore.Store that the CLI uses.
type Store struct {
	c  *Client
	id string
}

func (s *Store) ID() string { return s.id }

func (s *Store) path(parts ...string) string {
	p := "/v1/memory_stores/" + url.PathEscape(s.id)
	for _, x := range parts {
		p += "/" + url.PathEscape(x)
	}
	return p
}

// Info returns the store's metadata and policy.
func (s *Store) Info(ctx context.Context) (gitstore.StoreInfo, error) {
	var w wireStore
	err := s.c.do(ctx, http.MethodGet, s.path(), nil, nil, &w)
	return w.info(), err
}

// Usage returns the store's live memories and their bytes.
func (s *Store) Usage(ctx context.Context) (gitstore.Usage, error) {
	var w wireStore
	err := s.c.do(ctx, http.MethodGet, s.path(), nil, nil, &w)
	return gitstore.Usage{Memories: w.Usage.Memories, Bytes: w.Usage.Bytes}, err
}

// Head is the commit of main that the server's reads reflect.
func (s *Store) Head(ctx context.Context) (string, error) {
	var w wireStore
	err := s.c.do(ctx, http.MethodGet, s.path(), nil, nil, &w)
	return w.Head, err
}

// RepoURL is where git clones the store from.
func (s *Store) RepoURL() string { return s.c.base + "/git/" + s.id + ".git" }

// Archive makes the store read-only for good.
func (s *Store) Archive(ctx context.Context, _ gitstore.Actor) (gitstore.StoreInfo, error) {
	var w wireStore
	err := s.c.do(ctx, http.MethodPost, s.path("archive"), nil, nil, &w)
	return w.info(), err
}

// UpdateInfo changes the store's policy (the only part of a patch the CLI sends).
func (s *Store) UpdateInfo(ctx context.Context, p gitstore.StorePatch) (gitstore.StoreInfo, error) {
	policy := map[string]any{}
	if pp := p.Policy; pp != nil {
		if pp.Secrets != nil {
			policy["secrets"] = *pp.Secrets
		}
		if pp.ExpireAfter != nil {
			policy["expire_after"] = nil
			if *pp.ExpireAfter != 0 {
				policy["expire_after"] = pp.ExpireAfter.String()
			}
		}
		if pp.MaxMemories != nil {
			policy["max_memories"] = *pp.MaxMemories
		}
		if pp.MaxBytes != nil {
			policy["max_bytes"] = *pp.MaxBytes
		}
		if pp.ReviewPaths != nil {
			policy["review_paths"] = *pp.ReviewPaths
		}
		if pp.ReviewExempt != nil {
			policy["review_exempt"] = *pp.ReviewExempt
		}
	}
	var w wireStore
	err := s.c.do(ctx, http.MethodPost, s.path(), nil, map[string]any{"policy": policy}, &w)
	return w.info(), err
}

// DeleteStore deletes a store with all its history.
func (c *Client) DeleteStore(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, c.Store(id).path(), nil, nil, nil)
}

// Search searches the store's memories.
func (s *Store) Search(ctx context.Context, req search.Request) (*search.Result, error) {
	q := url.Values{"q": {req.Query}}
	if req.PathPrefix != "" {
		q.Set("path_prefix", req.PathPrefix)
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Snippets > 0 {
		q.Set("snippets", strconv.Itoa(req.Snippets))
	}
	var w struct {
		Commit string       `json:"commit"`
		Total  uint64       `json:"total"`
		Data   []search.Hit `json:"data"`
	}
	if err := s.c.do(ctx, http.MethodGet, s.path("search"), q, nil, &w); err != nil {
		return nil, err
	}
	return &search.Result{Commit: w.Commit, Total: w.Total, Hits: w.Data}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// Expire deletes the memories unused for the store's expire_after (or says which would go).
func (s *Store) Expire(ctx context.Context, dryRun bool) (gitstore.ExpireReport, error) {
	var w struct {
		DryRun      bool      `json:"dry_run"`
		ExpireAfter *string   `json:"expire_after"`
		Cutoff      time.Time `json:"cutoff"`
		Expired     []struct {
			MemoryID        string    `json:"memory_id"`
			Path            string    `json:"path"`
			SizeBytes       int       `json:"content_size_bytes"`
			LastUsedAt      time.Time `json:"last_used_at"`
			MemoryVersionID *string   `json:"memory_version_id"`
		} `json:"expired"`
	}
	if err := s.c.do(ctx, http.MethodPost, s.path("expire"), nil, map[string]any{"dry_run": dryRun}, &w); err != nil {
		return gitstore.ExpireReport{}, err
	}
	rep := gitstore.ExpireReport{DryRun: w.DryRun, Cutoff: w.Cutoff}
	if w.ExpireAfter != nil {
		d, err := gitstore.ParseDuration(*w.ExpireAfter)
		if err != nil {
			return rep, err
		}
		rep.ExpireAfter = d
	}
	for _, e := range w.Expired {
		rep.Expired = append(rep.Expired, gitstore.Expired{MemoryID: e.MemoryID, Path: e.Path, SizeBytes: e.SizeBytes,
			LastUsed: e.LastUsedAt, VersionID: deref(e.MemoryVersionID)})
	}
	return rep, nil
}
