package httpapi

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

func TestGCRoute(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("writer", apikeys.ReadWrite, "")
	_, ro, _ := ts.keys.Create("reader", apikeys.ReadOnly, "")
	w := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"gc"}`, w)
	base := ts.url + "/v1/memory_stores/" + decodeJSON[struct{ ID string }](t, body).ID
	for _, p := range []string{"/a.md", "/b.md", "/c/d.md"} {
		rawRequest(t, "POST", base+"/memories", `{"path":"`+p+`","content":"x"}`, w)
	}
	if status, body := rawRequest(t, "POST", base+"/gc", "", map[string]string{"x-api-key": ro}); status != 403 {
		t.Errorf("gc with a read_only key: %d %s", status, body)
	}
	status, body := rawRequest(t, "POST", base+"/gc", "", w)
	type stats struct{ Packs, LooseObjects int }
	res := decodeJSON[struct {
		Type          string
		Before, After stats
	}](t, body)
	if status != 200 || res.Type != "memory_store_gc" || res.After.Packs != 1 || res.Before.Packs < 2 {
		t.Errorf("gc: %d %s", status, body)
	}
	if status, body = rawRequest(t, "GET", base+"/memories?path_prefix=/c/", "", w); status != 200 || !strings.Contains(body, "/c/d.md") {
		t.Errorf("list after gc: %d %s", status, body)
	}
}
