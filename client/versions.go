package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// wireVersion is a memory version as the API answers it.
type wireVersion struct {
	ID            string            `json:"id"`
	MemoryID      string            `json:"memory_id"`
	MemoryStoreID string            `json:"memory_store_id"`
	Operation     string            `json:"operation"`
	Path          *string           `json:"path"`
	Content       *string           `json:"content"`
	ContentSHA256 *string           `json:"content_sha256"`
	SizeBytes     *int              `json:"content_size_bytes"`
	CreatedBy     map[string]string `json:"created_by"`
	CreatedAt     time.Time         `json:"created_at"`
	RedactedAt    *time.Time        `json:"redacted_at"`
	RedactedBy    map[string]string `json:"redacted_by"`
	ApprovedBy    map[string]string `json:"approved_by"`
}

// actorIDFields are the fields that carry an actor's id, one per type.
var actorIDFields = []string{"api_key_id", "session_id", "user_id", "service_account_id", "id"}

// actor is an actor object of the API.
func actor(m map[string]string) gitstore.Actor {
	a := gitstore.Actor{Type: gitstore.ActorType(m["type"]), Name: m["name"], Email: m["email"]}
	for _, f := range actorIDFields {
		if v := m[f]; v != "" {
			a.ID = v
			break
		}
	}
	return a
}

func (w wireVersion) version() gitstore.Version {
	v := gitstore.Version{ID: w.ID, MemoryID: w.MemoryID, StoreID: w.MemoryStoreID, Operation: gitstore.Operation(w.Operation),
		Content: w.Content, CreatedBy: actor(w.CreatedBy), CreatedAt: w.CreatedAt, RedactedAt: w.RedactedAt}
	if w.Path != nil {
		v.Path = *w.Path
	}
	if w.ContentSHA256 != nil {
		v.ContentSHA256 = *w.ContentSHA256
	}
	if w.SizeBytes != nil {
		v.SizeBytes = *w.SizeBytes
	}
	if w.ApprovedBy != nil {
		by := actor(w.ApprovedBy)
		v.ApprovedBy = &by
	}
	if w.RedactedBy != nil {
		by := actor(w.RedactedBy)
		v.RedactedBy = &by
	}
	return v
}

// Version returns one version by id.
func (s *Store) Version(ctx context.Context, id string) (gitstore.Version, error) {
	var w wireVersion
	err := s.c.do(ctx, http.MethodGet, s.path("memory_versions", id), nil, nil, &w)
	return w.version(), err
}

// Versions returns one page of the store's versions, newest first, as f selects them.
func (s *Store) Versions(ctx context.Context, f gitstore.VersionFilter) (gitstore.VersionPage, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("memory_id", f.MemoryID)
	set("operation", string(f.Operation))
	set("session_id", f.SessionID)
	set("api_key_id", f.APIKeyID)
	set("page", f.Cursor)
	if !f.CreatedAtGTE.IsZero() {
		q.Set("created_at[gte]", f.CreatedAtGTE.UTC().Format(time.RFC3339Nano))
	}
	if !f.CreatedAtLTE.IsZero() {
		q.Set("created_at[lte]", f.CreatedAtLTE.UTC().Format(time.RFC3339Nano))
	}
	limit := f.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	q.Set("limit", strconv.Itoa(limit))
	if f.WithContent {
		q.Set("view", "full")
	}
	var page struct {
		Data     []wireVersion `json:"data"`
		NextPage *string       `json:"next_page"`
	}
	if err := s.c.do(ctx, http.MethodGet, s.path("memory_versions"), q, nil, &page); err != nil {
		return gitstore.VersionPage{}, err
	}
	out := gitstore.VersionPage{NextCursor: deref(page.NextPage)}
	for _, w := range page.Data {
		out.Versions = append(out.Versions, w.version())
	}
	return out, nil
}
