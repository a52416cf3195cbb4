package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// revertStore reverts what one session or one API key changed in a time range (a gitmem
// extension): POST /v1/memory_stores/{id}/revert with
// {"session_id"|"api_key_id", "created_at_gte", "created_at_lte", "dry_run"}. It is a write
// (a read_only key gets 403), also as a dry run.
func (s *Server) revertStore(c echo.Context) error {
	st, cl, err := s.store(c, true)
	if err != nil {
		return err
	}
	b, err := readBody(c, "session_id", "api_key_id", "created_at_gte", "created_at_lte", "dry_run")
	if err != nil {
		return err
	}
	in := gitstore.RevertInput{Actor: cl.actor}
	sid, err := b.str("session_id")
	if err != nil {
		return err
	}
	kid, err := b.str("api_key_id")
	if err != nil {
		return err
	}
	if (sid == nil || *sid == "") == (kid == nil || *kid == "") {
		return badRequest("give exactly one of the fields \"session_id\" and \"api_key_id\": the session or the API key whose changes to revert")
	}
	if sid != nil {
		in.SessionID = *sid
	}
	if kid != nil {
		in.APIKeyID = *kid
	}
	if in.Since, err = bodyTime(b, "created_at_gte", gitstore.ParseTime); err != nil {
		return err
	}
	// The end is inclusive, so a day runs to its end, as the CLI's --until reads it.
	if in.Until, err = bodyTime(b, "created_at_lte", gitstore.ParseUntil); err != nil {
		return err
	}
	if b.has("dry_run") {
		if err := b.decode("dry_run", &in.DryRun, "true or false"); err != nil {
			return err
		}
	}
	res, err := st.Revert(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toRevert(res))
}

// bodyTime reads an optional time field with parse (gitstore.ParseTime or ParseUntil);
// absent or null is the zero time.
func bodyTime(b body, field string, parse func(string, time.Time) (time.Time, error)) (time.Time, error) {
	v, err := b.str(field)
	if err != nil || v == nil {
		return time.Time{}, err
	}
	t, err := parse(*v, time.Now())
	if err != nil {
		return time.Time{}, badRequest("field %q: %s", field, err)
	}
	return t, nil
}

type revertJSON struct {
	Type      string          `json:"type"`
	DryRun    bool            `json:"dry_run"`
	Reverted  []revertedJSON  `json:"reverted"`
	Skipped   []skippedJSON   `json:"skipped"`
	Unchanged []unchangedJSON `json:"unchanged"`
}

type revertedJSON struct {
	MemoryID        string  `json:"memory_id"`
	Path            string  `json:"path"`
	FromPath        *string `json:"from_path"` // null for a recreated memory
	Action          string  `json:"action"`
	RevertedTo      *string `json:"reverted_to"`       // null when the range created the memory
	MemoryVersionID *string `json:"memory_version_id"` // null in a dry run
}

type blockingJSON struct {
	ID        string    `json:"id"`
	MemoryID  string    `json:"memory_id"`
	Operation string    `json:"operation"`
	CreatedBy actorJSON `json:"created_by"`
	CreatedAt string    `json:"created_at"`
}

type skippedJSON struct {
	MemoryID            string        `json:"memory_id"`
	Path                string        `json:"path"`
	Reason              string        `json:"reason"`
	Message             string        `json:"message"`
	BlockingVersion     *blockingJSON `json:"blocking_version"`
	ConflictingMemoryID *string       `json:"conflicting_memory_id,omitempty"`
}

type unchangedJSON struct {
	MemoryID string `json:"memory_id"`
	Path     string `json:"path"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toRevert(r gitstore.RevertResult) revertJSON {
	out := revertJSON{Type: "memory_revert", DryRun: r.DryRun, Reverted: []revertedJSON{}, Skipped: []skippedJSON{}, Unchanged: []unchangedJSON{}}
	for _, m := range r.Reverted {
		out.Reverted = append(out.Reverted, revertedJSON{MemoryID: m.MemoryID, Path: m.Path, FromPath: strPtr(m.FromPath),
			Action: string(m.Action), RevertedTo: strPtr(m.RevertedTo), MemoryVersionID: strPtr(m.VersionID)})
	}
	for _, m := range r.Skipped {
		sk := skippedJSON{MemoryID: m.MemoryID, Path: m.Path, Reason: string(m.Reason), Message: m.Message,
			ConflictingMemoryID: strPtr(m.ConflictingMemoryID)}
		if v := m.Blocking; v != nil {
			sk.BlockingVersion = &blockingJSON{ID: v.ID, MemoryID: v.MemoryID, Operation: string(v.Operation),
				CreatedBy: toActor(v.CreatedBy), CreatedAt: wireTime(v.CreatedAt)}
		}
		out.Skipped = append(out.Skipped, sk)
	}
	for _, m := range r.Unchanged {
		out.Unchanged = append(out.Unchanged, unchangedJSON{MemoryID: m.MemoryID, Path: m.Path})
	}
	return out
}

// RevertJSON is a revert's result as the revert route answers it, for the CLI's --json.
func RevertJSON(r gitstore.RevertResult) any { return toRevert(r) }
