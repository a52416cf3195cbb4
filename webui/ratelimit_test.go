package webui_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
)

// slowRate is a rate limit whose bucket does not refill while a test runs: a token every
// 100 s, so that what a test spends stays spent.
const slowRate = 0.01

// mustRefusePage checks that p is the UI's page of a request past a rate: 429, Retry-After
// in whole seconds up to 100 (slowRate's), HTML with want in it.
func mustRefusePage(t *testing.T, what string, p page, want ...string) {
	t.Helper()
	if p.status != http.StatusTooManyRequests {
		t.Fatalf("%s: %d %.300s, want 429", what, p.status, p.body)
	}
	if secs, err := strconv.Atoi(p.header.Get("Retry-After")); err != nil || secs < 1 || secs > 100 {
		t.Errorf("%s: Retry-After %q, want whole seconds up to 100", what, p.header.Get("Retry-After"))
	}
	if ct := p.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: Content-Type %q, want the UI's HTML page", what, ct)
	}
	for _, w := range want {
		if !strings.Contains(p.body, w) {
			t.Errorf("%s: no %q in %.600s", what, w, p.body)
		}
	}
}

// getKey sends GET path with key as x-api-key (the API, /metrics), and answers the status,
// the Retry-After and the body.
func (e *env) getKey(path, key string) (status int, retryAfter, body string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+path, nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// TestUIRateLimit: the UI's pages and actions count against the bucket of the session's key,
// the one its API requests take from: the API can spend it for the UI and the UI for the
// API. Past it a page is the UI's error page, 429 with Retry-After, and a form changes
// nothing; static files are not counted; the refusals are counted in
// gitmem_http_rate_limited_total by key.
func TestUIRateLimit(t *testing.T) {
	e := startWith(t, httpapi.Options{Limits: httpapi.Limits{RateLimit: slowRate, RateBurst: 4}})
	apiFirst, apiFirstID := e.key("api-first", apikeys.ReadWrite, "")
	uiFirst, uiFirstID := e.key("ui-first", apikeys.ReadWrite, "")
	scraper, _ := e.key("scraper", apikeys.ReadOnly, "")
	st, err := e.data.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "notes", Actor: httpapi.LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	static := func(what string, b *browser) {
		t.Helper()
		for range 10 {
			if p := b.get("/ui/static/style.css"); p.status != 200 {
				t.Fatalf("%s: the stylesheet: %d", what, p.status)
			}
		}
	}

	// The API spends the key's burst; its session in the UI is then refused.
	for i := range 4 {
		if status, _, body := e.getKey("/v1/memory_stores", apiFirst); status != 200 {
			t.Fatalf("API request %d of the burst: %d %s", i+1, status, body)
		}
	}
	a := e.browser()
	a.signIn(apiFirst) // counts against the address, not the key
	static("before the UI is refused", a)
	mustRefusePage(t, "a page after the API spent the bucket", a.get("/ui/"), apiFirstID, "--rate-limit", "Too Many Requests")
	static("past the rate", a)

	// The UI spends the key's burst (static files take nothing); its API requests are then
	// refused, and so is a form, which writes nothing.
	b := e.browser()
	b.signIn(uiFirst)
	static("signed in", b)
	token := b.csrf("/ui/stores/notes/new") // 1
	if p := b.post("/ui/stores/notes/memories", url.Values{"csrf": {token}, "path": {"/kept.md"}, "content": {"kept"}}); p.status != http.StatusSeeOther {
		t.Fatalf("a form within the rate: %d %.300s", p.status, p.body) // 2
	}
	for i := range 2 { // 3, 4
		if p := b.get("/ui/stores/notes"); p.status != 200 {
			t.Fatalf("page %d of the burst: %d", i+3, p.status)
		}
	}
	static("at the rate", b)
	p := b.post("/ui/stores/notes/memories", url.Values{"csrf": {token}, "path": {"/refused.md"}, "content": {"refused"}})
	mustRefusePage(t, "a form past the rate", p, uiFirstID, "--rate-limit")
	if _, err := st.GetByPath(context.Background(), "/refused.md", false); !gitstore.IsKind(err, gitstore.KindNotFound) {
		t.Errorf("a form refused past the rate wrote: %v", err)
	}
	if _, err := st.GetByPath(context.Background(), "/kept.md", false); err != nil {
		t.Errorf("the form within the rate: %v", err)
	}
	if status, ra, body := e.getKey("/v1/memory_stores", uiFirst); status != http.StatusTooManyRequests || ra == "" || !strings.Contains(body, "rate_limit_error") {
		t.Errorf("the API after the UI spent the bucket: %d, Retry-After %q, want 429 with it: %s", status, ra, body)
	}

	// Each refusal is counted against its key: the UI's as the API's.
	_, _, scrape := e.getKey("/metrics", scraper)
	for _, want := range []string{
		fmt.Sprintf(`gitmem_http_rate_limited_total{key="%s"} 1`, apiFirstID),
		fmt.Sprintf(`gitmem_http_rate_limited_total{key="%s"} 2`, uiFirstID),
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics: no %s in\n%s", want, rateLines(scrape))
		}
	}

	// Signing out is never refused: it ends the session past the rate too.
	if p := b.post("/ui/logout", url.Values{"csrf": {token}}); p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login" {
		t.Errorf("signing out past the rate: %d %s %.300s", p.status, p.header.Get("Location"), p.body)
	}
	if p := b.get("/ui/"); p.status != http.StatusSeeOther {
		t.Errorf("after signing out past the rate: %d, want the sign-in's redirect", p.status)
	}
}

// rateLines is the lines of a scrape about the rate limit.
func rateLines(scrape string) string {
	var out []string
	for _, l := range strings.Split(scrape, "\n") {
		if strings.Contains(l, "rate_limited") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestUISignInGuessing: with a rate limit set, sign-ins count against their client's address
// (as a trusted proxy names it; an IPv6 client by its /64), before the key is checked: past
// the rate a guess is refused 429 with Retry-After on the sign-in page, and so is the right
// key, which gets no session; other addresses sign in as before.
func TestUISignInGuessing(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	e := startWith(t, httpapi.Options{Limits: httpapi.Limits{RateLimit: slowRate, RateBurst: 3}, TrustedProxies: []*net.IPNet{loopback}})
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	signIn := func(from, key string) page {
		t.Helper()
		b := e.browser()
		form := url.Values{"csrf": {b.csrf("/ui/login")}, "key": {key}, "next": {"/ui/"}}
		req, _ := http.NewRequest("POST", e.url+"/ui/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.url)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("X-Forwarded-For", from)
		return b.do(req)
	}
	session := func(p page) bool {
		for _, c := range (&http.Response{Header: p.header}).Cookies() {
			if c.Name == "gitmem_session" && c.Value != "" {
				return true
			}
		}
		return false
	}
	guess := "sk-gitmem-" + strings.Repeat("x", 43)

	for i := range 3 {
		if p := signIn("203.0.113.7", guess); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "invalid API key") {
			t.Fatalf("guess %d within the rate: %d %.300s", i+1, p.status, p.body)
		}
	}
	p := signIn("203.0.113.7", guess)
	mustRefusePage(t, "a guess past the rate", p, "too many sign-ins", "--rate-limit", `name="key"`)
	p = signIn("203.0.113.7", admin)
	mustRefusePage(t, "the right key past the rate", p, "too many sign-ins")
	if session(p) {
		t.Error("a sign-in refused past the rate was given a session")
	}
	// Another address signs in.
	if p := signIn("203.0.113.8", admin); p.status != http.StatusSeeOther || !session(p) {
		t.Fatalf("another address: %d %.300s", p.status, p.body)
	}
	// An IPv6 client counts by its /64: another address in it is refused, one in the next
	// /64 is not.
	for i := range 3 {
		if p := signIn(fmt.Sprintf("2001:db8::%d", i+1), guess); p.status != http.StatusUnauthorized {
			t.Fatalf("IPv6 guess %d: %d", i+1, p.status)
		}
	}
	mustRefusePage(t, "a guess from the same /64", signIn("2001:db8::ff", guess), "too many sign-ins")
	if p := signIn("2001:db8:0:1::1", guess); p.status != http.StatusUnauthorized {
		t.Errorf("a guess from another /64: %d, want 401", p.status)
	}
	// The key signed in from elsewhere was never refused; the refusals are counted as sign-ins.
	_, _, scrape := e.getKey("/metrics", admin)
	if want := `gitmem_http_rate_limited_total{key="sign-in"} 3`; !strings.Contains(scrape, want) {
		t.Errorf("metrics: no %s in\n%s", want, rateLines(scrape))
	}
}
