package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
)

// TestRevertRoute reverts a session's changes over HTTP: a dry run, the revert, a second
// revert that finds nothing to do, and the refusals.
func TestRevertRoute(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("writer", apikeys.ReadWrite, "")
	otherKey, other, _ := ts.keys.Create("other", apikeys.ReadWrite, "")
	_, ro, _ := ts.keys.Create("reader", apikeys.ReadOnly, "")
	const session = "sesn_01HTTPREVERT0000000000000"
	w := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	o := map[string]string{"x-api-key": other, "content-type": "application/json"}
	sess := map[string]string{"x-api-key": rw, "content-type": "application/json", SessionHeader: session}
	r := map[string]string{"x-api-key": ro, "content-type": "application/json"}

	type memory struct {
		ID              string
		MemoryVersionID string `json:"memory_version_id"`
	}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"r"}`, w)
	base := ts.url + "/v1/memory_stores/" + decodeJSON[struct{ ID string }](t, body).ID
	a := decodeJSON[memory](t, rawBody(t, "POST", base+"/memories", `{"path":"/a.md","content":"a1"}`, w))
	c := decodeJSON[memory](t, rawBody(t, "POST", base+"/memories", `{"path":"/c.md","content":"c1"}`, w))
	rawBody(t, "POST", base+"/memories/"+a.ID, `{"content":"a2"}`, sess)
	b := decodeJSON[memory](t, rawBody(t, "POST", base+"/memories", `{"path":"/b.md","content":"b1"}`, sess))
	rawBody(t, "POST", base+"/memories/"+c.ID, `{"content":"c2"}`, sess)
	cLater := decodeJSON[memory](t, rawBody(t, "POST", base+"/memories/"+c.ID, `{"content":"c3"}`, o))

	type revert struct {
		Type     string
		DryRun   bool `json:"dry_run"`
		Reverted []struct {
			MemoryID        string  `json:"memory_id"`
			Path            string  `json:"path"`
			FromPath        *string `json:"from_path"`
			Action          string  `json:"action"`
			RevertedTo      *string `json:"reverted_to"`
			MemoryVersionID *string `json:"memory_version_id"`
		}
		Skipped []struct {
			MemoryID        string `json:"memory_id"`
			Path            string `json:"path"`
			Reason          string `json:"reason"`
			Message         string `json:"message"`
			BlockingVersion *struct {
				ID        string            `json:"id"`
				CreatedBy map[string]string `json:"created_by"`
				CreatedAt string            `json:"created_at"`
			} `json:"blocking_version"`
		}
		Unchanged []struct {
			MemoryID string `json:"memory_id"`
			Path     string `json:"path"`
		}
	}
	// A dry run: what would happen, nothing written.
	status, body := rawRequest(t, "POST", base+"/revert", `{"session_id":"`+session+`","dry_run":true}`, w)
	dry := decodeJSON[revert](t, body)
	if status != 200 || dry.Type != "memory_revert" || !dry.DryRun || len(dry.Reverted) != 2 || dry.Reverted[0].MemoryVersionID != nil ||
		!strings.Contains(body, `"memory_version_id":null`) {
		t.Fatalf("dry run: %d %s", status, body)
	}
	if got := rawBody(t, "GET", base+"/memories/"+b.ID, "", w); !strings.Contains(got, `"path":"/b.md"`) {
		t.Fatalf("the dry run deleted /b.md: %s", got)
	}

	// The revert, by the other key.
	status, body = rawRequest(t, "POST", base+"/revert", `{"session_id":"`+session+`","created_at_gte":"2000-01-01T00:00:00Z"}`, o)
	res := decodeJSON[revert](t, body)
	if status != 200 || res.DryRun || len(res.Reverted) != 2 || len(res.Skipped) != 1 || len(res.Unchanged) != 0 {
		t.Fatalf("revert: %d %s", status, body)
	}
	ra, rb := res.Reverted[0], res.Reverted[1]
	if ra.MemoryID != a.ID || ra.Action != "restored" || ra.RevertedTo == nil || *ra.RevertedTo != a.MemoryVersionID || ra.MemoryVersionID == nil ||
		rb.MemoryID != b.ID || rb.Action != "deleted" || rb.RevertedTo != nil || rb.FromPath == nil || *rb.FromPath != "/b.md" {
		t.Errorf("reverted: %s", body)
	}
	sk := res.Skipped[0]
	if sk.MemoryID != c.ID || sk.Reason != "changed_later" || sk.BlockingVersion == nil || sk.BlockingVersion.ID != cLater.MemoryVersionID ||
		sk.BlockingVersion.CreatedBy["api_key_id"] != otherKey.ID || sk.BlockingVersion.CreatedBy["type"] != "api_actor" {
		t.Errorf("skipped: %s", body)
	}
	if got := rawBody(t, "GET", base+"/memories/"+a.ID+"?view=full", "", w); !strings.Contains(got, `"content":"a1"`) {
		t.Errorf("a after the revert: %s", got)
	}
	v := decodeJSON[struct {
		CreatedBy map[string]string `json:"created_by"`
	}](t, rawBody(t, "GET", base+"/memory_versions/"+*ra.MemoryVersionID, "", w))
	if v.CreatedBy["api_key_id"] != otherKey.ID {
		t.Errorf("the revert's version was made by %v", v.CreatedBy)
	}
	if status, _ = rawRequest(t, "GET", base+"/memories/"+b.ID, "", w); status != 404 {
		t.Errorf("b after the revert: %d", status)
	}
	// Again: nothing left to do.
	_, body = rawRequest(t, "POST", base+"/revert", `{"session_id":"`+session+`"}`, o)
	if again := decodeJSON[revert](t, body); len(again.Reverted) != 0 || len(again.Unchanged) != 2 || len(again.Skipped) != 1 {
		t.Errorf("second revert: %s", body)
	}

	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		status     int
		typ, msg   string
	}{
		{"read_only key", `{"session_id":"` + session + `","dry_run":true}`, r, 403, "permission_error", "read_only"},
		{"neither", `{}`, w, 400, "invalid_request_error", `give exactly one of the fields "session_id" and "api_key_id"`},
		{"both", `{"session_id":"sesn_1","api_key_id":"apikey_1"}`, w, 400, "invalid_request_error", `give exactly one of the fields`},
		{"bad time", `{"api_key_id":"apikey_1","created_at_lte":"last monday"}`, w, 400, "invalid_request_error",
			`field "created_at_lte": time "last monday" must be an RFC 3339 time`},
		{"reversed range", `{"api_key_id":"apikey_1","created_at_gte":"2026-01-02T00:00:00Z","created_at_lte":"2026-01-01T00:00:00Z"}`, w, 400,
			"invalid_request_error", "the end of the range (2026-01-01T00:00:00.000Z) is before its start (2026-01-02T00:00:00.000Z)"},
		{"unknown field", `{"session_id":"sesn_1","since":"x"}`, w, 400, "invalid_request_error",
			`unknown field "since" in the request body; this request takes: api_key_id, created_at_gte, created_at_lte, dry_run, session_id`},
		{"dry_run not a bool", `{"session_id":"sesn_1","dry_run":"yes"}`, w, 400, "invalid_request_error", `field "dry_run" must be true or false`},
		{"session_id not a string", `{"session_id":1}`, w, 400, "invalid_request_error", `field "session_id" must be a string`},
	} {
		status, body := rawRequest(t, "POST", base+"/revert", tc.body, tc.hdr)
		e := decodeJSON[struct {
			Error struct{ Type, Message string }
		}](t, body)
		if status != tc.status || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
}

// TestRevertUntilADay: the revert's created_at_lte reads a day as its last instant, as the
// CLI's --until does, so a version made now is within "today" and today's date; its
// created_at_gte reads a day as its start. A bound that is no time is refused and reverts
// nothing.
func TestRevertUntilADay(t *testing.T) {
	ts := startServer(t, Options{})
	const session = "sesn_01HTTPREVERTDAY00000000000"
	w := map[string]string{"content-type": "application/json"}
	sess := map[string]string{"content-type": "application/json", SessionHeader: session}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"days"}`, w)
	base := ts.url + "/v1/memory_stores/" + decodeJSON[struct{ ID string }](t, body).ID
	m := decodeJSON[struct{ ID string }](t, rawBody(t, "POST", base+"/memories", `{"path":"/today.md","content":"made now"}`, sess))

	type revert struct {
		Reverted []struct {
			MemoryID string `json:"memory_id"`
		}
	}
	now := time.Now()
	for _, tc := range []struct {
		bounds string
		within bool
	}{
		{`"created_at_lte":"today"`, true},
		{`"created_at_lte":"TODAY"`, true},
		{`"created_at_lte":"` + now.Format(time.DateOnly) + `"`, true},
		{`"created_at_gte":"today","created_at_lte":"today"`, true},
		{`"created_at_lte":"yesterday"`, false},
		{`"created_at_lte":"` + now.AddDate(0, 0, -1).Format(time.DateOnly) + `"`, false},
		{`"created_at_gte":"` + now.AddDate(0, 0, 1).Format(time.DateOnly) + `"`, false},
	} {
		body := rawBody(t, "POST", base+"/revert", `{"session_id":"`+session+`","dry_run":true,`+tc.bounds+`}`, w)
		res := decodeJSON[revert](t, body)
		if got := len(res.Reverted) == 1 && res.Reverted[0].MemoryID == m.ID; got != tc.within {
			t.Errorf("{%s}: the version made now is within: %v, want %v\n%s", tc.bounds, got, tc.within, body)
		}
	}

	// Refusals change nothing.
	for _, tc := range []struct{ name, bounds, msg string }{
		{"no day", `"created_at_lte":"tomorrow"`, `field "created_at_lte": time "tomorrow" must be an RFC 3339 time`},
		{"no date", `"created_at_lte":"2026-02-30"`, `field "created_at_lte": time "2026-02-30" must be`},
		{"reversed", `"created_at_gte":"today","created_at_lte":"yesterday"`, "the end of the range"},
	} {
		status, body := rawRequest(t, "POST", base+"/revert", `{"session_id":"`+session+`",`+tc.bounds+`}`, w)
		e := decodeJSON[struct {
			Error struct{ Type, Message string }
		}](t, body)
		if status != 400 || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	if got := rawBody(t, "GET", base+"/memories/"+m.ID, "", w); !strings.Contains(got, `"path":"/today.md"`) {
		t.Fatalf("a refused revert changed the memory: %s", got)
	}

	// Not a dry run: today's revert deletes what the session made today.
	rawBody(t, "POST", base+"/revert", `{"session_id":"`+session+`","created_at_lte":"today"}`, w)
	if status, body := rawRequest(t, "GET", base+"/memories/"+m.ID, "", w); status != 404 {
		t.Errorf("after reverting today: %d %s", status, body)
	}
}

// rawBody is rawRequest for a request that must succeed.
func rawBody(t *testing.T, method, url, body string, header map[string]string) string {
	t.Helper()
	status, out := rawRequest(t, method, url, body, header)
	if status != 200 {
		t.Fatalf("%s %s: %d %s", method, url, status, out)
	}
	return out
}
