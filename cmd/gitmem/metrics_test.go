package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads url's metrics with the Prometheus text parser; key is sent if not "".
func scrape(t *testing.T, url, key string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return resp.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return 200, fams
}

// value is the value of the metric of family name whose labels include want (name=value
// pairs), summed over the matches; a counter, gauge or a histogram's count.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	sum := 0.0
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for i := 0; i+1 < len(want); i += 2 {
			ok = ok && labels[want[i]] == want[i+1]
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestMetrics: the served binary's metrics move with writes, searches and requests, on the
// main port and on --metrics-addr, and need a key once keys are in force.
func TestMetrics(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	id := storeOf(t, c)
	metricsAddr := freeAddr(t)
	_, _, url := startServe(t, c, "--metrics-addr", metricsAddr)
	_, before := scrape(t, url+"/metrics", "")
	for i := range 3 {
		resp, err := http.Post(url+"/v1/memory_stores/"+id+"/memories", "application/json",
			strings.NewReader(fmt.Sprintf(`{"path":"/m%d.md","content":"metrics %d"}`, i, i)))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("write: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	c.ok("", "search", "notes", "metrics")
	needGitCLI(t)
	gitIn(t, t.TempDir(), "clone", "-q", url+"/git/notes.git", "clone")
	_, after := scrape(t, url+"/metrics", "")
	if d := value(after, "gitmem_write_groups_total") - value(before, "gitmem_write_groups_total"); d < 1 || d > 3 {
		t.Errorf("groups committed: %v more", d)
	}
	if v := value(after, "gitmem_http_requests_total", "route", "/v1/memory_stores/:store/memories", "method", "POST", "status", "200"); v != 3 {
		t.Errorf("write requests: %v", v)
	}
	if v := value(after, "gitmem_http_request_duration_seconds", "route", "/v1/memory_stores/:store/memories"); v < 3 {
		t.Errorf("write request latencies: %v", v)
	}
	for _, name := range []string{"gitmem_pack_write_seconds", "gitmem_ref_update_seconds", "gitmem_write_group_requests"} {
		if value(after, name) < 1 {
			t.Errorf("%s: %v", name, value(after, name))
		}
	}
	if v := value(after, "gitmem_store_memories", "store", id); v != 3 {
		t.Errorf("store memories: %v", v)
	}
	if v := value(after, "gitmem_stores"); v != 1 {
		t.Errorf("stores: %v", v)
	}
	if v := value(after, "gitmem_git_operations_total", "operation", "fetch", "status", "200"); v < 1 {
		t.Errorf("git fetches: %v", v)
	}
	if v := value(after, "gitmem_catalog_behind_stores"); v != 0 {
		t.Errorf("catalogs behind: %v", v)
	}
	if v := value(after, "gitmem_searches_total", "result", "ok"); v < 1 {
		t.Errorf("searches: %v", v)
	}
	if value(after, "go_goroutines") <= 0 || value(after, "process_resident_memory_bytes") <= 0 {
		t.Error("no runtime or process metrics")
	}
	// The same on --metrics-addr.
	if status, fams := scrape(t, "http://"+metricsAddr+"/metrics", ""); status != 200 || value(fams, "gitmem_store_memories", "store", id) != 3 {
		t.Fatalf("--metrics-addr: %d", status)
	}

	// With keys in force, a scrape needs one, on both.
	var key struct{ Secret string }
	if err := json.Unmarshal([]byte(c.ok("", "keys", "create", "--name", "prometheus", "--access", "read_only", "--json")), &key); err != nil {
		t.Fatal(err)
	}
	secret := key.Secret
	// A key limited to one store may not read the metrics of every store.
	var limited struct{ Secret string }
	if err := json.Unmarshal([]byte(c.ok("", "keys", "create", "--name", "one store", "--access", "read_only", "--store", id, "--json")), &limited); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{url + "/metrics", "http://" + metricsAddr + "/metrics"} {
		if status, _ := scrape(t, u, ""); status != 401 {
			t.Errorf("%s without a key: %d", u, status)
		}
		if status, _ := scrape(t, u, strings.TrimSpace(secret)); status != 200 {
			t.Errorf("%s with a key: %d", u, status)
		}
		if status, _ := scrape(t, u, strings.TrimSpace(limited.Secret)); status != 403 {
			t.Errorf("%s with a key limited to one store: %d", u, status)
		}
	}
}

// TestMetricsAddrNeedsKeys: no open metrics port on the network without a key.
func TestMetricsAddrNeedsKeys(t *testing.T) {
	c := newCLI(t)
	if _, stderr, code := c.run("", "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "0.0.0.0:0"); code != exitUsage || !strings.Contains(stderr, "refusing to serve metrics on 0.0.0.0:0") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
