package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestServeRateLimitRefused: a negative --rate-limit, or one that is not a number, from a
// flag, the environment or the config file, and a --rate-burst of 0, are usage errors (exit
// 2) that say where they were set; no server starts.
func TestServeRateLimitRefused(t *testing.T) {
	c := newCLI(t)
	conf := filepath.Join(t.TempDir(), "gitmem.toml")
	if err := os.WriteFile(conf, []byte("[serve]\nrate-limit = -0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkServeRefusals(t, c, []serveRefusal{
		{nil, []string{"serve", "--rate-limit=-1"}, `invalid argument "-1" for "--rate-limit" flag: must be 0 (no limit) or more`},
		{nil, []string{"serve", "--rate-limit", "fast"}, `invalid argument "fast" for "--rate-limit" flag: not a number`},
		{nil, []string{"serve", "--rate-limit", "NaN"}, `"--rate-limit" flag: not a number`},
		{nil, []string{"serve", "--rate-limit", "5", "--rate-burst", "0"}, `"--rate-burst" flag: must be more than 0`},
		{[]string{"GITMEM_RATE_LIMIT=-2"}, []string{"serve"}, "GITMEM_RATE_LIMIT: must be 0 (no limit) or more"},
		{nil, []string{"--config", conf, "serve"}, "[serve] rate-limit: must be 0 (no limit) or more"},
	})
}

// TestServeRateLimit: gitmem serve reads the rate limit from its config file (and a flag
// over it), says it in its banner, and refuses a key past it with 429 and Retry-After while
// another key and the health probe go on; /metrics counts the refusal by key.
func TestServeRateLimit(t *testing.T) {
	c := newCLI(t)
	secret, other := createKey(t, c, "agent"), createKey(t, c, "other")
	conf := filepath.Join(t.TempDir(), "gitmem.toml")
	// One request in 5 s, so that the test's requests come well within one token's time.
	if err := os.WriteFile(conf, []byte("[serve]\nrate-limit = 0.2\nrate-burst = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.ok("", "config", "show", "--config", conf)
	if !regexp.MustCompile(`--rate-limit\s+0\.2\s+config`).MatchString(out) {
		t.Errorf("config show: %s", out)
	}
	_, banner, url := startServe(t, c, "--config", conf, "--rate-burst", "2")
	mustContain(t, "banner", banner, "rate:  0.2 requests a second per key, 2 at once (--rate-limit, --rate-burst)")

	for i := range 2 {
		if status, body := call(t, "GET", url+"/v1/memory_stores", secret, "", ""); status != 200 {
			t.Fatalf("request %d of the burst: %d %s", i+1, status, body)
		}
	}
	req, _ := http.NewRequest("GET", url+"/v1/memory_stores", nil)
	req.Header.Set("x-api-key", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ra := resp.Header.Get("Retry-After"); resp.StatusCode != 429 || (ra != "4" && ra != "5") {
		t.Fatalf("past the burst: %d, Retry-After %q (want 4 or 5: a token every 5 s)", resp.StatusCode, ra)
	}
	if status, body := call(t, "GET", url+"/v1/memory_stores", other, "", ""); status != 200 {
		t.Errorf("another key: %d %s", status, body)
	}
	if status, body := call(t, "GET", url+"/livez", secret, "", ""); status != 200 {
		t.Errorf("/livez with the limited key: %d %s", status, body)
	}
	status, fams := scrape(t, url+"/metrics", secret)
	if status != 200 {
		t.Fatalf("/metrics with the limited key: %d", status)
	}
	keyID := regexp.MustCompile(`(apikey_[0-9A-Z]+)\s+agent\s`).FindStringSubmatch(c.ok("", "keys", "list"))
	if keyID == nil {
		t.Fatal("keys list shows no key agent")
	}
	if got := value(fams, "gitmem_http_rate_limited_total", "key", keyID[1]); got != 1 {
		t.Errorf("gitmem_http_rate_limited_total{key=%q}: %v, want 1", keyID[1], got)
	}
}
