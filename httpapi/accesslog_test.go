package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/testlog"
)

// TestAccessLog: a line per request at info, with the route, status, duration, request id and
// key, in JSON; never the key's secret nor the query string.
func TestAccessLog(t *testing.T) {
	dir := t.TempDir()
	d, err := gitstore.Open(context.Background(), dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	keys, _ := apikeys.Open(dir)
	key, secret, _ := keys.Create("logged", apikeys.ReadWrite, "")
	var buf testlog.Buffer
	srv := New(d, keys, Options{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	req, _ := http.NewRequest("GET", hs.URL+"/v1/memory_stores?limit=5", nil)
	req.Header.Set("x-api-key", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest("GET", hs.URL+"/v1/memory_stores/memstore_nope", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	out := buf.String()
	if strings.Contains(out, secret) || strings.Contains(out, "limit=5") {
		t.Fatalf("the log holds a secret or a query string:\n%s", out)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d request lines:\n%s", len(lines), out)
	}
	first, second := lines[0], lines[1]
	if first["level"] != "INFO" || first["method"] != "GET" || first["route"] != "/v1/memory_stores" || first["status"] != float64(200) ||
		first["key"] != key.ID || first["request_id"] == "" || first["duration_ms"] == nil {
		t.Errorf("first line: %v", first)
	}
	if second["route"] != "/v1/memory_stores/:store" || second["status"] != float64(404) || second["path"] != "/v1/memory_stores/memstore_nope" {
		t.Errorf("second line: %v", second)
	}
}

// TestTrustedProxies: X-Forwarded-For names the client in the log only when the peer is a
// trusted proxy.
func TestTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		trusted []*net.IPNet
		want    string
	}{
		{nil, "127.0.0.1"},
		{[]*net.IPNet{{IP: net.IPv4(10, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)}}, "127.0.0.1"}, // the peer is not that proxy
		{[]*net.IPNet{{IP: net.IPv4(127, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)}}, "203.0.113.7"},
	} {
		dir := t.TempDir()
		d, err := gitstore.Open(context.Background(), dir, gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := apikeys.Open(dir)
		var buf testlog.Buffer
		hs := httptest.NewServer(New(d, keys, Options{AccessLog: true, TrustedProxies: tc.trusted,
			Logger: slog.New(slog.NewJSONHandler(&buf, nil))}))
		req, _ := http.NewRequest("GET", hs.URL+"/v1/memory_stores", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hs.Close()
		d.Close()
		if !strings.Contains(buf.String(), `"client":"`+tc.want+`"`) {
			t.Errorf("trusted %v: want client %s in %s", tc.trusted, tc.want, buf.String())
		}
	}
}
