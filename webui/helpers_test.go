package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/metrics"
	"github.com/gitmem/gitmem/search"
	"github.com/gitmem/gitmem/webhooks"
	"github.com/gitmem/gitmem/webui"
)

// env is the real server (the API, search and the UI, wired as gitmem serve wires them) on a
// loopback port, over a fresh data directory.
type env struct {
	t     testing.TB
	url   string
	data  *gitstore.DataDir
	keys  *apikeys.Keys
	hooks *webhooks.Registry // receivers on loopback allowed: the tests' are
	h     http.Handler       // the server itself, for benchmarks that leave the network out
}

// TestMain lets git run this test binary as the push hook of the servers the tests start
// (the hook script runs the server's own executable, as gitmem serve does).
func TestMain(m *testing.M) {
	gitserve.RunHookIfAsked()
	os.Exit(m.Run())
}

func start(t testing.TB) *env {
	t.Helper()
	return startWith(t, httpapi.Options{})
}

// startWith is start, the server with opts (its limits, its proxies), and its metrics at
// /metrics, as gitmem serve wires them.
func startWith(t testing.TB, opts httpapi.Options) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	d, err := gitstore.Open(ctx, dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikeys.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	opts.Observe, opts.ObserveRateLimited = m.Request, m.RateLimited
	srv := httpapi.New(d, keys, opts)
	srv.EnableMetrics(m.Handler())
	idx := search.New(d, search.Options{})
	go idx.WatchAll(ctx)
	srv.EnableSearch(idx)
	hooks := webhooks.Open(d.Layout())
	hooks.AllowPrivate = true
	srv.EnableWebhooks(hooks)
	srv.EnableGit(httpapi.GitOptions{}) // without git, /git/ answers 501 and the rest works
	ui, err := webui.New(webui.Options{Data: d, Keys: keys, Auth: srv, Search: idx, Webhooks: hooks, Proposals: srv.Proposals()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Mount(webui.Prefix, ui)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		cancel()
		idx.Close()
		d.Close()
	})
	return &env{t: t, url: hs.URL, data: d, keys: keys, hooks: hooks, h: srv}
}

// key makes an API key and returns its secret and id.
func (e *env) key(name string, access apikeys.Access, storeID string) (secret, id string) {
	e.t.Helper()
	k, secret, err := e.keys.Create(name, access, storeID)
	if err != nil {
		e.t.Fatal(err)
	}
	return secret, k.ID
}

// api calls the JSON API with a key ("" for none) and decodes the answer into out.
func (e *env) api(method, path, key string, body any, out any, headers ...string) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

type memJSON struct {
	ID            string `json:"id"`
	Path          string `json:"path"`
	Content       string `json:"content"`
	ContentSHA256 string `json:"content_sha256"`
}

func (e *env) store(key, name string) string {
	e.t.Helper()
	var s struct{ ID string }
	if st := e.api("POST", "/v1/memory_stores", key, map[string]any{"name": name}, &s); st != 200 {
		e.t.Fatalf("create store: %d", st)
	}
	return s.ID
}

func (e *env) write(key, store, path, content string, headers ...string) memJSON {
	e.t.Helper()
	var m memJSON
	if st := e.api("POST", "/v1/memory_stores/"+store+"/memories", key, map[string]any{"path": path, "content": content}, &m, headers...); st != 200 {
		e.t.Fatalf("write %s: %d", path, st)
	}
	return m
}

func (e *env) read(key, store, id string) memJSON {
	e.t.Helper()
	var m memJSON
	if st := e.api("GET", "/v1/memory_stores/"+store+"/memories/"+id+"?view=full", key, nil, &m); st != 200 {
		e.t.Fatalf("read %s: %d", id, st)
	}
	return m
}

// browser is a client as a browser is one: it keeps cookies, and does not follow redirects
// (so that tests see them).
type browser struct {
	e *env
	c *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status int
	body   string
	header http.Header
}

func (b *browser) do(req *http.Request) page {
	b.e.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, body: string(raw), header: resp.Header}
}

func (b *browser) get(path string) page {
	req, _ := http.NewRequest("GET", b.e.url+path, nil)
	return b.do(req)
}

// post sends a form as a browser does from a page of the server's own origin.
func (b *browser) post(path string, form url.Values) page {
	req, _ := http.NewRequest("POST", b.e.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.url)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf loads a page and returns the CSRF token of its forms.
func (b *browser) csrf(path string) string {
	b.e.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.e.t.Fatalf("no csrf token on %s (%d): %.300s", path, p.status, p.body)
	}
	return m[1]
}

// submit posts a form of the page at from, with its CSRF token.
func (b *browser) submit(from, to string, form url.Values) page {
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf(from))
	return b.post(to, form)
}

func (b *browser) signIn(secret string) {
	b.e.t.Helper()
	p := b.submit("/ui/login", "/ui/login", url.Values{"key": {secret}, "next": {"/ui/"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/" {
		b.e.t.Fatalf("sign in: %d %s %.300s", p.status, p.header.Get("Location"), p.body)
	}
}
