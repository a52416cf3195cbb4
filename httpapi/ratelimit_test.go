package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/metrics"
)

// fakeClock is a clock that moves only when a test moves it.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// rateServer is the real server on a loopback listener (ServeListener), with the rate limit
// of l on a clock of the test's, its health probes, its metrics and git's route.
type rateServer struct {
	*limitedServer
	srv   *Server
	clock *fakeClock
}

func startRateLimited(t *testing.T, l Limits, requireKeys bool) *rateServer {
	t.Helper()
	d, keys := openDir(t, t.TempDir())
	m := metrics.New()
	srv := New(d, keys, Options{Limits: l, RequireKeys: requireKeys, ObserveRateLimited: m.RateLimited})
	clock := newFakeClock()
	if srv.rates != nil {
		srv.rates.now, srv.signIns.now = clock.now, clock.now
	}
	srv.EnableHealth(ReadyChecks(d, nil))
	srv.EnableMetrics(m.Handler())
	srv.EnableGit(GitOptions{HookProgram: fastHook}) // without git, its route answers 501
	url, stop := serveListener(t, srv)
	t.Cleanup(func() { stop(); d.Close() })
	return &rateServer{limitedServer: &limitedServer{url: url, data: d, keys: keys}, srv: srv, clock: clock}
}

// send sends method url with key (as x-api-key; "" for none) and the headers (name, value,
// ...), through rawExchange, and answers the response's status, body and header.
func send(t *testing.T, method, url, key, body string, headers ...string) (int, string, http.Header) {
	t.Helper()
	h := map[string]string{}
	if key != "" {
		h["x-api-key"] = key
	}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return rawExchange(t, method, url, body, h)
}

// mustRefuseRate checks that status, body and h are the 429 of a key past its rate:
// Retry-After in whole seconds (want), and the API's JSON envelope naming the key, the limit
// and its flag.
func mustRefuseRate(t *testing.T, what string, status int, body string, h http.Header, keyID, want string) {
	t.Helper()
	if status != http.StatusTooManyRequests {
		t.Fatalf("%s: %d %s, want 429", what, status, body)
	}
	if got := h.Get("Retry-After"); got != want {
		t.Errorf("%s: Retry-After %q, want %q", what, got, want)
	}
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("%s: not the JSON error envelope: %v: %s", what, err, body)
	}
	if env.Type != "error" || env.Error.Type != "rate_limit_error" || env.RequestID == "" ||
		!strings.Contains(env.Error.Message, keyID) || !strings.Contains(env.Error.Message, "--rate-limit") {
		t.Errorf("%s: %s", what, body)
	}
}

// TestRateLimitPerKey: a key past its rate is answered 429 with Retry-After, on the API, the
// SDK, MCP and git's route, and its sessions share its bucket; another key is not affected;
// the health probes and /metrics are not limited; once the key has waited Retry-After it
// gets through again; an event stream counts once, as it opens; /metrics counts the
// refusals by key.
func TestRateLimitPerKey(t *testing.T) {
	rs := startRateLimited(t, Limits{RateLimit: 1, RateBurst: 2}, true)
	key := func(name string) (apikeys.Key, string) {
		k, secret, err := rs.keys.Create(name, apikeys.ReadWrite, "")
		if err != nil {
			t.Fatal(err)
		}
		return k, secret
	}
	a, aSecret := key("a")
	_, bSecret := key("b")
	st, err := rs.data.CreateStore(context.Background(), gitstore.CreateStoreInput{Name: "notes", Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	stores := rs.url + "/v1/memory_stores"

	// The burst of 2, then 429: the clock stands still, so the next token is 1 s away.
	for i := range 2 {
		if status, body, _ := send(t, "GET", stores, aSecret, ""); status != 200 {
			t.Fatalf("request %d of the burst: %d %s", i+1, status, body)
		}
	}
	status, body, h := send(t, "GET", stores, aSecret, "")
	mustRefuseRate(t, "past the burst", status, body, h, a.ID, "1")
	// A write is refused as well, and changes nothing.
	status, body, h = send(t, "POST", stores+"/"+st.ID()+"/memories", aSecret, `{"path":"/x.md","content":"x"}`)
	mustRefuseRate(t, "a write past the rate", status, body, h, a.ID, "1")
	if _, err := st.GetByPath(context.Background(), "/x.md", false); !gitstore.IsKind(err, gitstore.KindNotFound) {
		t.Errorf("a refused write wrote: %v", err)
	}
	// A session of the key counts against the key.
	status, body, h = send(t, "GET", stores, aSecret, "", SessionHeader, "sesn_ratelimited")
	mustRefuseRate(t, "a session of the key", status, body, h, a.ID, "1")
	// The official SDK sees a rate_limit_error (without its retries, which would wait).
	sdk := anthropic.NewClient(option.WithBaseURL(rs.url), option.WithAPIKey(aSecret), option.WithMaxRetries(0))
	_, err = sdk.Beta.MemoryStores.Get(context.Background(), st.ID(), anthropic.BetaMemoryStoreGetParams{})
	if status, typ, _ := apiErr(t, err); status != 429 || typ != "rate_limit_error" {
		t.Errorf("SDK: %d %s", status, typ)
	}
	// MCP: the same 429, before any tool is bound.
	status, body, h = send(t, "POST", rs.url+MCPPath+"?store="+st.ID(), aSecret,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "accept", "application/json, text/event-stream")
	mustRefuseRate(t, "MCP", status, body, h, a.ID, "1")
	refusals := 5
	// git's route: 429 with Retry-After, in plain text as git shows it.
	if _, err := exec.LookPath("git"); err == nil {
		refusals++
		req, _ := http.NewRequest("GET", rs.url+"/git/"+st.ID()+".git/info/refs?service=git-upload-pack", nil)
		req.SetBasicAuth("git", aSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "--rate-limit") {
			t.Errorf("git: %d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}

	// Another key is not affected.
	for i := range 2 {
		if status, body, _ := send(t, "GET", stores, bSecret, ""); status != 200 {
			t.Fatalf("key b, request %d: %d %s", i+1, status, body)
		}
	}
	// Nor are the probes and /metrics, with the limited key or none (/readyz fails its
	// git check where git is not installed: a 503, but no 429).
	for range 5 {
		for _, p := range []struct{ path, key string }{{"/livez", ""}, {"/livez", aSecret}, {"/readyz", ""}, {"/readyz", aSecret}, {"/metrics", aSecret}} {
			if status, body, _ := send(t, "GET", rs.url+p.path, p.key, ""); status == 429 || p.path != "/readyz" && status != 200 {
				t.Fatalf("%s past the key's rate: %d %s", p.path, status, body)
			}
		}
	}
	_, scrape, _ := send(t, "GET", rs.url+"/metrics", aSecret, "")
	if want := fmt.Sprintf(`gitmem_http_rate_limited_total{key="%s"} %d`, a.ID, refusals); !strings.Contains(scrape, want) {
		t.Errorf("metrics: no %s in\n%s", want, grepLines(scrape, "rate_limited"))
	}

	// After Retry-After, the key gets through again: one token, then 429 again.
	rs.clock.advance(time.Second)
	if status, body, _ := send(t, "GET", stores, aSecret, ""); status != 200 {
		t.Fatalf("after waiting: %d %s", status, body)
	}
	status, body, h = send(t, "GET", stores, aSecret, "")
	mustRefuseRate(t, "once the token is spent", status, body, h, a.ID, "1")
	// 0.7 s before the next token: Retry-After rounds up to whole seconds.
	rs.clock.advance(300 * time.Millisecond)
	status, body, h = send(t, "GET", stores, aSecret, "")
	mustRefuseRate(t, "0.7 s before a token", status, body, h, a.ID, "1")

	// An event stream takes one token, as it opens, and none while it is open.
	rs.clock.advance(time.Minute) // the bucket is full again: 2
	s, status := openStream(t, stores+"/"+st.ID()+"/events", aSecret)
	if status != 200 {
		t.Fatalf("stream: %d", status)
	}
	defer s.resp.Body.Close()
	if status, body, _ := send(t, "GET", stores, aSecret, ""); status != 200 {
		t.Fatalf("the request after a stream: %d %s", status, body)
	}
	status, body, h = send(t, "GET", stores, aSecret, "")
	mustRefuseRate(t, "a stream and a request", status, body, h, a.ID, "1")
}

// grepLines is the lines of text that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRateLimitRetryAfterSeconds: Retry-After is the whole seconds until the key's next
// token, rounded up: 5 at a rate of one request in 5 s.
func TestRateLimitRetryAfterSeconds(t *testing.T) {
	rs := startRateLimited(t, Limits{RateLimit: 0.2, RateBurst: 1}, true)
	k, secret, err := rs.keys.Create("slow", apikeys.ReadOnly, "")
	if err != nil {
		t.Fatal(err)
	}
	stores := rs.url + "/v1/memory_stores"
	if status, body, _ := send(t, "GET", stores, secret, ""); status != 200 {
		t.Fatalf("first: %d %s", status, body)
	}
	status, body, h := send(t, "GET", stores, secret, "")
	mustRefuseRate(t, "second", status, body, h, k.ID, "5")
	rs.clock.advance(4100 * time.Millisecond)
	status, body, h = send(t, "GET", stores, secret, "")
	mustRefuseRate(t, "0.9 s before", status, body, h, k.ID, "1")
	rs.clock.advance(900 * time.Millisecond)
	if status, body, _ := send(t, "GET", stores, secret, ""); status != 200 {
		t.Fatalf("after 5 s: %d %s", status, body)
	}
}

// TestRateLimitWithoutKeys: a server without keys (loopback only) limits no request: there
// is no key, and every client has the same loopback address.
func TestRateLimitWithoutKeys(t *testing.T) {
	rs := startRateLimited(t, Limits{RateLimit: 1, RateBurst: 1}, false)
	for i := range 10 {
		if status, body, _ := send(t, "GET", rs.url+"/v1/memory_stores", "", ""); status != 200 {
			t.Fatalf("request %d without keys: %d %s", i+1, status, body)
		}
	}
	if n := rs.srv.rates.held(); n != 0 {
		t.Errorf("%d buckets without keys", n)
	}
}

// TestRateLimitForgetsIdleKeys: the bucket of a key unused for a minute (longer than it
// takes to fill again) is forgotten, so that many keys do not hold memory; a revoked key's
// requests make none, and its bucket goes as any idle one.
func TestRateLimitForgetsIdleKeys(t *testing.T) {
	rs := startRateLimited(t, Limits{RateLimit: 10, RateBurst: 5}, true)
	stores := rs.url + "/v1/memory_stores"
	var secrets []string
	for i := range 20 {
		_, secret, err := rs.keys.Create("k"+string(rune('a'+i)), apikeys.ReadOnly, "")
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, secret)
		if status, body, _ := send(t, "GET", stores, secret, ""); status != 200 {
			t.Fatalf("key %d: %d %s", i, status, body)
		}
	}
	if n := rs.srv.rates.held(); n != 20 {
		t.Fatalf("%d buckets after 20 keys' requests, want 20", n)
	}
	// 30 s on, the last key again, and one key revoked: its requests are refused (401) and
	// make no bucket; none is forgotten yet.
	rs.clock.advance(30 * time.Second)
	send(t, "GET", stores, secrets[19], "")
	revoked, revokedSecret, err := rs.keys.Create("revoked", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, body, _ := send(t, "GET", stores, revokedSecret, ""); status != 200 {
		t.Fatalf("the key before it is revoked: %d %s", status, body)
	}
	if n := rs.srv.rates.held(); n != 21 {
		t.Fatalf("%d buckets with the key to revoke, want 21", n)
	}
	if _, err := rs.keys.Revoke(revoked.ID); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if status, _, _ := send(t, "GET", stores, revokedSecret, ""); status != 401 {
			t.Fatalf("revoked key: %d", status)
		}
	}
	if n := rs.srv.rates.held(); n != 21 {
		t.Fatalf("%d buckets 30 s on, want 21", n)
	}
	// A minute after the first requests, the 19 idle keys' buckets go; the one used 30 s
	// ago stays, and the revoked key's goes with the next sweep (it sends nothing that
	// passes).
	rs.clock.advance(31 * time.Second)
	send(t, "GET", stores, secrets[19], "")
	if n := rs.srv.rates.held(); n != 2 {
		t.Fatalf("%d buckets after a minute, want 2 (the key used 31 s ago, the key revoked 31 s ago)", n)
	}
	rs.clock.advance(time.Minute)
	send(t, "GET", stores, secrets[19], "")
	if n := rs.srv.rates.held(); n != 1 {
		t.Fatalf("%d buckets after two minutes, want 1 (the key just used)", n)
	}
	// A key forgotten starts again with a full bucket: 5 at once, then 429.
	for i := range 5 {
		if status, body, _ := send(t, "GET", stores, secrets[0], ""); status != 200 {
			t.Fatalf("forgotten key, request %d: %d %s", i+1, status, body)
		}
	}
	if status, _, _ := send(t, "GET", stores, secrets[0], ""); status != 429 {
		t.Errorf("forgotten key past its burst: %d", status)
	}
}

// TestRateLimitDefaults: the rate is off by default and for 0 or less; the burst is twice
// the rate, at least 4, unless set.
func TestRateLimitDefaults(t *testing.T) {
	for _, tc := range []struct {
		in          Limits
		rate        float64
		burst       int
		limitsTaken bool
	}{
		{Limits{}, 0, 0, false},
		{Limits{RateLimit: -1, RateBurst: 3}, 0, 0, false},
		{Limits{RateLimit: 10}, 10, 20, true},
		{Limits{RateLimit: 0.5}, 0.5, 4, true},
		{Limits{RateLimit: 2.6}, 2.6, 6, true},
		{Limits{RateLimit: 10, RateBurst: 1}, 10, 1, true},
	} {
		got := tc.in.WithDefaults()
		if got.RateLimit != tc.rate || got.RateBurst != tc.burst || (newKeyRates(got, nil) != nil) != tc.limitsTaken {
			t.Errorf("%+v: rate %v burst %d", tc.in, got.RateLimit, got.RateBurst)
		}
	}
}

// TestSignInBucketsBounded: sign-ins from more addresses than maxSignInBuckets within a
// minute (a client of an IPv6 /48 has 65,536 /64s) hold no more buckets than that, and do
// not touch the keys' buckets.
func TestSignInBucketsBounded(t *testing.T) {
	rs := startRateLimited(t, Limits{RateLimit: 10, RateBurst: 5}, true)
	r := httptest.NewRequest("POST", "/ui/login", nil)
	for i := range maxSignInBuckets + 500 {
		r.RemoteAddr = fmt.Sprintf("[2001:db8:%x:%x::1]:4000", i>>16, i&0xffff)
		if err := rs.srv.LimitSignIn(r); err != nil {
			t.Fatalf("sign-in %d, from a new address: %v", i, err)
		}
	}
	if n := rs.srv.signIns.held(); n != maxSignInBuckets {
		t.Errorf("%d sign-in buckets held after %d addresses, want %d", n, maxSignInBuckets+500, maxSignInBuckets)
	}
	if n := rs.srv.rates.held(); n != 0 {
		t.Errorf("%d keys' buckets after sign-ins alone", n)
	}
	// An address still held is still limited: its burst, then 429.
	r.RemoteAddr = "203.0.113.9:4000"
	for i := range 5 {
		if err := rs.srv.LimitSignIn(r); err != nil {
			t.Fatalf("sign-in %d of one address: %v", i+1, err)
		}
	}
	if err := rs.srv.LimitSignIn(r); RetryAfter(err) < 1 {
		t.Errorf("a sign-in past its address's burst: %v", err)
	}
}
