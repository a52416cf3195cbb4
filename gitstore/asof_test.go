package gitstore

import (
	"context"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stepClock is a clock that moves on by a few milliseconds each time it is read, so that
// every version has its own time and the tests know the times between them.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(3 * time.Millisecond)
	return c.t
}

func (c *stepClock) last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// pointInTime is the model's state after one step, and where the store was then.
type pointInTime struct {
	time   time.Time // the clock after the step: no version of the next step is this old
	commit string
	mems   map[string]modelMem // live memories by id
}

func (p pointInTime) model() *model {
	m := newModel()
	for id, mem := range p.mems {
		mem := mem
		m.mems[id] = &mem
		m.byPath[mem.path] = id
	}
	return m
}

// TestAsOfModel makes a random history through the store API, keeps the model's state after
// every step, and then reads the store as of many points of that history, by time and by
// commit, checking each against the model's state then.
func TestAsOfModel(t *testing.T) {
	ctx := context.Background()
	clock := &stepClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	d := newTestDataDir(t, Options{Clock: clock.now, MaxPacks: 4})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "asof", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	m := newModel()
	everID := map[string]bool{}
	points := []pointInTime{{time: clock.last(), commit: s.Head(), mems: map[string]modelMem{}}}
	steps := 400
	if testing.Short() {
		steps = 150
	}
	for i := 0; i < steps; i++ {
		step(t, ctx, rng, s, m, i)
		p := pointInTime{time: clock.last(), commit: s.Head(), mems: map[string]modelMem{}}
		for id, mem := range m.mems {
			p.mems[id] = *mem
			everID[id] = true
		}
		points = append(points, p)
	}

	check := func(what string, snap *Snapshot, p pointInTime) {
		t.Helper()
		for id, want := range p.mems {
			got, err := snap.Get(ctx, id, true)
			if err != nil {
				t.Fatalf("%s: get %s (%s): %v", what, id, want.path, err)
			}
			if got.Path != want.path || *got.Content != want.content || got.VersionID != want.version ||
				got.ContentSHA256 != sha256Hex(want.content) || got.SizeBytes != len(want.content) {
				t.Fatalf("%s: memory %s: got %+v %q, want %+v", what, id, got, *got.Content, want)
			}
			byPath, err := snap.GetByPath(ctx, want.path, false)
			if err != nil || byPath.ID != id || byPath.VersionID != want.version || byPath.Content != nil {
				t.Fatalf("%s: get by path %s: %+v, %v; want memory %s", what, want.path, byPath, err, id)
			}
		}
		for id := range everID {
			if _, live := p.mems[id]; !live {
				if _, err := snap.Get(ctx, id, false); !IsKind(err, KindNotFound) {
					t.Fatalf("%s: get %s, not live then: %v, want not found", what, id, err)
				}
			}
		}
		pm := p.model()
		for _, path := range modelPaths {
			if _, live := pm.byPath[path]; !live {
				if _, err := snap.GetByPath(ctx, path, false); !IsKind(err, KindNotFound) {
					t.Fatalf("%s: get by path %s, free then: %v, want not found", what, path, err)
				}
			}
		}
		for _, prefix := range []string{"", "/a/", "/d/", "/p/", "/p/q/", "/nothing/"} {
			for _, depth := range []int{0, 1} {
				got := listAll(t, ctx, snap, prefix, depth, 3)
				want := modelList(pm, prefix, depth)
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("%s: list %q depth %d:\n got %v\nwant %v", what, prefix, depth, got, want)
				}
			}
		}
	}

	for n := 0; n < 60; n++ {
		i := rng.Intn(len(points))
		if n == 0 {
			i = len(points) - 1
		}
		p := points[i]
		// By time: the clock after the step, or any time before the next step's first read of it.
		at := p.time
		if n%2 == 1 {
			at = at.Add(time.Duration(rng.Intn(3000)) * time.Microsecond)
		}
		snap, err := s.At(ctx, at.Format(time.RFC3339Nano))
		if err != nil {
			t.Fatalf("at %s: %v", at, err)
		}
		check("after step "+itoa(i-1)+" by time", snap, p)
		// By commit, full or abbreviated.
		hash := p.commit
		if n%3 == 0 {
			hash = strings.ToUpper(hash[:7+rng.Intn(10)])
		}
		if snap, err = s.At(ctx, hash); err != nil {
			t.Fatalf("at %s: %v", hash, err)
		}
		if snap.Commit != p.commit {
			t.Fatalf("at %s: snapshot of commit %s, want %s", hash, snap.Commit, p.commit)
		}
		check("after step "+itoa(i-1)+" by commit", snap, p)
	}

	// Before the store existed: nothing. In the future: the current state, times included.
	snap, err := s.At(ctx, "2000-01-01T00:00:00Z")
	if err != nil || snap.Commit != "" {
		t.Fatalf("at 2000: %+v, %v", snap, err)
	}
	check("before the store", snap, pointInTime{mems: map[string]modelMem{}})
	snap, err = s.AtTime(ctx, time.Now().Add(24*365*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	check("in the future", snap, points[len(points)-1])
	for id := range m.mems {
		now, err := s.Get(ctx, id, true)
		if err != nil {
			t.Fatal(err)
		}
		then, err := snap.Get(ctx, id, true)
		if err != nil {
			t.Fatal(err)
		}
		if *now.Content != *then.Content || now.CreatedAt != then.CreatedAt || now.UpdatedAt != then.UpdatedAt {
			t.Fatalf("memory %s now %+v, in the future %+v", id, now, then)
		}
		now.Content, then.Content = nil, nil
		if now != then {
			t.Fatalf("memory %s now %+v, in the future %+v", id, now, then)
		}
	}
}

func itoa(i int) string {
	if i < 0 {
		return "none"
	}
	return strconv.Itoa(i)
}

func TestAsOfErrors(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	first := mustWrite(t, s, "/x.md", "one", apiActor)
	mustWrite(t, s, "/x.md", "two", apiActor)
	for _, at := range []string{"", "last monday", "2025-13-02", "2025-01-02 10:00:00", "abc", "12345g7", "abcdef", "-1h"} {
		if _, err := s.At(ctx, at); !IsKind(err, KindInvalid) || !strings.Contains(err.Error(), "RFC 3339") {
			t.Errorf("at %q: %v, want an invalid request naming the forms", at, err)
		}
	}
	if _, err := s.At(ctx, "0000000"); !IsKind(err, KindInvalid) || !strings.Contains(err.Error(), "history") {
		t.Errorf("at an unknown commit: %v, want an invalid request", err)
	}
	snap, err := s.At(ctx, first.Version.Commit)
	if err != nil {
		t.Fatal(err)
	}
	m, err := snap.GetByPath(ctx, "/x.md", true)
	if err != nil || *m.Content != "one" || m.VersionID != first.Version.ID {
		t.Fatalf("as of the first commit: %+v, %v", m, err)
	}
	if _, err := snap.List(ctx, ListOptions{PathPrefix: "bad"}); !IsKind(err, KindInvalid) {
		t.Fatalf("list with a bad prefix: %v", err)
	}
	if _, err := snap.List(ctx, ListOptions{Limit: 5000}); !IsKind(err, KindInvalid) {
		t.Fatalf("list with a bad limit: %v", err)
	}
}

// TestParseTime: the forms of a time that people type, and what they mean.
func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 30, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-01-02T15:04:05Z": time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		"2026-11-01":           time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"today":                time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC),
		"Yesterday":            time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
		"now":                  now,
		"90m":                  now.Add(-90 * time.Minute),
		"1h":                   now.Add(-time.Hour),
		"2d":                   now.Add(-48 * time.Hour),
	} {
		if got, err := ParseTime(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "monday", "-1h", "1 h", "2026-13-01", "tomorrow"} {
		if _, err := ParseTime(in, now); !IsKind(err, KindInvalid) {
			t.Errorf("ParseTime(%q): %v, want invalid", in, err)
		}
	}
}

// TestParseUntil: the end of a span takes the forms of ParseTime, and a day means its last
// instant, so that "until today" includes today.
func TestParseUntil(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	now := time.Date(2026, 11, 24, 10, 30, 0, 0, time.UTC)
	endOf := func(y int, m time.Month, d int, loc *time.Location) time.Time {
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc).Add(-time.Nanosecond)
	}
	for _, tc := range []struct {
		in   string
		now  time.Time
		want time.Time
	}{
		{"today", now, endOf(2026, 11, 24, time.UTC)},
		{"Yesterday", now, endOf(2026, 11, 23, time.UTC)},
		{"2026-11-01", now, endOf(2026, 11, 1, time.UTC)},
		{"2026-03-29", now.In(berlin), endOf(2026, 3, 29, berlin)}, // a day of 23 hours
		{"2026-01-02T15:04:05Z", now, time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)},
		{"now", now, now},
		{"1h", now, now.Add(-time.Hour)},
	} {
		if got, err := ParseUntil(tc.in, tc.now); err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseUntil(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if got, _ := ParseUntil("today", now); !got.After(now) || !got.Before(now.Add(14*time.Hour)) {
		t.Errorf("ParseUntil(today) = %v: not later today than %v", got, now)
	}
	for _, in := range []string{"", "monday", "tomorrow"} {
		if _, err := ParseUntil(in, now); !IsKind(err, KindInvalid) {
			t.Errorf("ParseUntil(%q): %v, want invalid", in, err)
		}
	}
}
