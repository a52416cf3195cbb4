package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// GET /v1/memory_stores/{id}/events is the store's changes as server-sent events, one per
// version, in commit order, whatever made the version (the API, the tools, MCP, the UI, a git
// push, a sync merge, expiry, restore, revert): they are read from the history, not recorded
// by each way in. An event's id is its version's id, the cursor to resume from, which a
// reconnecting client sends as Last-Event-ID (or ?after=, which also takes a time). A
// gitmem extension.

// The limits of event streams.
const (
	// maxStreams bounds the streams open at once; a stream is not a request in flight
	// (limitRequests), as it lasts.
	maxStreams = 1024
	// eventBatch is how many versions a stream reads from the catalog at a time.
	eventBatch = 256
)

// HeartbeatEvery is how often an idle stream sends a comment, so that proxies keep it open.
var HeartbeatEvery = 15 * time.Second

// eventJSON is an event's data: the version, without content.
type eventJSON struct {
	Type            string    `json:"type"`
	MemoryStoreID   string    `json:"memory_store_id"`
	MemoryID        string    `json:"memory_id"`
	MemoryVersionID string    `json:"memory_version_id"`
	Operation       string    `json:"operation"`
	Path            *string   `json:"path"`
	CreatedBy       actorJSON `json:"created_by"`
	CreatedAt       string    `json:"created_at"`
	SessionID       string    `json:"session_id,omitempty"`
	Commit          string    `json:"commit"`
}

// eventType is the SSE event name of a version: memory.created, memory.modified,
// memory.deleted, or memory.redacted for a version whose content was redacted since.
func eventType(v gitstore.Version) string {
	if v.RedactedAt != nil {
		return "memory.redacted"
	}
	return "memory." + string(v.Operation)
}

func toEvent(v gitstore.Version) eventJSON {
	e := eventJSON{Type: eventType(v), MemoryStoreID: v.StoreID, MemoryID: v.MemoryID, MemoryVersionID: v.ID,
		Operation: string(v.Operation), CreatedBy: toActor(v.CreatedBy), CreatedAt: wireTime(v.CreatedAt),
		SessionID: v.CreatedBy.SessionID(), Commit: v.Commit}
	if v.Path != "" {
		e.Path = &v.Path
	}
	return e
}

func (s *Server) eventRoutes(g *echo.Group) {
	g.GET("/memory_stores/:store/events", s.storeEvents)
}

// isStream tells whether a request is for an event stream, which limitRequests does not
// count nor bound in time.
func isStream(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/memory_stores/") && strings.HasSuffix(r.URL.Path, "/events")
}

func (s *Server) storeEvents(c echo.Context) error {
	st, _, err := s.store(c, false)
	if err != nil {
		return err
	}
	r := c.Request()
	cursor := r.Header.Get("Last-Event-ID")
	if after := c.QueryParam("after"); after != "" && cursor == "" {
		if cursor, err = s.cursorOf(r.Context(), st, after); err != nil {
			return err
		}
	}
	if cursor != "" && !strings.HasPrefix(cursor, gitstore.VersionPrefix) {
		return badRequest("Last-Event-ID %q is not an event id (a memver_ id)", cursor)
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		c.Response().Header().Set("Retry-After", "5")
		return &apiError{status: http.StatusServiceUnavailable, typ: "overloaded_error",
			message: fmt.Sprintf("gitmem has its limit of %d event streams open; retry shortly", maxStreams)}
	}
	w := c.Response()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a proxy that buffers would hold events back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(format string, args ...any) error {
		// Each write has its own deadline: a stream lasts, a stuck client does not.
		if err := rc.SetWriteDeadline(time.Now().Add(s.opts.Limits.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send(": gitmem events of %s\n\n", st.ID()); err != nil {
		return nil
	}
	ctx := r.Context()
	beat := time.NewTicker(HeartbeatEvery)
	defer beat.Stop()
	for {
		moved := st.Moved() // before reading, so that no change falls between
		vs, more, err := st.VersionsAfter(ctx, cursor, eventBatch)
		if errors.Is(err, gitstore.ErrCursorGone) {
			// A forced push replaced the history the cursor was in: say where to restart.
			data, _ := json.Marshal(map[string]string{"type": "error", "error": "cursor_gone",
				"message": fmt.Sprintf("event %s is not in the history of store %s any more (its history was replaced); reconnect with ?after=TIME, or without a cursor for every event", cursor, st.ID())})
			send("event: error\ndata: %s\n\n", data)
			return nil
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("event stream", "store", st.ID(), "err", err)
			}
			return nil
		}
		for _, v := range vs {
			data, err := json.Marshal(toEvent(v))
			if err != nil {
				return err
			}
			if err := send("id: %s\nevent: %s\ndata: %s\n\n", v.ID, eventType(v), data); err != nil {
				return nil
			}
			cursor = v.ID
		}
		if more {
			continue
		}
		select {
		case <-moved:
		case <-beat.C:
			if err := send(": heartbeat\n\n"); err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		}
	}
}

// cursorOf reads ?after=: an event id, or a time in the forms of ?at= (the stream then
// starts with the first version made at or after it).
func (s *Server) cursorOf(ctx context.Context, st *gitstore.Store, after string) (string, error) {
	if strings.HasPrefix(after, gitstore.VersionPrefix) {
		return after, nil
	}
	t, err := gitstore.ParseTime(after, time.Now())
	if err != nil {
		return "", badRequest("after %q must be an event id (memver_...) or %s", after, gitstore.TimeFormHint)
	}
	return st.VersionBefore(ctx, t)
}
