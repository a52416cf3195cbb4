package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/tooladapter"
)

// headerTransport adds headers to every request of an MCP client.
type headerTransport struct{ header map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect opens an MCP session at url with the official SDK's streamable HTTP client.
func mcpConnect(t *testing.T, ctx context.Context, url string, header map[string]string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gitmem-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: headerTransport{header}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// mcpCall calls a tool and returns its one text content and whether it is an error result.
func mcpCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d contents, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call %s: content %T, want text", name, res.Content[0])
	}
	return text.Text, res.IsError
}

// TestMCP serves the tools over MCP at /mcp on a real server with keys, and drives them
// with the SDK's client: tools, instructions, calls and the actor of writes, read-only keys
// and attachments, and the HTTP errors of a request the route cannot take.
func TestMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	d, derr := gitstore.Open(ctx, dir, gitstore.Options{})
	keys, kerr := apikeys.Open(dir)
	if err := errors.Join(derr, kerr); err != nil {
		t.Fatal(err)
	}
	srv := New(d, keys, Options{}) // no EnableSearch: memory_search says so
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		d.Close()
	})
	newStore := func(name string) string {
		_, body := rawRequest(t, "POST", hs.URL+"/v1/memory_stores", `{"name":"`+name+`","description":"the `+name+` store"}`, nil)
		var store struct{ ID string }
		json.Unmarshal([]byte(body), &store)
		if store.ID == "" {
			t.Fatalf("create store: %s", body)
		}
		return store.ID
	}
	alpha, beta := newStore("alpha"), newStore("beta")
	endpoint := hs.URL + MCPPath
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	mcpHeader := map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream"}
	// postAs posts an initialize with the given Host header and returns the status.
	postAs := func(host string, header map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", endpoint+"?store="+alpha, strings.NewReader(initialize))
		req.Host = host
		for k, v := range mcpHeader {
			req.Header.Set(k, v)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Without keys anyone on the machine may call the tools, so a page that rebinds its
	// DNS name to 127.0.0.1 may not.
	if status := postAs("attacker.example:80", nil); status != http.StatusForbidden {
		t.Errorf("no keys, foreign Host: %d, want 403", status)
	}
	if status := postAs("localhost", nil); status != http.StatusOK {
		t.Errorf("no keys, Host localhost: %d, want 200", status)
	}
	rwKey, rw, _ := keys.Create("agent", apikeys.ReadWrite, "")
	_, ro, _ := keys.Create("reader", apikeys.ReadOnly, "")
	_, betaOnly, _ := keys.Create("beta only", apikeys.ReadWrite, beta)
	// A request with a key may come through a proxy with the public name as its Host.
	if status := postAs("gitmem.example.com", map[string]string{"x-api-key": rw}); status != http.StatusOK {
		t.Errorf("key, foreign Host: %d, want 200", status)
	}

	// A read-write key: the tools as tooladapter defines them, the system prompt as the
	// instructions, and calls that read and write the store as the key.
	cs, err := mcpConnect(t, ctx, endpoint+"?store="+alpha, map[string]string{"x-api-key": rw})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().Instructions; !strings.Contains(got, `holds the memory store "alpha" (read and write)`) {
		t.Errorf("instructions: %q", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defs := tooladapter.Tools()
	if len(tools.Tools) != len(defs) {
		t.Fatalf("%d tools, want %d", len(tools.Tools), len(defs))
	}
	listed := map[string]*mcp.Tool{} // the SDK lists tools by name
	for _, tool := range tools.Tools {
		listed[tool.Name] = tool
	}
	for _, def := range defs {
		got, ok := listed[def.Name]
		if !ok {
			t.Errorf("tool %s is not listed", def.Name)
			continue
		}
		want, _ := json.Marshal(def.InputSchema)
		var wantSchema any
		json.Unmarshal(want, &wantSchema)
		if got.Description != def.Description || !reflect.DeepEqual(got.InputSchema, wantSchema) {
			t.Errorf("tool %s: %q %v, want %q %v", def.Name, got.Description, got.InputSchema, def.Description, wantSchema)
		}
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory_write", map[string]any{"path": "/memories/plan.md", "content": "Ship on Friday.\n"}); isErr {
		t.Fatalf("memory_write: %s", text)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/plan.md"}); isErr || !strings.Contains(text, "Ship on Friday.") {
		t.Errorf("memory view: %v %s", isErr, text)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory_list", nil); isErr || !strings.Contains(text, "/memories/plan.md") {
		t.Errorf("memory_list without arguments: %v %s", isErr, text)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory_search", map[string]any{"query": "friday"}); !isErr || !strings.Contains(text, "Search is not available") {
		t.Errorf("memory_search without a search index: %v %s", isErr, text)
	}
	if text, isErr := mcpCall(t, ctx, cs, "memory_read", map[string]any{}); !isErr || !strings.Contains(text, `Missing required parameter "path"`) {
		t.Errorf("memory_read without a path: %v %s", isErr, text)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_rename", Arguments: map[string]any{}}); err == nil {
		t.Errorf("an unknown tool was called")
	}

	// With x-gitmem-session-id, writes are the session's, as in the rest of the API.
	cs2, err := mcpConnect(t, ctx, endpoint+"?store="+alpha, map[string]string{"authorization": "Bearer " + rw, SessionHeader: "sesn_mcp1"})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, ctx, cs2, "memory", map[string]any{"command": "create", "path": "/memories/log.md", "file_text": "day one\n"}); isErr {
		t.Fatalf("memory create: %s", text)
	}
	st, err := d.Store(ctx, alpha)
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.Versions(ctx, gitstore.VersionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]gitstore.Actor{}
	for _, v := range page.Versions {
		by[v.Path] = v.CreatedBy
	}
	if a := by["/plan.md"]; a.Type != gitstore.APIActor || a.ID != rwKey.ID {
		t.Errorf("/plan.md written by %+v, want the key %s", a, rwKey.ID)
	}
	if a := by["/log.md"]; a.Type != gitstore.SessionActor || a.ID != "sesn_mcp1" || a.APIKeyID != rwKey.ID {
		t.Errorf("/log.md written by %+v, want session sesn_mcp1 via %s", a, rwKey.ID)
	}

	// A read-only key reads, and its writes are error results.
	csRO, err := mcpConnect(t, ctx, endpoint+"?store="+alpha, map[string]string{"x-api-key": ro})
	if err != nil {
		t.Fatal(err)
	}
	if got := csRO.InitializeResult().Instructions; !strings.Contains(got, "read only: you cannot change it") {
		t.Errorf("read-only instructions: %q", got)
	}
	if text, isErr := mcpCall(t, ctx, csRO, "memory_read", map[string]any{"path": "/memories/plan.md"}); isErr || !strings.Contains(text, "Ship on Friday.") {
		t.Errorf("read-only key, memory_read: %v %s", isErr, text)
	}
	if text, isErr := mcpCall(t, ctx, csRO, "memory_write", map[string]any{"path": "/memories/plan.md", "content": "x"}); !isErr || !strings.Contains(text, "may read but not change") {
		t.Errorf("read-only key, memory_write: %v %s", isErr, text)
	}

	// Two stores, one attached read-only by the request: a folder each.
	csTwo, err := mcpConnect(t, ctx, endpoint+"?store="+alpha+":read_write&store="+beta+":read_only", map[string]string{"x-api-key": rw})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, ctx, csTwo, "memory_write", map[string]any{"path": "/memories/beta/x.md", "content": "x"}); !isErr || !strings.Contains(text, "may read but not change") {
		t.Errorf("write to a store attached read-only: %v %s", isErr, text)
	}
	if text, isErr := mcpCall(t, ctx, csTwo, "memory_write", map[string]any{"path": "/memories/alpha/y.md", "content": "y"}); isErr {
		t.Errorf("write to the read-write store of two: %s", text)
	}
	// A prompt after the access says what a store is for, in the instructions.
	csPrompt, err := mcpConnect(t, ctx, endpoint+"?"+url.Values{"store": {"alpha:read_only:Style: follow it", beta}}.Encode(), map[string]string{"x-api-key": rw})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`/memories/alpha/ holds the memory store "alpha" (read only: you cannot change it). Description: the alpha store` + "\n  For this session: Style: follow it",
		`/memories/beta/ holds the memory store "beta" (read and write).`,
	} {
		if got := csPrompt.InitializeResult().Instructions; !strings.Contains(got, want) {
			t.Errorf("instructions with a prompt: %q lacks %q", got, want)
		}
	}

	// The key is checked on every request: a revoked key's session fails.
	if _, err := keys.Revoke("reader"); err != nil {
		t.Fatal(err)
	}
	if _, err := csRO.CallTool(ctx, &mcp.CallToolParams{Name: "memory_list", Arguments: map[string]any{}}); err == nil {
		t.Errorf("a revoked key called a tool")
	}

	// Requests the route refuses are HTTP errors in the API's envelope.
	with := func(k, v string) map[string]string {
		h := map[string]string{k: v}
		for k, v := range mcpHeader {
			h[k] = v
		}
		return h
	}
	for _, c := range []struct {
		name   string
		query  string
		header map[string]string
		status int
		typ    string
	}{
		{"no key", "?store=" + alpha, mcpHeader, 401, "authentication_error"},
		{"a key of another store", "?store=" + alpha, with("x-api-key", betaOnly), 403, "permission_error"},
		{"no store", "", with("x-api-key", rw), 400, "invalid_request_error"},
		{"an unknown store name", "?store=nope", with("x-api-key", rw), 404, "not_found_error"},
		{"an unknown store", "?store=memstore_01NOSUCHSTORE0000000000000", with("x-api-key", rw), 404, "not_found_error"},
		{"a store twice", "?store=" + alpha + "&store=" + alpha, with("x-api-key", rw), 400, "invalid_request_error"},
		{"nine stores", "?store=" + strings.Repeat(alpha+"&store=", 8) + alpha, with("x-api-key", rw), 400, "invalid_request_error"},
		{"a prompt too long", "?store=" + alpha + ":read_write:" + strings.Repeat("p", tooladapter.MaxPromptChars+1), with("x-api-key", rw), 400, "invalid_request_error"},
	} {
		status, body := rawRequest(t, "POST", endpoint+c.query, initialize, c.header)
		if status != c.status || !strings.Contains(body, `"type":"error","error":{"type":"`+c.typ+`"`) {
			t.Errorf("%s: %d %s, want %d %s", c.name, status, body, c.status, c.typ)
		}
	}
	if _, err := mcpConnect(t, ctx, endpoint+"?store="+alpha, nil); err == nil {
		t.Errorf("an MCP client connected without a key")
	}
	// The key of one store uses it; no session is kept, so GET (a stream) is refused.
	csBeta, err := mcpConnect(t, ctx, endpoint+"?store="+beta, map[string]string{"x-api-key": betaOnly})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, ctx, csBeta, "memory_list", map[string]any{}); isErr {
		t.Errorf("store key, memory_list: %s", text)
	}
	if status, body := rawRequest(t, "GET", endpoint, "", map[string]string{"x-api-key": rw, "accept": "text/event-stream"}); status != 405 {
		t.Errorf("GET %s: %d %s", MCPPath, status, body)
	}
}

func TestStoreParam(t *testing.T) {
	for _, c := range []struct {
		in, ref string
		access  tooladapter.Access
		prompt  string
	}{
		{"notes", "notes", tooladapter.ReadWrite, ""},
		{"notes:read_only", "notes", tooladapter.ReadOnly, ""},
		{"notes:read_write", "notes", tooladapter.ReadWrite, ""},
		{"notes:read_only:Style: follow it", "notes", tooladapter.ReadOnly, "Style: follow it"},
		{"notes:read_write:", "notes", tooladapter.ReadWrite, ""},
		{"a:b", "a:b", tooladapter.ReadWrite, ""},                               // a name with ':'
		{"a:b:read_only:x", "a:b", tooladapter.ReadOnly, "x"},                   // ... and an access
		{"notes:read_onlyish", "notes:read_onlyish", tooladapter.ReadWrite, ""}, // not an access
		{"n:read_write:p:read_only", "n", tooladapter.ReadWrite, "p:read_only"},
	} {
		ref, access, prompt := storeParam(c.in)
		if ref != c.ref || access != c.access || prompt != c.prompt {
			t.Errorf("storeParam(%q) = %q %q %q, want %q %q %q", c.in, ref, access, prompt, c.ref, c.access, c.prompt)
		}
	}
}
