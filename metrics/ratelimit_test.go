package metrics_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/metrics"
)

// TestRateLimitedKeysBounded: refusals past a key's rate are counted by key id for the first
// 1,000 keys refused, and as key "other" past them, so that a server given very many keys
// does not grow a series for each.
func TestRateLimitedKeysBounded(t *testing.T) {
	m := metrics.New()
	for i := range 1000 {
		m.RateLimited(fmt.Sprintf("apikey_%04d", i))
	}
	m.RateLimited("apikey_0000")
	m.RateLimited("apikey_late1")
	m.RateLimited("apikey_late2")
	hs := httptest.NewServer(m.Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	scrape := string(b)
	for _, want := range []string{
		`gitmem_http_rate_limited_total{key="apikey_0000"} 2`,
		`gitmem_http_rate_limited_total{key="apikey_0999"} 1`,
		`gitmem_http_rate_limited_total{key="other"} 2`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("no %s", want)
		}
	}
	if n := strings.Count(scrape, "gitmem_http_rate_limited_total{"); n != 1001 {
		t.Errorf("%d series, want 1,001", n)
	}
}
