package gitstore

import (
	"strings"
	"time"
)

// TimeFormHint names the forms of a time that ParseTime takes, for messages and help.
const TimeFormHint = `an RFC 3339 time (2026-01-02T15:04:05Z), a date (2026-01-02), "now", "today", "yesterday", or a time ago (90m, 1h, 2d)`

// ParseTime reads a time as people type it, for the CLI's --since and --at and the API's ?at=
// and revert start: an RFC 3339 time; a date, or "today" or "yesterday", meaning
// its start in now's time zone; or a duration before now (ParseDuration's forms: 90m, 1h,
// 2d).
func ParseTime(s string, now time.Time) (time.Time, error) {
	t, _, err := parseTime(s, now)
	return t, err
}

// ParseUntil reads the end of a span of time, inclusive (the CLI's --until, the API's revert
// created_at_lte), as ParseTime,
// except that a day (a date, "today", "yesterday") means its last instant: what people mean
// by "until today" includes today's versions, as git log --until=today does.
func ParseUntil(s string, now time.Time) (time.Time, error) {
	t, day, err := parseTime(s, now)
	if err != nil || !day {
		return t, err
	}
	return t.AddDate(0, 0, 1).Add(-time.Nanosecond), nil
}

// parseTime is ParseTime, and whether s named a whole day, whose start it returns.
func parseTime(s string, now time.Time) (t time.Time, day bool, err error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, nil
	}
	midnight := func(t time.Time) time.Time {
		y, m, d := t.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
	}
	switch strings.ToLower(s) {
	case "now":
		return now, false, nil
	case "today":
		return midnight(now), true, nil
	case "yesterday":
		return midnight(now).AddDate(0, 0, -1), true, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, now.Location()); err == nil {
		return t, true, nil
	}
	if d, err := ParseDuration(s); err == nil && s != "" && s[0] >= '0' && s[0] <= '9' {
		return now.Add(-time.Duration(d)), false, nil
	}
	return time.Time{}, false, invalidf("time %q must be %s", s, TimeFormHint)
}
