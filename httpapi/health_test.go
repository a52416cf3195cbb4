package httpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/health"
)

// readyz asks the real server's /readyz with key ("" for none).
func readyz(t *testing.T, url, key string) (int, health.Report) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/readyz", nil)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/health+json" {
		t.Fatalf("content type %q", ct)
	}
	var rep health.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, rep
}

// TestReadiness: /readyz passes with every check named, flips to 503 naming the check when
// the data directory cannot be written, git is gone or search stopped, and back; /livez
// answers all along. Without a key, a caller sees statuses, not why.
func TestReadiness(t *testing.T) {
	g := startGitServerWith(t, GitOptions{})
	g.createStore(t, "", "one")

	status, rep := readyz(t, g.url, "")
	if status != 200 || rep.Status != "pass" {
		t.Fatalf("ready: %d %+v", status, rep)
	}
	for _, name := range []string{"stores:open", "catalog:caught-up", "disk:writable", "git:present", "search:up"} {
		if r := rep.Checks[name]; len(r) != 1 || r[0].Status != "pass" || r[0].Time == "" {
			t.Errorf("check %s: %+v", name, r)
		}
	}
	if v := rep.Checks["stores:open"][0].ObservedValue; v != float64(1) {
		t.Errorf("stores open: %v", v)
	}
	if resp, err := http.Get(g.url + "/livez"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("livez: %v %v", resp, err)
	}

	// The disk: the probe's place taken by a directory, so that it cannot be written.
	probe := filepath.Join(g.data.Dir(), ".ready-probe")
	if err := os.MkdirAll(filepath.Join(probe, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	status, rep = readyz(t, g.url, "")
	if status != 503 || rep.Status != "fail" || rep.Checks["disk:writable"][0].Status != "fail" ||
		!strings.Contains(rep.Checks["disk:writable"][0].Output, "not writable") || !strings.Contains(rep.Description, "disk:writable") {
		t.Fatalf("unwritable disk: %d %+v", status, rep)
	}
	os.RemoveAll(probe)
	if status, _ = readyz(t, g.url, ""); status != 200 {
		t.Fatalf("after the disk came back: %d", status)
	}

	// git gone from the PATH.
	t.Setenv("PATH", t.TempDir())
	if status, rep = readyz(t, g.url, ""); status != 503 || rep.Checks["git:present"][0].Status != "fail" {
		t.Fatalf("no git: %d %+v", status, rep)
	}
	t.Setenv("PATH", os.Getenv("PATH"))

	// Search stopped.
	g.idx.Close()
	if status, rep = readyz(t, g.url, ""); status != 503 || rep.Checks["search:up"][0].Status != "fail" {
		t.Fatalf("search closed: %d %+v", status, rep)
	}

	// With keys in force, a caller without one sees that a check failed, not why.
	_, secret, err := g.keys.Create("ops", apikeys.ReadOnly, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, rep = readyz(t, g.url, ""); status != 503 || rep.Checks["search:up"][0].Output != "" {
		t.Fatalf("without a key: %d %+v", status, rep)
	}
	if status, rep = readyz(t, g.url, secret); status != 503 || rep.Checks["search:up"][0].Output == "" {
		t.Fatalf("with a key: %d %+v", status, rep)
	}
}

// TestMetricsGuardSaysHowToSendAKey: a scrape without a key is told which header carries
// one, not to sign in (that is the UI's word).
func TestMetricsGuardSaysHowToSendAKey(t *testing.T) {
	ts := startServer(t, Options{}, func(s *Server) {
		s.EnableMetrics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("up 1\n")) }))
	})
	if _, _, err := ts.keys.Create("prometheus", apikeys.ReadOnly, ""); err != nil {
		t.Fatal(err)
	}
	status, body := rawRequest(t, "GET", ts.url+"/metrics", "", nil)
	if status != http.StatusUnauthorized || !strings.Contains(body, "x-api-key header, or as Authorization: Bearer") || strings.Contains(body, "sign in") {
		t.Errorf("/metrics without a key: %d %s", status, body)
	}
}
