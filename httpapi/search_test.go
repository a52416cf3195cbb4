package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// TestSearchRoute: GET /v1/memory_stores/{id}/search on a real server, with its
// parameters, its errors, and the keys that may use it.
func TestSearchRoute(t *testing.T) {
	dir := t.TempDir()
	d, derr := gitstore.Open(context.Background(), dir, gitstore.Options{})
	keys, kerr := apikeys.Open(dir)
	if err := errors.Join(derr, kerr); err != nil {
		t.Fatal(err)
	}
	svc := search.New(d, search.Options{})
	srv := New(d, keys, Options{})
	srv.EnableSearch(svc)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		svc.Close()
		d.Close()
	})

	_, body := rawRequest(t, "POST", hs.URL+"/v1/memory_stores", `{"name":"s"}`, nil)
	var store struct{ ID string }
	json.Unmarshal([]byte(body), &store)
	base := hs.URL + "/v1/memory_stores/" + store.ID
	for path, content := range map[string]string{
		"/projects/a.md": "Deploy to staging.\nThe staging database is small.\n",
		"/projects/b.md": "Deploy to production.\n",
		"/notes.md":      "Staging notes.\n",
	} {
		if status, body := rawRequest(t, "POST", base+"/memories", `{"path":"`+path+`","content":"`+strings.ReplaceAll(content, "\n", `\n`)+`"}`, nil); status != 200 {
			t.Fatalf("create %s: %d %s", path, status, body)
		}
	}
	get := func(params url.Values, header map[string]string) (int, string) {
		t.Helper()
		return rawRequest(t, "GET", base+"/search?"+params.Encode(), "", header)
	}
	status, body := get(url.Values{"q": {"staging database"}}, nil)
	if status != 200 {
		t.Fatalf("search: %d %s", status, body)
	}
	if got, want := keysOf(t, body), []string{"commit", "data", "memory_store_id", "query", "total", "type"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("search result fields %v, want %v", got, want)
	}
	var res struct {
		Type   string
		Commit string
		Total  int
		Data   []struct {
			MemoryID string `json:"memory_id"`
			Path     string
			Score    float64
			Snippets []struct {
				Line       int
				Text       string
				Highlights []struct{ Start, End int }
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if res.Type != "memory_search_result" || res.Total != 2 || res.Data[0].Path != "/projects/a.md" || !strings.HasPrefix(res.Data[0].MemoryID, "mem_") {
		t.Fatalf("search: %s", body)
	}
	if sn := res.Data[0].Snippets; len(sn) != 2 || sn[1].Line != 2 || sn[1].Text != "The staging database is small." || len(sn[1].Highlights) != 1 {
		t.Errorf("snippets: %+v", sn)
	}
	if st, err := d.Store(context.Background(), store.ID); err != nil || st.Head() != res.Commit {
		t.Errorf("search answered from %s, the store is at %v (%v)", res.Commit, st.Head(), err)
	}

	// path_prefix and limit.
	_, body = get(url.Values{"q": {"deploy"}, "path_prefix": {"/projects/"}, "limit": {"1"}}, nil)
	if json.Unmarshal([]byte(body), &res); res.Total != 2 || len(res.Data) != 1 {
		t.Errorf("path_prefix and limit: %s", body)
	}
	// Errors.
	for _, c := range []struct {
		params url.Values
		status int
		typ    string
	}{
		{url.Values{}, 400, "invalid_request_error"},
		{url.Values{"q": {"x"}, "limit": {"0"}}, 400, "invalid_request_error"},
		{url.Values{"q": {"x"}, "limit": {"101"}}, 400, "invalid_request_error"},
		{url.Values{"q": {"x"}, "path_prefix": {"no/slash"}}, 400, "invalid_request_error"},
		{url.Values{"q": {`"" -x`}}, 400, "invalid_request_error"},
	} {
		status, body := get(c.params, nil)
		if status != c.status || !strings.Contains(body, `"type":"`+c.typ+`"`) {
			t.Errorf("search?%s: %d %s, want %d %s", c.params.Encode(), status, body, c.status, c.typ)
		}
	}
	if status, body := rawRequest(t, "GET", hs.URL+"/v1/memory_stores/memstore_01NOSUCHSTORE0000000000000/search?q=x", "", nil); status != 404 {
		t.Errorf("unknown store: %d %s", status, body)
	}

	// Keys: a read-only key searches; a key of another store may not.
	_, ro, _ := keys.Create("reader", apikeys.ReadOnly, "")
	_, other, _ := keys.Create("other", apikeys.ReadWrite, "memstore_01OTHERSTORE00000000000000")
	if status, body := get(url.Values{"q": {"deploy"}}, nil); status != 401 {
		t.Errorf("without a key once keys exist: %d %s", status, body)
	}
	if status, body := get(url.Values{"q": {"deploy"}}, map[string]string{"x-api-key": ro}); status != 200 {
		t.Errorf("read-only key: %d %s", status, body)
	}
	if status, body := get(url.Values{"q": {"deploy"}}, map[string]string{"x-api-key": other}); status != 403 {
		t.Errorf("key of another store: %d %s", status, body)
	}
}
