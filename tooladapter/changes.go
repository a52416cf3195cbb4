package tooladapter

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// memory_changes is the event feed as a tool: what changed in the session's stores after a
// cursor or a time, read from the history as the event streams are, so that an agent whose
// only channel is its tools (an MCP client, a tool loop) learns what other agents and people
// changed. Its cursor is the one of GET /v1/events, each store's change id.

// The bounds of memory_changes.
const (
	defaultChangesLimit = 50
	maxChangesLimit     = 500
	// maxChangesWait bounds a call that waits for a change: MCP clients and proxies time a
	// tool call out after a minute or so.
	maxChangesWait = 30
	// defaultChangesSince is how far back a call without since looks.
	defaultChangesSince = 24 * time.Hour
	// maxWaiting bounds the calls that wait at once in the process: a waiting call holds
	// one of a server's requests in flight, and those are few (128 by default).
	maxWaiting = 32
)

// waiting holds a token per memory_changes call that waits.
var waiting = make(chan struct{}, maxWaiting)

// aChange is one change of a mount's store.
type aChange struct {
	mount *mount
	ev    gitstore.Event
}

func (c aChange) at() time.Time {
	if c.ev.Version != nil {
		return c.ev.Version.CreatedAt
	}
	return c.ev.Store.CreatedAt
}

func (s *Session) changes(ctx context.Context, raw []byte) (string, error) {
	in, err := parseInput(ChangesTool, raw)
	if err != nil {
		return "", err
	}
	since, err := in.optStr("since", "")
	if err != nil {
		return "", err
	}
	limit, err := in.optInt("limit", defaultChangesLimit)
	if err != nil {
		return "", err
	}
	wait, err := in.optInt("wait_seconds", 0)
	if err != nil {
		return "", err
	}
	if limit < 1 || limit > maxChangesLimit {
		return "", toolErrorf("limit must be between 1 and %d, got %d", maxChangesLimit, limit)
	}
	if wait < 0 || wait > maxChangesWait {
		return "", toolErrorf("wait_seconds must be between 0 and %d, got %d", maxChangesWait, wait)
	}
	if at := s.mounts[0].at; at != "" {
		return "", toolErrorf("This session reads the memory as it was at %s; nothing changes in it", at)
	}
	cursors, from, err := s.changeCursors(ctx, since)
	if err != nil {
		return "", err
	}
	busy := false
	if wait > 0 {
		select {
		case waiting <- struct{}{}:
			defer func() { <-waiting }()
		default:
			// Too many calls wait already: answer at once, and say why.
			wait, busy = 0, true
		}
	}
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		// Take each store's next signal before reading, so that a change made between the
		// read and the wait still wakes the wait.
		moved := make([]<-chan struct{}, len(s.mounts))
		for i := range s.mounts {
			moved[i] = s.mounts[i].store().Moved()
		}
		chs, more, err := s.readChanges(ctx, cursors, limit)
		if err != nil {
			return "", err
		}
		if len(chs) > 0 || !waitMoved(ctx, s.stop, moved, deadline) {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			out := s.describeChanges(chs, more, from, wait, cursors)
			if busy && len(chs) == 0 {
				out = fmt.Sprintf("(Too many calls are waiting for changes on this server; this one did not wait. Call again in a few seconds.)\n%s", out)
			}
			return out, nil
		}
	}
}

// changeCursors reads since: a cursor of an earlier answer, a time, or nothing (the last
// day). It returns each store's cursor ("" for its first change) and since as the answer
// says it.
func (s *Session) changeCursors(ctx context.Context, since string) (map[string]string, string, error) {
	if strings.HasPrefix(since, gitstore.CursorsPrefix) {
		m, ok := gitstore.DecodeCursors(since)
		if !ok {
			return nil, "", toolErrorf("since %q is not a cursor that memory_changes answered; pass the cursor line of its last answer as it is, or a time", clip(since, 40))
		}
		// A store that the cursor does not name had no change when it was made.
		return m, "the cursor", nil
	}
	t := time.Now().Add(-defaultChangesSince)
	from := "the last 24 hours"
	if since != "" {
		var err error
		if t, err = gitstore.ParseTime(since, time.Now()); err != nil {
			return nil, "", toolErrorf("since %q must be the cursor of an earlier memory_changes answer or %s", clip(since, 40), gitstore.TimeFormHint)
		}
		from = t.UTC().Format(time.RFC3339)
	}
	m := map[string]string{}
	for _, mt := range s.mounts {
		c, err := mt.store().EventBefore(ctx, t)
		if err != nil {
			return nil, "", err
		}
		if c != "" {
			m[mt.store().ID()] = c
		}
	}
	return m, from, nil
}

// readChanges reads at most limit changes after cursors, merged across the stores by time
// (each store's in its commit order), and moves cursors past them. more tells whether
// changes are left.
func (s *Session) readChanges(ctx context.Context, cursors map[string]string, limit int) ([]aChange, bool, error) {
	queues := make([][]aChange, len(s.mounts))
	more := false
	for i := range s.mounts {
		m := &s.mounts[i]
		evs, left, err := m.store().EventsAfter(ctx, cursors[m.store().ID()], limit)
		if errors.Is(err, gitstore.ErrCursorGone) {
			return nil, false, toolErrorf("The cursor's place in the memory store %s is no longer in its history (the history was rewritten); call memory_changes with since set to a time, such as 1h", m.describe())
		}
		if err != nil {
			return nil, false, err
		}
		more = more || left
		for _, ev := range evs {
			queues[i] = append(queues[i], aChange{mount: m, ev: ev})
		}
	}
	var out []aChange
	for len(out) < limit {
		next := -1
		for i, q := range queues {
			if len(q) > 0 && (next < 0 || q[0].at().Before(queues[next][0].at())) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		c := queues[next][0]
		queues[next] = queues[next][1:]
		cursors[c.mount.store().ID()] = c.ev.ID()
		out = append(out, c)
	}
	for _, q := range queues {
		more = more || len(q) > 0
	}
	return out, more, nil
}

// waitMoved waits until one of the stores moves (true), or until the deadline, the end of
// ctx or stop (false).
func waitMoved(ctx context.Context, stop <-chan struct{}, moved []<-chan struct{}, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stop)}, // a nil stop is never ready
	}
	for _, ch := range moved {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, _, _ := reflect.Select(cases)
	return i >= 3
}

// describeChanges is memory_changes' answer: one line per change, oldest first, then the
// cursor to pass next time.
func (s *Session) describeChanges(chs []aChange, more bool, from string, wait int, cursors map[string]string) string {
	var b strings.Builder
	switch {
	case len(chs) == 0 && wait > 0:
		fmt.Fprintf(&b, "No changes in your memory since %s, also after waiting %d seconds.\n", from, wait)
	case len(chs) == 0:
		fmt.Fprintf(&b, "No changes in your memory since %s.\n", from)
	default:
		fmt.Fprintf(&b, "Changes in your memory since %s, oldest first:\n", from)
	}
	for _, c := range chs {
		fmt.Fprintf(&b, "%s %s by %s\n", c.at().UTC().Format(time.RFC3339), s.changeWhat(c), s.actorName(c.actor()))
	}
	if more {
		b.WriteString("More changes follow: call memory_changes again with since set to this cursor.\n")
	} else {
		b.WriteString("To see what changes next, call memory_changes with since set to this cursor.\n")
	}
	fmt.Fprintf(&b, "cursor: %s", gitstore.EncodeCursors(cursors))
	return b.String()
}

func (c aChange) actor() gitstore.Actor {
	if c.ev.Version != nil {
		return c.ev.Version.CreatedBy
	}
	return c.ev.Store.CreatedBy
}

// changeWhat says what a change did, with the path as the tools show it.
func (s *Session) changeWhat(c aChange) string {
	if st := c.ev.Store; st != nil {
		what := "was " + st.Operation
		if st.Operation == "updated" {
			what = "had its name, description or settings changed"
		}
		return fmt.Sprintf("the memory store %s at %s/ %s", c.mount.describe(), c.mount.root(), what)
	}
	v := c.ev.Version
	if v.RedactedAt != nil {
		return "a version of a memory was redacted (its content is gone from the history)"
	}
	return fmt.Sprintf("%s %s", v.Operation, c.mount.shownPath(v.Path))
}

// actorName names who made a change; the session's own changes say so.
func (s *Session) actorName(a gitstore.Actor) string {
	name := a.ID
	switch {
	case a.Type == gitstore.UserActor && a.Name != "":
		name = a.Name
	case a.Type == gitstore.SessionActor:
		name = "session " + a.ID
	case a.Type == gitstore.APIActor:
		name = "API key " + a.ID
	}
	if a.Type == s.actor.Type && a.ID == s.actor.ID {
		name += " (you)"
	}
	return name
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
