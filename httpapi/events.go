package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// GET /v1/memory_stores/{id}/events is the store's changes as server-sent events, one per
// version and one per change of the store's own metadata, in commit order, whatever made the
// change (the API, the tools, MCP, the UI, a git push, a sync merge, expiry, restore,
// revert): they are read from the history, not recorded by each way in. An event's id is its
// change's id (memver_ or storechg_), the cursor to resume from, which a reconnecting client
// sends as Last-Event-ID (or ?after=, which also takes a time). GET /v1/events is the same
// for every store the key may read, each store's events in order; its ids are cursors of all
// the stores at once. Gitmem extensions.

// eventBatch is how many versions a stream reads from the catalog at a time.
const eventBatch = 256

// streamCount counts the open event streams: a stream is not a request in flight
// (limitRequests), as it lasts, so it has caps of its own, Limits.MaxStreams of every key
// and Limits.MaxStreamsPerKey of each.
type streamCount struct{ held holdCount }

// streamRetryAfter is the Retry-After, in seconds, of a stream refused for want of room. A
// stream is held until its client goes, which no one can foresee; what a retry can count on
// is the common case of a client that reconnects or restarts: the stream it left is released
// as soon as its connection closes (the request's context ends). A few seconds give that
// time without holding a client back long; a key whose streams are all in use is refused
// again whenever it retries, and the message says to close one.
const streamRetryAfter = 5

// open takes a stream for holder, or answers why not: 429 if holder has its limit open,
// 503 if the server has; both with Retry-After (streamRetryAfter).
func (n *streamCount) open(holder string, l Limits) (release func(), err error) {
	release, held, ok := n.held.take(holder, l.MaxStreamsPerKey, l.MaxStreams())
	switch {
	case ok:
		return release, nil
	case held >= l.MaxStreamsPerKey:
		return nil, &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", retryAfter: streamRetryAfter,
			message: fmt.Sprintf("%s has %d event streams open, the most one key may have (gitmem serve --max-streams-per-key): close one first; one stream of GET /v1/events follows every store the key may read", holder, held)}
	default:
		return nil, &apiError{status: http.StatusServiceUnavailable, typ: "overloaded_error", retryAfter: streamRetryAfter,
			message: fmt.Sprintf("gitmem has its limit of %d event streams open (half of gitmem serve --max-conns); retry shortly", l.MaxStreams())}
	}
}

// holdCount counts what callers hold at once (event streams, pushes being checked), of each
// holder (streamHolder: a key, or a client address without keys) and of all. Its zero value
// is ready.
type holdCount struct {
	mu    sync.Mutex // guards the following
	all   int
	byKey map[string]int
}

// take takes one for holder if it holds fewer than perKey and all holders fewer than total
// (0: no bound); else it answers how many holder holds, and false.
func (n *holdCount) take(holder string, perKey, total int) (release func(), held int, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if held = n.byKey[holder]; held >= perKey || total > 0 && n.all >= total {
		return nil, held, false
	}
	if n.byKey == nil {
		n.byKey = map[string]int{}
	}
	n.all++
	n.byKey[holder]++
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.all--
		if n.byKey[holder]--; n.byKey[holder] <= 0 {
			delete(n.byKey, holder)
		}
	}, held, true
}

// streamHolder is whom a stream counts against: the caller's key, or without a key the
// client's address.
func streamHolder(c echo.Context) string {
	if cl := callerOf(c); cl.key != nil {
		return "key " + cl.key.ID
	}
	return "client " + c.RealIP()
}

// HeartbeatEvery is how often an idle stream sends a comment, so that proxies keep it open.
var HeartbeatEvery = 15 * time.Second

// eventJSON is a version's event data, without content.
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

// storeEventJSON is the event data of a change of the store's metadata.
type storeEventJSON struct {
	Type          string    `json:"type"`
	MemoryStoreID string    `json:"memory_store_id"`
	ProposalID    string    `json:"proposal_id,omitempty"` // a step of a proposal's review
	StoreChangeID string    `json:"store_change_id"`
	Operation     string    `json:"operation"`
	CreatedBy     actorJSON `json:"created_by"`
	CreatedAt     string    `json:"created_at"`
	SessionID     string    `json:"session_id,omitempty"`
	Commit        string    `json:"commit"`
}

// EventPayload is a change's event: its type (memory.created, memory.modified, memory.deleted,
// memory.redacted for a version whose content was redacted since; store.created,
// store.updated, store.archived; proposal.opened, proposal.approved, proposal.rejected) and
// its data. The webhooks send the same.
func EventPayload(ch gitstore.Event) (typ string, data []byte, err error) {
	if st := ch.Store; st != nil {
		typ = "store." + st.Operation
		if st.ProposalID != "" {
			typ = "proposal." + st.Operation
		}
		data, err = json.Marshal(storeEventJSON{Type: typ, MemoryStoreID: st.StoreID, ProposalID: st.ProposalID, StoreChangeID: st.ID,
			Operation: st.Operation, CreatedBy: toActor(st.CreatedBy), CreatedAt: wireTime(st.CreatedAt),
			SessionID: st.CreatedBy.SessionID(), Commit: st.Commit})
		return typ, data, err
	}
	v := ch.Version
	typ = "memory." + string(v.Operation)
	if v.RedactedAt != nil {
		typ = "memory.redacted"
	}
	e := eventJSON{Type: typ, MemoryStoreID: v.StoreID, MemoryID: v.MemoryID, MemoryVersionID: v.ID,
		Operation: string(v.Operation), CreatedBy: toActor(v.CreatedBy), CreatedAt: wireTime(v.CreatedAt),
		SessionID: v.CreatedBy.SessionID(), Commit: v.Commit}
	if v.Path != "" {
		e.Path = &v.Path
	}
	data, err = json.Marshal(e)
	return typ, data, err
}

func (s *Server) eventRoutes(g *echo.Group) {
	g.GET("/memory_stores/:store/events", s.storeEvents)
	g.GET("/events", s.allEvents)
}

// isStream tells whether a request is for an event stream, which limitRequests does not
// count nor bound in time.
func isStream(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/v1/events" ||
		strings.HasPrefix(r.URL.Path, "/v1/memory_stores/") && strings.HasSuffix(r.URL.Path, "/events"))
}

// A feed is one store's changes read by a stream, and how far the stream got in it.
type feed struct {
	st     *gitstore.Store
	cursor string
	moved  <-chan struct{} // closed when the store moves after the last read
	dirty  bool            // the store moved: read it
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
	if cursor != "" && !gitstore.IsCursor(cursor) {
		return badRequest("Last-Event-ID %q is not an event id (a memver_ or storechg_ id)", cursor)
	}
	feeds := []*feed{{st: st, cursor: cursor}}
	return s.stream(c, "gitmem events of "+st.ID(), feeds, nil, func(f *feed) string { return f.cursor })
}

// allEvents streams the changes of every store the key may read, and of the stores made
// while it runs. An event's id is the cursors of all the stores, so that a client resumes
// every store where it was with one Last-Event-ID.
func (s *Server) allEvents(c echo.Context) error {
	cl := callerOf(c)
	r := c.Request()
	ctx := r.Context()
	cursors := map[string]string{}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		var err error
		if cursors, err = decodeCursors(last); err != nil {
			return err
		}
	}
	var since *time.Time
	if after := c.QueryParam("after"); after != "" && r.Header.Get("Last-Event-ID") == "" {
		if strings.HasPrefix(after, gitstore.CursorsPrefix) {
			var err error
			if cursors, err = decodeCursors(after); err != nil {
				return err
			}
		} else if t, err := gitstore.ParseTime(after, time.Now()); err != nil {
			return badRequest("after %q must be an event id of /v1/events (%s...) or %s", after, gitstore.CursorsPrefix, gitstore.TimeFormHint)
		} else {
			since = &t
		}
	}
	known := map[string]bool{}
	var feeds []*feed
	// refresh adds the stores made since, and a store that a key limited to it may read.
	refresh := func() ([]*feed, error) {
		var ids []string
		if cl.key != nil && cl.key.StoreID != "" {
			ids = []string{cl.key.StoreID}
		} else {
			var err error
			if ids, err = s.data.Layout().StoreIDs(); err != nil {
				return nil, err
			}
		}
		var added []*feed
		for _, id := range ids {
			if known[id] {
				continue
			}
			st, err := s.data.Store(ctx, id)
			if err != nil {
				return nil, err
			}
			f := &feed{st: st, cursor: cursors[id]}
			if since != nil && f.cursor == "" {
				if f.cursor, err = st.EventBefore(ctx, *since); err != nil {
					return nil, err
				}
			}
			known[id] = true
			added = append(added, f)
		}
		feeds = append(feeds, added...)
		return added, nil
	}
	if _, err := refresh(); err != nil {
		return err
	}
	id := func(*feed) string { return encodeCursors(feeds) }
	return s.stream(c, "gitmem events of every store", feeds, refresh, id)
}

// encodeCursors is the id of an event of /v1/events: each store's cursor.
func encodeCursors(feeds []*feed) string {
	m := make(map[string]string, len(feeds))
	for _, f := range feeds {
		if f.cursor != "" {
			m[f.st.ID()] = f.cursor
		}
	}
	return gitstore.EncodeCursors(m)
}

func decodeCursors(id string) (map[string]string, error) {
	m, ok := gitstore.DecodeCursors(id)
	if !ok {
		return nil, badRequest("Last-Event-ID %q is not an event id of /v1/events (%s...)", clip(id, 40), gitstore.CursorsPrefix)
	}
	return m, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// stream sends the changes of feeds as server-sent events until the client goes, the server
// stops or a cursor is gone; refresh, if not nil, is asked for feeds to add whenever a store
// is made (or deleted). id is the id of the event just read from a feed. Only the feeds
// whose store moved are read again: a write to one store costs a stream over many stores
// one catalog read, not one per store.
func (s *Server) stream(c echo.Context, banner string, feeds []*feed, refresh func() ([]*feed, error), id func(*feed) string) error {
	release, err := s.streams.open(streamHolder(c), s.opts.Limits)
	if err != nil {
		return err
	}
	defer release()
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
	if err := send(": %s\n\n", banner); err != nil {
		return nil
	}
	// Where the stream starts, as an id without an event: a client that drops before the
	// first event reconnects from there (?after=TIME was resolved once, here).
	for _, f := range feeds {
		if f.cursor != "" {
			if err := send("id: %s\n\n", id(f)); err != nil {
				return nil
			}
			break
		}
	}
	ctx := c.Request().Context()
	beat := time.NewTicker(HeartbeatEvery)
	defer beat.Stop()
	var newStores <-chan struct{} // nil, and never ready, for one store's stream
	if refresh != nil {
		newStores = s.data.StoresChanged()
	}
	for _, f := range feeds {
		f.dirty = true
	}
	cases := make([]reflect.SelectCase, 0, len(feeds)+4)
	for {
		// Read the feeds whose store moved (all of them at first), each after taking its
		// next signal, so that no change falls between the read and the wait.
		for _, f := range feeds {
			if !f.dirty {
				continue
			}
			f.dirty, f.moved = false, f.st.Moved()
			for more := true; more; {
				chs, m, err := f.st.EventsAfter(ctx, f.cursor, eventBatch)
				if errors.Is(err, gitstore.ErrCursorGone) {
					// A forced push replaced the history the cursor was in: say where to restart.
					data, _ := json.Marshal(map[string]string{"type": "error", "error": "cursor_gone", "memory_store_id": f.st.ID(),
						"message": fmt.Sprintf("event %s is not in the history of store %s any more (its history was replaced); reconnect with ?after=TIME, or without a cursor for every event", f.cursor, f.st.ID())})
					send("event: error\ndata: %s\n\n", data)
					return nil
				}
				if err != nil {
					if ctx.Err() == nil {
						s.log.Warn("event stream", "store", f.st.ID(), "err", err)
					}
					return nil
				}
				for _, ch := range chs {
					typ, data, err := EventPayload(ch)
					if err != nil {
						return err
					}
					f.cursor = ch.ID()
					if err := send("id: %s\nevent: %s\ndata: %s\n\n", id(f), typ, data); err != nil {
						return nil
					}
				}
				more = m
			}
		}
		// The wait: each feed's store moving, then the fixed cases.
		cases = cases[:0]
		for _, f := range feeds {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(f.moved)})
		}
		fixed := len(cases)
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(beat.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.closing)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(newStores)})
		i, _, _ := reflect.Select(cases)
		switch i - fixed {
		case 0:
			if err := send(": heartbeat\n\n"); err != nil {
				return nil
			}
		case 1, 2:
			return nil
		case 3:
			newStores = s.data.StoresChanged()
			added, err := refresh()
			if err != nil {
				s.log.Warn("event stream: list the stores", "err", err)
			}
			for _, f := range added {
				f.dirty = true
			}
			feeds = append(feeds, added...)
		default:
			feeds[i].dirty = true
		}
	}
}

// cursorOf reads ?after=: an event id, or a time in the forms of ?at= (the stream then
// starts with the first change made at or after it).
func (s *Server) cursorOf(ctx context.Context, st *gitstore.Store, after string) (string, error) {
	if gitstore.IsCursor(after) {
		return after, nil
	}
	t, err := gitstore.ParseTime(after, time.Now())
	if err != nil {
		return "", badRequest("after %q must be an event id (memver_... or storechg_...) or %s", after, gitstore.TimeFormHint)
	}
	return st.EventBefore(ctx, t)
}
