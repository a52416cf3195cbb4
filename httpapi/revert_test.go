package httpapi

import (
	"strings"
	"testing"

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

// rawBody is rawRequest for a request that must succeed.
func rawBody(t *testing.T, method, url, body string, header map[string]string) string {
	t.Helper()
	status, out := rawRequest(t, method, url, body, header)
	if status != 200 {
		t.Fatalf("%s %s: %d %s", method, url, status, out)
	}
	return out
}
