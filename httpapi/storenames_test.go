package httpapi

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

// TestStoresByName: store names are unique (a create or rename to a taken name is a 409),
// and a store is named by its name where the API takes a store outside /v1's paths: git URLs
// and /mcp?store=. A key limited to one store learns nothing of the others' names, nor, from
// the refusal of a taken name, the other store's id.
func TestStoresByName(t *testing.T) {
	ctx := context.Background()
	g := startGitServer(t)
	_, secret, err := g.keys.Create("laptop", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	notes := g.createStore(t, secret, "notes")
	other := g.createStore(t, secret, "other")
	g.write(t, secret, notes, "/a.md", "from the API\n")

	hdr := map[string]string{"x-api-key": secret}
	status, body := rawRequest(t, "POST", g.url+"/v1/memory_stores", `{"name":"notes"}`, hdr)
	if status != http.StatusConflict || !strings.Contains(body, "exists already") || strings.Contains(body, notes) {
		t.Errorf("create of a taken name: %d %s", status, body)
	}
	status, body = rawRequest(t, "POST", g.url+"/v1/memory_stores/"+other, `{"name":"notes"}`, hdr)
	if status != http.StatusConflict || !strings.Contains(body, "exists already") {
		t.Errorf("rename to a taken name: %d %s", status, body)
	}

	// /v1 takes ids, and says so to a caller that gives a name.
	status, body = rawRequest(t, "GET", g.url+"/v1/memory_stores/notes/memories", "", hdr)
	if status != http.StatusNotFound || !strings.Contains(body, "named here by its id") {
		t.Errorf("/v1 with a store's name: %d %s", status, body)
	}

	// git clone by name.
	dir := filepath.Join(t.TempDir(), "clone")
	gitOK(t, "", "clone", "-q", g.repoURL(secret, "notes"), dir)
	if got := gitOK(t, dir, "show", "HEAD:a.md"); got != "from the API\n" {
		t.Errorf("clone by name: a.md is %q", got)
	}
	if out, err := gitTry("", "clone", "-q", g.repoURL(secret, "nope"), filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(out, "not found") {
		t.Errorf("clone of an unknown name: %v %s", err, out)
	}

	// MCP by name.
	cs, err := mcpConnect(t, ctx, g.url+MCPPath+"?store=notes", hdr)
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/a.md"}); isErr || !strings.Contains(text, "from the API") {
		t.Errorf("view over MCP by name: %v %s", isErr, text)
	}

	// A key limited to "other" cannot reach "notes" by name, and is not told whether a name
	// exists.
	_, limited, _ := g.keys.Create("one store", apikeys.ReadWrite, other)
	lim := map[string]string{"x-api-key": limited}
	for _, ref := range []string{"notes", "nope"} {
		status, body := rawRequest(t, "POST", g.url+MCPPath+"?store="+ref, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			map[string]string{"x-api-key": limited, "accept": "application/json, text/event-stream"})
		if status != http.StatusForbidden || strings.Contains(body, notes) {
			t.Errorf("limited key, /mcp?store=%s: %d %s", ref, status, body)
		}
	}
	if _, err := mcpConnect(t, ctx, g.url+MCPPath+"?store=other", lim); err != nil {
		t.Errorf("limited key, its own store by name: %v", err)
	}
}
