package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// request sends a request with an optional key and session, and returns the status and the
// decoded body. A body goes as application/json.
func request(t *testing.T, method, url, key, session, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	if session != "" {
		req.Header.Set(SessionHeader, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %q", method, url, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func TestToolRoute(t *testing.T) {
	ts := startServer(t, Options{})
	ctx := context.Background()
	st, err := ts.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "notes", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	other, err := ts.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "other", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	rw, rwSecret, err := ts.keys.Create("rw", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	_, roSecret, err := ts.keys.Create("ro", apikeys.ReadOnly, "")
	if err != nil {
		t.Fatal(err)
	}
	_, limitedSecret, err := ts.keys.Create("limited", apikeys.ReadWrite, other.ID())
	if err != nil {
		t.Fatal(err)
	}
	base := ts.url + "/v1/memory_stores/" + st.ID() + "/tools"

	status, body := request(t, "GET", base, roSecret, "", "")
	if data, _ := body["data"].([]any); status != 200 || len(data) != 8 {
		t.Errorf("GET tools: %d %v", status, body)
	}
	for _, tc := range []struct {
		name, key, session, tool, in string
		status                       int
		want                         string // content, or the error message
		isError                      bool
	}{
		{"create with a key", rwSecret, "", "memory", `{"command":"create","path":"/memories/a.md","file_text":"one"}`, 200,
			"File created successfully at: /memories/a.md", false},
		{"edit in a session", rwSecret, "sesn_abc", "memory_edit", `{"path":"/memories/a.md","old_string":"one","new_string":"two"}`, 200,
			"Edited /memories/a.md: replaced 1 occurrence. The first change, with line numbers:\n     1\ttwo", false},
		{"read with a read_only key", roSecret, "", "memory_read", `{"path":"/memories/a.md"}`, 200,
			"Here's the content of /memories/a.md with line numbers:\n     1\ttwo", false},
		{"write with a read_only key", roSecret, "", "memory", `{"command":"delete","path":"/memories/a.md"}`, 200,
			`Error: /memories/a.md is in the memory store "notes", which this session may read but not change`, true},
		{"tool error", rwSecret, "", "memory", `{"command":"view","path":"/etc"}`, 200, "Error: Path must start with /memories, got: /etc", true},
		{"body not JSON", rwSecret, "", "memory_read", `path=/memories/a.md`, 200, "Error: The input of memory_read must be a JSON object", true},
		{"unknown tool", rwSecret, "", "memory_raed", `{}`, 404,
			`there is no tool named "memory_raed"; the tools are memory, memory_list, memory_search, memory_read, memory_write, memory_edit, memory_delete and memory_changes`, false},
		{"no key", "", "", "memory_read", `{"path":"/memories/a.md"}`, 401,
			"missing API key: send it in the x-api-key header, or as Authorization: Bearer <key>", false},
		{"key of another store", limitedSecret, "", "memory_read", `{"path":"/memories/a.md"}`, 403,
			"this API key (" + mustKeyID(t, ts, "limited") + ") is limited to memory store " + other.ID(), false},
		{"bad session", rwSecret, "nope", "memory_read", `{"path":"/memories/a.md"}`, 400,
			`header x-gitmem-session-id must be a session id like sesn_abc123 (sesn_ and 1 to 128 letters, digits, _ or -), got "nope"`, false},
	} {
		status, body := request(t, "POST", base+"/"+tc.tool, tc.key, tc.session, tc.in)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d (%v)", tc.name, status, tc.status, body)
			continue
		}
		if status == 200 {
			if body["type"] != "tool_result" || body["content"] != tc.want || body["is_error"] != tc.isError {
				t.Errorf("%s: got %v, want %q (is_error %v)", tc.name, body, tc.want, tc.isError)
			}
			continue
		}
		if e, _ := body["error"].(map[string]any); e["message"] != tc.want {
			t.Errorf("%s: got %v, want message %q", tc.name, body, tc.want)
		}
	}
	vs, err := st.Versions(ctx, gitstore.VersionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs.Versions) != 2 {
		t.Fatalf("versions: %+v", vs.Versions)
	}
	if a := vs.Versions[0].CreatedBy; a.Type != gitstore.SessionActor || a.ID != "sesn_abc" || a.APIKeyID != rw.ID {
		t.Errorf("edit made by %+v", a)
	}
	if a := vs.Versions[1].CreatedBy; a.Type != gitstore.APIActor || a.ID != rw.ID {
		t.Errorf("create made by %+v", a)
	}
	// A body over the limit is refused before it reaches the tools.
	big := bytes.Repeat([]byte("x"), 2<<20)
	status, _ = request(t, "POST", base+"/memory_write", rwSecret, "", `{"path":"/memories/b","content":"`+string(big)+`"}`)
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: status %d", status)
	}
}

func mustKeyID(t *testing.T, ts *testServer, name string) string {
	t.Helper()
	keys, err := ts.keys.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == name {
			return k.ID
		}
	}
	t.Fatalf("no key %s", name)
	return ""
}

// TestLoopbackHostWithoutKeys refuses, while no key exists, requests that name another host
// than the loopback one: a page that rebinds its own name to 127.0.0.1 cannot use gitmem.
func TestLoopbackHostWithoutKeys(t *testing.T) {
	ts := startServer(t, Options{})
	for host, want := range map[string]int{"evil.example": 403, "evil.example:7437": 403, "localhost:7437": 200,
		"127.0.0.1": 200, "[::1]:7437": 200, "app.localhost": 200, "10.0.0.1": 403} {
		req, _ := http.NewRequest("GET", ts.url+"/v1/memory_stores", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}
	if _, _, err := ts.keys.Create("k", apikeys.ReadWrite, ""); err != nil {
		t.Fatal(err)
	}
	status, _ := request(t, "GET", ts.url+"/v1/memory_stores", "", "", "")
	if status != 401 {
		t.Errorf("with keys and no key sent: %d, want 401", status)
	}
}

// TestToolRouteAt views a store as it was with ?at=, and is refused a change there.
func TestToolRouteAt(t *testing.T) {
	ts := startServer(t, Options{})
	ctx := context.Background()
	st, err := ts.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "notes", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	base := ts.url + "/v1/memory_stores/" + st.ID() + "/tools/memory"
	request(t, "POST", base, "", "", `{"command":"create","path":"/memories/a.md","file_text":"one"}`)
	then := st.Head()
	request(t, "POST", base, "", "", `{"command":"str_replace","path":"/memories/a.md","old_str":"one","new_str":"two"}`)
	_, body := request(t, "POST", base+"?at="+then[:10], "", "", `{"command":"view","path":"/memories/a.md"}`)
	if body["content"] != "Here's the content of /memories/a.md with line numbers:\n     1\tone" {
		t.Errorf("view at %s: %v", then, body)
	}
	_, body = request(t, "POST", base+"?at="+then[:10], "", "", `{"command":"delete","path":"/memories/a.md"}`)
	if body["is_error"] != true || !strings.Contains(body["content"].(string), "cannot be changed: this session reads the memory store") {
		t.Errorf("delete in the past: %v", body)
	}
	status, body := request(t, "POST", base+"?at=last+week", "", "", `{"command":"view","path":"/memories"}`)
	if status != 400 {
		t.Errorf("bad at: %d %v", status, body)
	}
	if got := storeFiles(t, st)["a.md"]; got != "two" {
		t.Errorf("a.md = %q", got)
	}
}
