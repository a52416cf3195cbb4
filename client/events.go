package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Event is one event of a store's event stream (GET /v1/memory_stores/{id}/events).
type Event struct {
	ID   string // the cursor to resume after it
	Type string // memory.created, ..., store.updated, ...
	Data json.RawMessage
	EventData
}

// EventData is what callers filter events by, read from the event's data.
type EventData struct {
	StoreID   string `json:"memory_store_id"`
	Path      string `json:"path"`
	SessionID string `json:"session_id"`
	// CreatedBy is the actor: its type, its id under the field its type names (user_id,
	// api_key_id, session_id, ...), its name where known.
	CreatedBy map[string]string `json:"created_by"`
}

// ErrCursorGone is the error of Events when the server no longer finds the cursor in the
// store's history (a forced push replaced it).
var ErrCursorGone = errors.New("the event cursor is not in the store's history any more")

// maxEventLine bounds one line of the stream: an event's data is a version's metadata.
const maxEventLine = 1 << 20

// Events follows the store's event stream after the event with id after ("" for every
// event, "now" for those from now on), calling fn for each, until ctx ends (then it
// returns nil) or fn fails. opened, if not nil, is called once the server has answered the
// first connection: from then on nothing is missed. A stream that drops (the server
// restarted, the network failed) is opened again from the last event seen, after a pause; a
// refusal (no key, no store) ends it with the error.
func (s *Store) Events(ctx context.Context, after string, opened func(), fn func(Event) error) error {
	for pause := time.Second; ; {
		err := s.follow(ctx, &after, &opened, fn)
		if ctx.Err() != nil {
			return nil
		}
		var fnErr fnError
		if errors.As(err, &fnErr) {
			return fnErr.err
		}
		if err != nil && !errors.Is(err, ErrUnreachable) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errDropped) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
}

type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

var errDropped = errors.New("the event stream ended")

// follow reads one connection of the stream, moving *after along.
func (s *Store) follow(ctx context.Context, after *string, opened *func(), fn func(Event) error) error {
	c := s.c
	u := c.base + s.path("events")
	if *after == "now" {
		u += "?after=now" // the server answers where that is with an id before any event
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if *after != "" && *after != "now" {
		req.Header.Set("Last-Event-ID", *after)
	}
	if c.key != "" {
		req.Header.Set("x-api-key", c.key)
	}
	req.Header.Set("Accept", "text/event-stream")
	// The stream lasts: no client timeout, only ctx.
	resp, err := (&http.Client{Transport: c.http.Transport}).Do(req)
	if err != nil {
		return &unreachableError{c.base, err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		return c.answerError(resp.StatusCode, raw)
	}
	if *opened != nil {
		(*opened)()
		*opened = nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if ev.Type == "error" {
				var e struct{ Message string }
				json.Unmarshal(ev.Data, &e)
				return fmt.Errorf("%w: %s", ErrCursorGone, e.Message)
			}
			if ev.Type != "" {
				if err := json.Unmarshal(ev.Data, &ev.EventData); err != nil {
					return fmt.Errorf("gitmem server %s: an event that is not JSON: %w", c.base, err)
				}
				if err := fn(ev); err != nil {
					return fnError{err}
				}
			}
			if ev.ID != "" {
				*after = ev.ID // also from an id without an event: where the stream starts
			}
			ev = Event{}
		case field == "id":
			ev.ID = value
		case field == "event":
			ev.Type = value
		case field == "data":
			ev.Data = append(ev.Data, value...)
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("%w: %w", errDropped, err)
	}
	return errDropped
}
