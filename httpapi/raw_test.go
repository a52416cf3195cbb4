package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// rawRequest sends a request with net/http and returns the status and body. A body goes as
// application/json unless header says otherwise.
func rawRequest(t *testing.T, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	status, b, _ := rawExchange(t, method, url, body, header)
	return status, b
}

// rawExchange is rawRequest, with the answer's header too.
func rawExchange(t *testing.T, method, url, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("request-id") == "" {
		t.Errorf("%s %s: no request-id header", method, url)
	}
	return resp.StatusCode, string(b), resp.Header
}

func keysOf(t *testing.T, body string) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestExactJSON checks the wire shapes field by field: every field present, null where the
// SDKs expect null.
func TestExactJSON(t *testing.T) {
	ts := startServer(t, Options{})
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores?beta=true", `{"name":"n"}`, nil)
	if got, want := keysOf(t, body), []string{"archived_at", "created_at", "description", "head", "id", "metadata", "name", "policy", "type", "updated_at", "usage"}; !reflect.DeepEqual(got, want) {
		t.Errorf("memory_store fields %v, want %v", got, want)
	}
	var store struct{ ID string }
	json.Unmarshal([]byte(body), &store)
	if !strings.Contains(body, `"archived_at":null`) || !strings.Contains(body, `"metadata":{}`) || !strings.Contains(body, `"description":""`) {
		t.Errorf("memory_store: %s", body)
	}
	base := ts.url + "/v1/memory_stores/" + store.ID
	status, body := rawRequest(t, "POST", base+"/memories", `{"path":"/a/b.md","content":"hi"}`, map[string]string{"anthropic-beta": "managed-agents-2026-04-01"})
	if status != 200 {
		t.Fatalf("create memory: %d %s", status, body)
	}
	if got, want := keysOf(t, body), []string{"content", "content_sha256", "content_size_bytes", "created_at", "id", "memory_store_id", "memory_version_id", "path", "size_bytes", "type", "updated_at"}; !reflect.DeepEqual(got, want) {
		t.Errorf("memory fields %v, want %v", got, want)
	}
	if !strings.Contains(body, `"content":null`) || !strings.Contains(body, `"content_size_bytes":2`) {
		t.Errorf("basic memory: %s", body)
	}
	var m struct{ ID string }
	json.Unmarshal([]byte(body), &m)
	_, body = rawRequest(t, "GET", base+"/memories?depth=1", "", nil)
	if body != `{"data":[{"type":"memory_prefix","path":"/a/"}],"next_page":null}`+"\n" {
		t.Errorf("depth=1 page: %s", body)
	}
	_, body = rawRequest(t, "DELETE", base+"/memories/"+m.ID, "", nil)
	if body != `{"type":"memory_deleted","id":"`+m.ID+`"}`+"\n" {
		t.Errorf("memory tombstone: %s", body)
	}
	_, body = rawRequest(t, "GET", base+"/memory_versions?view=basic&order=desc&order_by=created_at", "", nil)
	var vp struct{ Data []map[string]any }
	json.Unmarshal([]byte(body), &vp)
	if len(vp.Data) != 2 {
		t.Fatalf("versions: %s", body)
	}
	del, created := vp.Data[0], vp.Data[1]
	want := []string{"content", "content_sha256", "content_size_bytes", "created_at", "created_by", "id", "memory_id", "memory_store_id", "operation", "path", "redacted_at", "redacted_by", "type"}
	for _, v := range vp.Data {
		var got []string
		for k := range v {
			got = append(got, k)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("memory_version fields %v, want %v", got, want)
		}
	}
	if del["operation"] != "deleted" || del["content"] != nil || del["content_sha256"] != nil || del["content_size_bytes"] != nil || del["path"] != "/a/b.md" {
		t.Errorf("deleted version: %v", del)
	}
	if created["content"] != nil || created["content_size_bytes"] != float64(2) || created["redacted_at"] != nil {
		t.Errorf("created version (basic): %v", created)
	}
	if by, _ := created["created_by"].(map[string]any); by["type"] != "user_actor" || by["user_id"] != "user_local" {
		t.Errorf("created_by: %v", created["created_by"])
	}
}

// TestBadRequests checks that bad input gets a 400 (or 413) naming what was wrong.
func TestBadRequests(t *testing.T) {
	ts := startServer(t, Options{})
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"n"}`, nil)
	var store struct{ ID string }
	json.Unmarshal([]byte(body), &store)
	base := ts.url + "/v1/memory_stores/" + store.ID
	for _, tc := range []struct {
		method, url, body string
		status            int
		want              string
	}{
		{"POST", ts.url + "/v1/memory_stores", `{}`, 400, `field \"name\" is required`},
		{"POST", ts.url + "/v1/memory_stores", `{"name":5}`, 400, `field \"name\" must be a string`},
		{"POST", ts.url + "/v1/memory_stores", `[1]`, 400, "must be a JSON object"},
		{"POST", ts.url + "/v1/memory_stores", `{"name":"n","colour":"red"}`, 400, `unknown field \"colour\"`},
		{"GET", ts.url + "/v1/memory_stores?limit=0", ``, 400, "limit must be a whole number from 1 to 100"},
		{"GET", ts.url + "/v1/memory_stores?include_archived=maybe", ``, 400, "include_archived must be true or false"},
		{"GET", ts.url + "/v1/memory_stores?created_at[gte]=yesterday", ``, 400, "created_at[gte] must be an RFC 3339 time"},
		{"POST", base + "/memories", `{"path":"/a.md"}`, 400, `field \"content\" is required`},
		{"POST", base + "/memories", `{"path":"/a/../b.md","content":""}`, 400, `\"..\" segment`},
		{"POST", base + "/memories", `{"path":"/a.md","content":"","precondition":{"type":"exists"}}`, 400, "precondition.type must be content_sha256 or not_exists"},
		{"POST", base + "/memories", `{"path":"/a.md","content":"` + strings.Repeat("x", 102401) + `"}`, 400, "the limit is 102400 bytes"},
		{"POST", base + "/memories", `{"path":"/a.md","content":"` + strings.Repeat("x", 1100000) + `"}`, 413, "request_too_large"},
		{"GET", base + "/memories?path_prefix=/notes", ``, 400, "must end with /"},
		{"GET", base + "/memories?view=fancy", ``, 400, "view must be basic or full"},
		{"GET", base + "/memories?depth=-1", ``, 400, "depth must be a whole number"},
		{"GET", base + "/memories?page=bogus", ``, 400, "not a cursor"},
		{"DELETE", base + "/memories/mem_01XYZ?expected_content_sha256=abc", ``, 400, "expected_content_sha256 must be 64 lowercase hex"},
		{"GET", base + "/memory_versions?operation=renamed", ``, 400, "operation must be created, modified or deleted"},
		{"GET", base + "/memories/mem_01NOPE", ``, 404, "not_found_error"},
		{"GET", base + "/memory_versions/memver_01NOPE", ``, 404, "not_found_error"},
		// A pasted URL with a trailing slash is told so, with the URL to use.
		{"GET", ts.url + "/v1/memory_stores/", ``, 404, "no such route: /v1/memory_stores/ ends in a slash, which no route of the API has; try /v1/memory_stores"},
		{"POST", base + "/memories/", `{"path":"/a.md","content":""}`, 404, "ends in a slash"},
		{"GET", ts.url + "/v1/memory_store", ``, 404, "no such route; the API lives under /v1/memory_stores"},
		// An empty shell variable for the store's id.
		{"GET", ts.url + "/v1/memory_stores//memories", ``, 404, "no memory store id where one belongs (an empty shell variable in the URL?)"},
	} {
		status, body := rawRequest(t, tc.method, tc.url, tc.body, nil)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.method, tc.url, status, body, tc.status, tc.want)
		}
	}
}

// TestPatchUpdate: the docs' PATCH works like the SDKs' POST.
func TestPatchUpdate(t *testing.T) {
	ts := startServer(t, Options{})
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"n"}`, nil)
	var store struct{ ID string }
	json.Unmarshal([]byte(body), &store)
	base := ts.url + "/v1/memory_stores/" + store.ID
	_, body = rawRequest(t, "POST", base+"/memories", `{"path":"/a.md","content":"one"}`, nil)
	var m struct{ ID string }
	json.Unmarshal([]byte(body), &m)
	status, body := rawRequest(t, "PATCH", base+"/memories/"+m.ID+"?view=full", `{"path":"/b.md","content":"two"}`, nil)
	if status != 200 || !strings.Contains(body, `"path":"/b.md"`) || !strings.Contains(body, `"content":"two"`) || !strings.Contains(body, `"id":"`+m.ID+`"`) {
		t.Errorf("PATCH: %d %s", status, body)
	}
}
