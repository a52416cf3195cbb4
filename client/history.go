package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// Restore gives a version's memory that version's content and path again, as a new version.
func (s *Store) Restore(ctx context.Context, in gitstore.RestoreInput) (gitstore.WriteResult, error) {
	body := map[string]any{}
	if in.MemoryID != "" {
		body["memory_id"] = in.MemoryID
	}
	return s.write(ctx, s.path("memory_versions", in.VersionID, "restore"), body)
}

// DiffMemory is the unified diff between two versions of a memory ("" for the defaults).
func (s *Store) DiffMemory(ctx context.Context, memoryID, fromID, toID string) (gitstore.MemoryDiff, error) {
	q := url.Values{}
	if fromID != "" {
		q.Set("from", fromID)
	}
	if toID != "" {
		q.Set("to", toID)
	}
	var w struct {
		MemoryID string  `json:"memory_id"`
		From     *string `json:"from"`
		To       string  `json:"to"`
		FromPath *string `json:"from_path"`
		ToPath   string  `json:"to_path"`
		Diff     string  `json:"diff"`
	}
	if err := s.c.do(ctx, http.MethodGet, s.path("memories", memoryID, "diff"), q, nil, &w); err != nil {
		return gitstore.MemoryDiff{}, err
	}
	d := gitstore.MemoryDiff{MemoryID: w.MemoryID, To: gitstore.Version{ID: w.To, Path: w.ToPath}, Diff: w.Diff}
	if w.From != nil {
		d.From = gitstore.Version{ID: *w.From, Path: deref(w.FromPath)}
	}
	return d, nil
}

// Blame returns each line of a memory's content with the version that last changed it.
func (s *Store) Blame(ctx context.Context, memoryID string) ([]gitstore.BlameLine, error) {
	var w struct {
		Lines []struct {
			Line      int               `json:"line"`
			Text      string            `json:"text"`
			VersionID string            `json:"version_id"`
			CreatedBy map[string]string `json:"created_by"`
			CreatedAt time.Time         `json:"created_at"`
		} `json:"lines"`
	}
	if err := s.c.do(ctx, http.MethodGet, s.path("memories", memoryID, "blame"), nil, nil, &w); err != nil {
		return nil, err
	}
	out := make([]gitstore.BlameLine, len(w.Lines))
	for i, l := range w.Lines {
		out[i] = gitstore.BlameLine{Line: l.Line, Text: l.Text,
			Version: gitstore.Version{ID: l.VersionID, CreatedBy: actor(l.CreatedBy), CreatedAt: l.CreatedAt}}
	}
	return out, nil
}

// Redact scrubs a version's content and path out of the store's history.
func (s *Store) Redact(ctx context.Context, in gitstore.RedactInput) (gitstore.RedactResult, error) {
	var w struct {
		wireVersion
		Redaction struct {
			OldHead          *string `json:"old_head"`
			NewHead          *string `json:"new_head"`
			RewrittenCommits int     `json:"rewritten_commits"`
			ContentRemains   bool    `json:"content_remains"`
			Proposals        []struct {
				ID, Action string
			} `json:"proposals"`
			TookMS int64 `json:"took_ms"`
		} `json:"redaction"`
	}
	if err := s.c.do(ctx, http.MethodPost, s.path("memory_versions", in.VersionID, "redact"), nil, nil, &w); err != nil {
		return gitstore.RedactResult{}, err
	}
	r := w.Redaction
	var forks []gitstore.ForkRedaction
	for _, p := range r.Proposals {
		forks = append(forks, gitstore.ForkRedaction{ID: p.ID, Closed: p.Action == "closed"})
	}
	return gitstore.RedactResult{Version: w.version(), OldHead: deref(r.OldHead), NewHead: deref(r.NewHead),
		Rewritten: r.RewrittenCommits, ContentRemains: r.ContentRemains, Forks: forks, Took: time.Duration(r.TookMS) * time.Millisecond}, nil
}

// GC packs the store's repository (git repack, prune) on the server.
func (s *Store) GC(ctx context.Context) (gitstore.GCResult, error) {
	var w struct {
		Before, After struct {
			Packs        int   `json:"packs"`
			PackBytes    int64 `json:"pack_bytes"`
			LooseObjects int   `json:"loose_objects"`
			LooseBytes   int64 `json:"loose_bytes"`
		}
		KeptOldPacks bool  `json:"kept_old_packs"`
		TookMS       int64 `json:"took_ms"`
	}
	if err := s.c.do(ctx, http.MethodPost, s.path("gc"), nil, nil, &w); err != nil {
		return gitstore.GCResult{}, err
	}
	return gitstore.GCResult{
		Before:       gitstore.ObjectStats{Packs: w.Before.Packs, PackBytes: w.Before.PackBytes, LooseObjects: w.Before.LooseObjects, LooseBytes: w.Before.LooseBytes},
		After:        gitstore.ObjectStats{Packs: w.After.Packs, PackBytes: w.After.PackBytes, LooseObjects: w.After.LooseObjects, LooseBytes: w.After.LooseBytes},
		KeptOldPacks: w.KeptOldPacks, Took: time.Duration(w.TookMS) * time.Millisecond}, nil
}
