package gitsync

import (
	"context"
	"log/slog"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// Loop syncs the stores of a data directory with their remotes while a server runs: a
// while after writes (once main has been still for AfterWrite, so a burst of writes is
// one sync, and at the latest 5 x AfterWrite after the first write that the remote lacks,
// so a steady stream of writes still syncs), on an interval, and after a failure not
// before the backoff has passed.
type Loop struct {
	Syncer *Syncer
	Data   *gitstore.DataDir
	// Interval is how often each remote is synced even without writes; 0 turns that off.
	Interval time.Duration
	// AfterWrite is how long main must be still after a write before the store syncs;
	// 0 turns syncing after writes off.
	AfterWrite time.Duration
	// Timeout bounds one sync with one remote (default 2 minutes).
	Timeout time.Duration
	Log     *slog.Logger
}

// poll is how often the loop looks at the stores' heads and the clock.
const poll = 200 * time.Millisecond

// Run syncs until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	if l.Interval <= 0 && l.AfterWrite <= 0 {
		return
	}
	if l.Log == nil {
		l.Log = slog.Default()
	}
	if l.Timeout <= 0 {
		l.Timeout = 2 * time.Minute
	}
	changed := map[string]headSeen{}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		l.round(ctx, changed)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// headSeen is a store's main as the loop last saw it, and since when.
type headSeen struct {
	head  string
	since time.Time
	first time.Time // of the changes since the last sync that succeeded
}

// round syncs every remote that is due.
func (l *Loop) round(ctx context.Context, seen map[string]headSeen) {
	stores, err := StoresWithRemotes(l.Syncer.DataDir)
	if err != nil {
		l.Log.Error("sync: list remotes", "err", err)
		return
	}
	for id := range stores {
		if ctx.Err() != nil {
			return
		}
		s, err := l.Data.Store(ctx, id)
		if err != nil {
			continue // deleted meanwhile
		}
		now := l.Syncer.now()
		head := s.Head()
		if h := seen[id]; h.head != head {
			if h.first.IsZero() {
				h.first = now
			}
			h.head, h.since = head, now
			seen[id] = h
		}
		remotes, err := Remotes(l.Syncer.DataDir, id)
		if err != nil {
			l.Log.Error("sync: read remotes", "store", id, "err", err)
			continue
		}
		states, err := States(l.Syncer.DataDir, id)
		if err != nil {
			l.Log.Error("sync: read sync state", "store", id, "err", err)
			continue
		}
		for _, r := range remotes {
			st := states[r.Name]
			if now.Before(st.NextTry) {
				continue // backing off
			}
			h := seen[id]
			written := l.AfterWrite > 0 && head != st.RemoteHead &&
				(now.Sub(h.since) >= l.AfterWrite || now.Sub(h.first) >= 5*l.AfterWrite)
			interval := l.Interval > 0 && now.Sub(st.LastTry) >= l.Interval
			if !written && !interval {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, l.Timeout)
			res, err := l.Syncer.Sync(sctx, s, r)
			cancel()
			h.first = time.Time{}
			seen[id] = h
			if err != nil {
				if ctx.Err() == nil {
					l.Log.Warn("sync failed", "store", id, "remote", r.Name, "err", err)
				}
				continue
			}
			lvl := slog.LevelDebug
			if res.Fetched > 0 || res.Pushed {
				lvl = slog.LevelInfo
			}
			l.Log.Log(ctx, lvl, "synced", "store", id, "remote", r.Name, "what", res.Summary())
			for _, c := range res.Conflicts {
				l.Log.Warn("sync conflict", "store", id, "remote", r.Name, "path", c.Path, "ours_at", c.CopyPath)
			}
		}
	}
}
