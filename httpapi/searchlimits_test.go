package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// memoryCost runs f and returns what the process allocated meanwhile and how much its heap
// grew for good (after a collection). The server runs in this process, so both count the
// server's work.
func memoryCost(f func()) (allocated uint64, retained int64) {
	var before, during, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&during)
	runtime.GC()
	runtime.ReadMemStats(&after)
	return during.TotalAlloc - before.TotalAlloc, int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// TestSearchBounds: queries over the search limits are refused with a 400 that names the
// limit, quickly and without the memory that bleve's fuzzy automaton and prefix expansion
// would take, on every way in: the REST search route, the memory_search tool route, and
// MCP. A word of 400,000 letters used to take the process down (out of memory); one of
// 3,000 letters allocated about 0.2 GB and answered 500.
func TestSearchBounds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	d, derr := gitstore.Open(ctx, dir, gitstore.Options{})
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
	for i, content := range []string{"Deploy to staging on Fridays.", "The staging database is small.", "Tea in the morning."} {
		if status, body := rawRequest(t, "POST", base+"/memories", `{"path":"/m`+string(rune('a'+i))+`.md","content":"`+content+`"}`, nil); status != 200 {
			t.Fatalf("create: %d %s", status, body)
		}
	}
	rest := func(q string) (int, string) {
		t.Helper()
		return rawRequest(t, "GET", base+"/search?"+url.Values{"q": {q}}.Encode(), "", nil)
	}
	tool := func(q string) (int, string) {
		t.Helper()
		in, _ := json.Marshal(map[string]string{"query": q})
		return rawRequest(t, "POST", base+"/tools/memory_search", string(in), map[string]string{"content-type": "application/json"})
	}
	cs, err := mcpConnect(t, ctx, hs.URL+MCPPath+"?store="+store.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	mcpSearch := func(q string) (int, string) {
		t.Helper()
		text, isErr := mcpCall(t, ctx, cs, "memory_search", map[string]any{"query": q})
		if isErr {
			return 400, text
		}
		return 200, text
	}

	// What normal use sends is untouched.
	for _, q := range []string{"staging database", `"staging database" -tea deplo* path:/`, "stagign", strings.Repeat("staging ", 16)} {
		if status, body := rest(q); status != 200 || !strings.Contains(body, `"total":`) {
			t.Errorf("search %q: %d %s", q, status, body)
		}
	}

	letters := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteByte("staging"[i%7])
		}
		return b.String()
	}
	var prefixes []string
	for _, a := range "bcdfghjklmnprstvwz" {
		for _, v := range "aeiou" {
			prefixes = append(prefixes, string(a)+string(v)+"*")
		}
	}
	cases := []struct {
		name, q, limit string
	}{
		{"a word of 3,000 letters", letters(3000), "1024 bytes"},
		{"a word of 400,000 letters", letters(400000), "1024 bytes"},
		{"a word of 300 letters", letters(300), "256 bytes"},
		{"a phrase of 300 bytes", `"` + strings.Repeat("staging ", 37) + `"`, "256 bytes"},
		{"3 KB of prefixes", strings.Repeat(strings.Join(prefixes, " ")+" ", 8), "1024 bytes"},
		{"5 prefixes", strings.Join(prefixes[:5], " "), "4 prefix"},
		{"17 words", strings.Repeat("tea ", 17), "16 words"},
		{"a phrase of 9 words", `"` + strings.Repeat("the ", 9) + `"`, "8 words"},
		{"a word of 9 parts", strings.Repeat("a-", 9), "8 words"},
	}
	for _, c := range cases {
		for _, via := range []struct {
			name string
			call func(string) (int, string)
		}{{"REST", rest}, {"tool", tool}, {"MCP", mcpSearch}} {
			if via.name != "REST" && len(c.q) > 100000 {
				continue // the same check; the tool route's body limit is not the point here
			}
			var status int
			var body string
			start := time.Now()
			allocated, retained := memoryCost(func() { status, body = via.call(c.q) })
			took := time.Since(start)
			refused := status == 400 && strings.Contains(body, "invalid_request_error")
			if via.name != "REST" {
				refused = (status == 400 || strings.Contains(body, `"is_error":true`)) && !strings.Contains(body, "internal")
			}
			if !refused || !strings.Contains(body, c.limit) {
				t.Errorf("%s, %s: %d %.300s; want it refused, naming the limit %q", c.name, via.name, status, body, c.limit)
			}
			if took > 2*time.Second {
				t.Errorf("%s, %s: answered in %s, want it refused at once", c.name, via.name, took)
			}
			if allocated > 64<<20 || retained > 8<<20 {
				t.Errorf("%s, %s: allocated %d MB, heap grew by %d MB; want under 64 MB and 8 MB", c.name, via.name, allocated>>20, retained>>20)
			}
		}
	}
}
