package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/tooladapter"
)

// watchAgent runs the task, then follows the event streams of the session's stores and runs
// again, with what changed, whenever others change them; until ctx ends (Ctrl-C). A run
// that fails is reported and the watch goes on: the next change may well fix what failed.
func watchAgent(ctx context.Context, t target, infos []gitstore.StoreInfo, sessionID string, run func(task string) error, task string, quiet time.Duration, stderr io.Writer) error {
	// The streams open before the first run, so that nothing made during it is missed; what
	// comes waits in their connections while the run goes on.
	events := make(chan client.Event, 256)
	failed := make(chan error, len(infos))
	opened := make(chan struct{}, len(infos))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	for _, info := range infos {
		go func() {
			failed <- t.srv.Store(info.ID).Events(wctx, "now", func() { opened <- struct{}{} }, func(ev client.Event) error {
				if ev.SessionID == sessionID {
					return nil // the agent's own write
				}
				select {
				case events <- ev:
				case <-wctx.Done():
				}
				return nil
			})
		}()
	}
	for range infos {
		select {
		case <-opened:
		case err := <-failed:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching the stores: %w", err)
		case <-ctx.Done():
			return nil
		}
	}
	if err := run(task); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(stderr, "gitmem agent: %v; watching all the same\n", err)
	}
	mounts := tooladapter.MountPaths(infos)
	for {
		fmt.Fprintf(stderr, "watching %s for changes by others (Ctrl-C stops)\n", storeNames(infos))
		var batch []client.Event
		select {
		case ev := <-events:
			batch = append(batch, ev)
		case err := <-failed:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching the stores: %w", err)
		case <-ctx.Done():
			fmt.Fprintln(stderr, "stopped watching")
			return nil
		}
		// Changes that come together make one run: wait until the stores are quiet.
		for more := true; more; {
			select {
			case ev := <-events:
				batch = append(batch, ev)
			case <-time.After(quiet):
				more = false
			case <-ctx.Done():
				fmt.Fprintln(stderr, "stopped watching")
				return nil
			}
		}
		fmt.Fprintf(stderr, "%d change(s) by others; running again\n", len(batch))
		if err := run(watchTask(task, batch, infos, mounts)); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(stderr, "stopped watching")
				return nil
			}
			fmt.Fprintf(stderr, "gitmem agent: %v; watching all the same\n", err)
		}
	}
}

// maxWatchLines bounds the list of changes in a run's task; the model can look at the rest.
const maxWatchLines = 100

// watchTask is the task of a run that changes woke: what changed, as the agent sees the
// paths, then the task.
func watchTask(task string, batch []client.Event, infos []gitstore.StoreInfo, mounts []string) string {
	var b strings.Builder
	b.WriteString("Since your last run, others changed the memory:\n")
	for i, ev := range batch {
		if i == maxWatchLines {
			fmt.Fprintf(&b, "- and %d more changes\n", len(batch)-i)
			break
		}
		where := ""
		for j, info := range infos {
			if info.ID == ev.StoreID {
				where = mounts[j]
			}
		}
		what := ev.Type
		if ev.Path != "" {
			what += " " + strings.TrimSuffix(where, "/") + ev.Path
		} else if where != "" {
			what += " of " + where
		}
		fmt.Fprintf(&b, "- %s by %s\n", what, actorOf(ev.CreatedBy))
	}
	b.WriteString("\nLook at what changed where it matters, then do your task again:\n\n")
	b.WriteString(task)
	return b.String()
}

// actorOf names an event's actor: its name, else its id.
func actorOf(a map[string]string) string {
	if n := a["name"]; n != "" {
		return n
	}
	for k, v := range a {
		if strings.HasSuffix(k, "_id") {
			return v
		}
	}
	return "someone"
}

func storeNames(infos []gitstore.StoreInfo) string {
	names := make([]string, len(infos))
	for i, info := range infos {
		names[i] = fmt.Sprintf("%q", info.Name)
	}
	return strings.Join(names, ", ")
}
