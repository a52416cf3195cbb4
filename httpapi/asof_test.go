package httpapi

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
)

// TestAsOfRoutes reads memories over HTTP as of times and commits: the same shapes as
// today's reads, 404 for a memory that did not exist then, 400 for a bad at.
func TestAsOfRoutes(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("writer", apikeys.ReadWrite, "")
	_, ro, _ := ts.keys.Create("reader", apikeys.ReadOnly, "")
	w := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	r := map[string]string{"x-api-key": ro}
	type memory struct {
		ID              string
		Path            string
		Content         *string
		MemoryVersionID string `json:"memory_version_id"`
		UpdatedAt       string `json:"updated_at"`
	}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"asof"}`, w)
	storeID := decodeJSON[struct{ ID string }](t, body).ID
	base := ts.url + "/v1/memory_stores/" + storeID
	write := func(method, url, body string) memory {
		t.Helper()
		time.Sleep(3 * time.Millisecond) // versions a few milliseconds apart
		status, resp := rawRequest(t, method, url, body, w)
		if status != 200 {
			t.Fatalf("%s %s: %d %s", method, url, status, resp)
		}
		return decodeJSON[memory](t, resp)
	}
	a1 := write("POST", base+"/memories", `{"path":"/notes/a.md","content":"first"}`)
	b1 := write("POST", base+"/memories", `{"path":"/notes/b.md","content":"bee"}`)
	a2 := write("POST", base+"/memories/"+a1.ID, `{"content":"second","path":"/notes/deep/a.md"}`)
	time.Sleep(3 * time.Millisecond)
	if status, resp := rawRequest(t, "DELETE", base+"/memories/"+b1.ID, "", w); status != 200 {
		t.Fatalf("delete: %d %s", status, resp)
	}
	c1 := write("POST", base+"/memories", `{"path":"/c.md","content":"sea"}`)

	get := func(path, at string) (int, string) {
		t.Helper()
		return rawRequest(t, "GET", base+path+"?at="+url.QueryEscape(at), "", r)
	}
	// As of the first write's time: a at its first version, b and c not yet.
	status, body := get("/memories/"+a1.ID, a1.UpdatedAt)
	if m := decodeJSON[memory](t, body); status != 200 || m.Path != "/notes/a.md" || *m.Content != "first" || m.MemoryVersionID != a1.MemoryVersionID {
		t.Errorf("a as of its first version: %d %s", status, body)
	}
	if status, body = get("/memories/"+c1.ID, a1.UpdatedAt); status != 404 || !strings.Contains(body, "not_found_error") {
		t.Errorf("c before it existed: %d %s", status, body)
	}
	// The shape is today's: as of now (a future time, or the head commit) answers as without at.
	st, err := ts.data.Store(context.Background(), storeID)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/memories/" + a1.ID, "/memories/" + c1.ID, "/memories?view=full", "/memories?path_prefix=/notes/&depth=1", "/memories?limit=1"} {
		_, now := rawRequest(t, "GET", base+path, "", r)
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		for _, at := range []string{"2999-01-01T00:00:00Z", st.Head(), st.Head()[:8]} {
			status, then := rawRequest(t, "GET", base+path+sep+"at="+at, "", r)
			if status != 200 || then != now {
				t.Errorf("%s at %s: %d %s\nwant %s", path, at, status, then, now)
			}
		}
	}
	// Listing as of b's creation, by time and by the commit of that version.
	v, err := st.Version(context.Background(), b1.MemoryVersionID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{b1.UpdatedAt, v.Commit, v.Commit[:7]} {
		status, body = rawRequest(t, "GET", base+"/memories?view=full&path_prefix=/notes/&at="+url.QueryEscape(at), "", r)
		type list struct {
			Data []memory
			Next *string `json:"next_page"`
		}
		l := decodeJSON[list](t, body)
		if status != 200 || len(l.Data) != 2 || l.Data[0].ID != a1.ID || *l.Data[0].Content != "first" || l.Data[1].ID != b1.ID || *l.Data[1].Content != "bee" {
			t.Errorf("list as of %s: %d %s", at, status, body)
		}
	}
	// Paging as of a time: one memory per page, cursors carried with the same at.
	at := a2.UpdatedAt
	var got []string
	for pg := ""; ; {
		_, body = rawRequest(t, "GET", base+"/memories?limit=1&at="+url.QueryEscape(at)+"&page="+url.QueryEscape(pg), "", r)
		l := decodeJSON[struct {
			Data     []memory
			NextPage *string `json:"next_page"`
		}](t, body)
		for _, m := range l.Data {
			got = append(got, m.Path)
		}
		if l.NextPage == nil || *l.NextPage == "" {
			break
		}
		pg = *l.NextPage
	}
	if strings.Join(got, " ") != "/notes/b.md /notes/deep/a.md" {
		t.Errorf("pages as of the rename: %v", got)
	}
	// Before the store existed: nothing.
	status, body = get("/memories", "2001-01-01T00:00:00Z")
	if status != 200 || !strings.Contains(body, `"data":[]`) {
		t.Errorf("list before the store: %d %s", status, body)
	}
	// Bad at: 400 naming the accepted forms.
	for _, bad := range []string{"last monday", "2025-13-01", "xyz1234", "12345"} {
		status, body = get("/memories/"+a1.ID, bad)
		if status != 400 || !strings.Contains(body, "invalid_request_error") || !strings.Contains(body, "RFC 3339") || !strings.Contains(body, "commit hash") || strings.Contains(body, "at_commit") {
			t.Errorf("at %q: %d %s", bad, status, body)
		}
		if status, body = get("/memories", bad); status != 400 {
			t.Errorf("list at %q: %d %s", bad, status, body)
		}
	}
	// One of a hash's form that names no commit says so by its rule too, for a client's words.
	if status, body = get("/memories", "0000000000"); status != 400 || !strings.Contains(body, "history") || !strings.Contains(body, `"rule":"at_commit"`) {
		t.Errorf("at an unknown commit: %d %s", status, body)
	}
}
