package client

import (
	"context"
	"net/http"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// Revert undoes what a session or key changed in a time range (or says what it would undo).
func (s *Store) Revert(ctx context.Context, in gitstore.RevertInput) (gitstore.RevertResult, error) {
	body := map[string]any{"dry_run": in.DryRun}
	if in.SessionID != "" {
		body["session_id"] = in.SessionID
	}
	if in.APIKeyID != "" {
		body["api_key_id"] = in.APIKeyID
	}
	if !in.Since.IsZero() {
		body["created_at_gte"] = in.Since.UTC().Format(time.RFC3339Nano)
	}
	if !in.Until.IsZero() {
		body["created_at_lte"] = in.Until.UTC().Format(time.RFC3339Nano)
	}
	var w struct {
		DryRun   bool `json:"dry_run"`
		Reverted []struct {
			MemoryID        string  `json:"memory_id"`
			Path            string  `json:"path"`
			FromPath        *string `json:"from_path"`
			Action          string  `json:"action"`
			RevertedTo      *string `json:"reverted_to"`
			MemoryVersionID *string `json:"memory_version_id"`
		} `json:"reverted"`
		Skipped []struct {
			MemoryID        string `json:"memory_id"`
			Path            string `json:"path"`
			Reason          string `json:"reason"`
			Message         string `json:"message"`
			BlockingVersion *struct {
				ID        string            `json:"id"`
				MemoryID  string            `json:"memory_id"`
				Operation string            `json:"operation"`
				CreatedBy map[string]string `json:"created_by"`
				CreatedAt time.Time         `json:"created_at"`
			} `json:"blocking_version"`
			ConflictingMemoryID *string `json:"conflicting_memory_id"`
		} `json:"skipped"`
		Unchanged []struct {
			MemoryID string `json:"memory_id"`
			Path     string `json:"path"`
		} `json:"unchanged"`
	}
	if err := s.c.do(ctx, http.MethodPost, s.path("revert"), nil, body, &w); err != nil {
		return gitstore.RevertResult{}, err
	}
	res := gitstore.RevertResult{DryRun: w.DryRun}
	for _, r := range w.Reverted {
		res.Reverted = append(res.Reverted, gitstore.RevertedMemory{MemoryID: r.MemoryID, Path: r.Path,
			FromPath: deref(r.FromPath), Action: gitstore.RevertAction(r.Action), RevertedTo: deref(r.RevertedTo),
			VersionID: deref(r.MemoryVersionID)})
	}
	for _, sk := range w.Skipped {
		m := gitstore.SkippedMemory{MemoryID: sk.MemoryID, Path: sk.Path, Reason: gitstore.SkipReason(sk.Reason),
			Message: sk.Message, ConflictingMemoryID: deref(sk.ConflictingMemoryID)}
		if b := sk.BlockingVersion; b != nil {
			m.Blocking = &gitstore.Version{ID: b.ID, MemoryID: b.MemoryID, Operation: gitstore.Operation(b.Operation),
				CreatedBy: actor(b.CreatedBy), CreatedAt: b.CreatedAt}
		}
		res.Skipped = append(res.Skipped, m)
	}
	for _, u := range w.Unchanged {
		res.Unchanged = append(res.Unchanged, gitstore.UnchangedMemory{MemoryID: u.MemoryID, Path: u.Path})
	}
	return res, nil
}
