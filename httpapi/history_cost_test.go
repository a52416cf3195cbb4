package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
)

// getWithin answers a GET with key, failing the test if the server takes longer than limit.
func getWithin(t *testing.T, url, key string, limit time.Duration) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("x-api-key", key)
	start := time.Now()
	resp, err := (&http.Client{Timeout: limit}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v (after %s)", url, err, time.Since(start).Round(time.Millisecond))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	t.Logf("GET %s: %d in %s", url[strings.LastIndex(url, "/"):], resp.StatusCode, time.Since(start).Round(time.Millisecond))
	return resp.StatusCode, string(raw)
}

// TestDiffAndBlameCost: a diff or a blame costs a bounded time, whatever the contents. The
// line diff searched for the shortest diff without a bound (go-git's diff.Do gives it an
// hour), in time that grows with the product of the lines: two versions of 100 KB that share
// no line (50,000 lines of "a", then of "b") took a read_only key's GET of the diff 18 s of
// the server's CPU, and a blame, which diffs every two consecutive versions, 47 s for four
// such versions, and more for each version more.
func TestDiffAndBlameCost(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("writer", apikeys.ReadWrite, "")
	_, ro, _ := ts.keys.Create("reader", apikeys.ReadOnly, "")
	w := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"costly"}`, w)
	base := ts.url + "/v1/memory_stores/" + decodeJSON[struct{ ID string }](t, body).ID
	a, b := strings.Repeat("a\n", 50000), strings.Repeat("b\n", 50000)
	status, body := rawRequest(t, "POST", base+"/memories", string(must(json.Marshal(map[string]string{"path": "/ab.md", "content": a}))), w)
	if status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	id := decodeJSON[struct{ ID string }](t, body).ID
	for _, c := range []string{b, a, b} {
		if status, body := rawRequest(t, "POST", base+"/memories/"+id, string(must(json.Marshal(map[string]string{"content": c}))), w); status != 200 {
			t.Fatalf("update: %d %s", status, body)
		}
	}
	status, body = getWithin(t, base+"/memories/"+id+"/diff", ro, 8*time.Second)
	if status != 200 {
		t.Fatalf("diff: %d %s", status, body)
	}
	diff := decodeJSON[struct{ Diff string }](t, body).Diff
	removed, added := 0, 0
	for _, l := range strings.Split(diff, "\n") {
		switch l {
		case "-a":
			removed++
		case "+b":
			added++
		}
	}
	if n, m := removed, added; !strings.HasPrefix(diff, "--- a/ab.md\n+++ b/ab.md\n") || n != 50000 || m != 50000 {
		t.Fatalf("diff of a to b: %d lines removed, %d added:\n%.300s", n, m, diff)
	}
	status, body = getWithin(t, base+"/memories/"+id+"/blame", ro, 20*time.Second)
	if status != 200 && !(status == 400 && strings.Contains(body, "time budget")) {
		t.Fatalf("blame: %d %.300s", status, body)
	}
}
