package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// call sends one request to a running gitmem serve with the key (if any) as x-api-key, or
// as the basic auth password on the git route, and returns the status and body.
func call(t *testing.T, method, url, key, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if strings.Contains(url, "/mcp") {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if key != "" {
		if strings.Contains(url, "/git/") {
			req.SetBasicAuth("gitmem", key)
		} else {
			req.Header.Set("x-api-key", key)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// createKey runs gitmem keys create and returns the secret it prints.
func createKey(t *testing.T, c *cli, name string) string {
	t.Helper()
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(c.ok("", "keys", "create", "--name", name))
	if secret == "" {
		t.Fatal("keys create printed no secret")
	}
	return secret
}

// requireKeys checks that every surface of the server at url refuses, with a 401, reads and
// writes sent with no key and with each of the keys given: REST, tool routes, MCP and git.
func requireKeys(t *testing.T, url, store string, keys ...string) {
	t.Helper()
	const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	requests := []struct{ method, path, body string }{
		{"GET", "/v1/memory_stores", ""},
		{"GET", "/v1/memory_stores/" + store + "/memories", ""},
		{"POST", "/v1/memory_stores", `{"name":"intruder"}`},
		{"POST", "/v1/memory_stores/" + store + "/memories", `{"path":"/intruder.md","content":"x"}`},
		{"POST", "/v1/memory_stores/" + store + "/archive", ""},
		{"POST", "/v1/memory_stores/" + store + "/tools/memory_list", `{}`},
		{"POST", "/v1/memory_stores/" + store + "/tools/memory_write", `{"path":"/memories/intruder.md","content":"x"}`},
		{"POST", "/mcp?store=" + store, mcpInit},
		{"GET", "/git/" + store + ".git/info/refs?service=git-upload-pack", ""},
		{"GET", "/git/" + store + ".git/info/refs?service=git-receive-pack", ""},
	}
	for _, key := range append([]string{""}, keys...) {
		for _, r := range requests {
			ct := ""
			if r.body != "" {
				ct = "application/json"
			}
			if status, body := call(t, r.method, url+r.path, key, ct, r.body); status != http.StatusUnauthorized {
				t.Errorf("%s %s with key %.12q: %d, want 401\n%s", r.method, r.path, key, status, body)
			}
		}
	}
}

// TestServeRevokingTheLastKeyKeepsAuth: once keys are in force on a running server, revoking
// the last one leaves every request refused (it used to switch authentication off), and
// gitmem keys revoke warns what that means.
func TestServeRevokingTheLastKeyKeepsAuth(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keyAtStart bool
		unused     bool // the key is revoked before any request has used it
	}{
		{name: "key created before serve", keyAtStart: true},
		{name: "key created while serving"},
		{name: "key created and revoked while serving, never used", unused: true},
	} {
		keyAtStart := tc.keyAtStart
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			var secret string
			if keyAtStart {
				secret = createKey(t, c, "only")
			}
			_, _, url := startServe(t, c)
			status, body := call(t, "POST", url+"/v1/memory_stores", secret, "application/json", `{"name":"notes"}`)
			var st struct{ ID string }
			if json.Unmarshal([]byte(body), &st); status != 200 || st.ID == "" {
				t.Fatalf("create store: %d %s", status, body)
			}
			if !keyAtStart {
				// A key created while the server runs turns keys on, and the first key says so.
				out, errOut, code := c.run("", "keys", "create", "--name", "only")
				secret = regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(out)
				if code != 0 || secret == "" {
					t.Fatalf("keys create while serving: exit %d\n%s%s", code, out, errOut)
				}
				mustContain(t, "the first key", errOut, "this is the first API key", "GITMEM_API_KEY")
				if !tc.unused {
					requireKeys(t, url, st.ID)
				}
			}
			if !tc.unused {
				if status, body := call(t, "GET", url+"/v1/memory_stores/"+st.ID, secret, "", ""); status != 200 {
					t.Fatalf("read with the key: %d %s", status, body)
				}
			}

			out, errOut, code := c.run("", "keys", "revoke", "only")
			if code != 0 {
				t.Fatalf("keys revoke while serving: exit %d\n%s%s", code, out, errOut)
			}
			mustContain(t, "revoke the last key", strings.Join(strings.Fields(errOut), " "), "no active API key is left",
				"A running gitmem serve keeps requiring keys", "refuses every request (401) until a key is created",
				"restarted on a loopback address serves without authentication")

			requireKeys(t, url, st.ID, secret)

			// Nothing was written by the refused requests: a new key sees one store, empty.
			fresh := createKey(t, c, "fresh")
			if status, body := call(t, "GET", url+"/v1/memory_stores", fresh, "", ""); status != 200 || strings.Count(body, `"id":"memstore_`) != 1 || strings.Contains(body, "intruder") {
				t.Errorf("stores after the refused requests: %d %s", status, body)
			}
			if status, body := call(t, "GET", url+"/v1/memory_stores/"+st.ID+"/memories", fresh, "", ""); status != 200 || strings.Contains(body, "intruder") {
				t.Errorf("memories after the refused requests: %d %s", status, body)
			}
			// Revoking a key that leaves others active says nothing of the kind.
			createKey(t, c, "spare")
			if _, errOut, _ := c.run("", "keys", "revoke", "fresh"); strings.Contains(errOut, "no active API key") {
				t.Errorf("revoke with a key left warned: %s", errOut)
			}
		})
	}
}

// TestServeRefusesCrossSiteWrites: without keys, a web page the user visits can send
// requests to the loopback server; state-changing ones from another origin, and bodies a
// form or a simple fetch can send (not application/json), are refused and change nothing.
// Same-origin requests and requests without Origin (curl, the SDKs) still work.
func TestServeRefusesCrossSiteWrites(t *testing.T) {
	c := newCLI(t)
	_, _, url := startServe(t, c)
	send := func(method, path string, header map[string]string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body, req.ContentLength = http.NoBody, 0
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	jsonCT := map[string]string{"Content-Type": "application/json"}
	status, body := send("POST", "/v1/memory_stores", jsonCT, `{"name":"mine"}`)
	var st struct{ ID string }
	if json.Unmarshal([]byte(body), &st); status != 200 || st.ID == "" {
		t.Fatalf("create store: %d %s", status, body)
	}
	const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	refused := []struct {
		name         string
		method, path string
		header       map[string]string
		body         string
		status       int
		says         string
	}{
		{"other origin", "POST", "/v1/memory_stores", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, `{"name":"evil"}`, 403, "cross-origin"},
		{"other port", "POST", "/v1/memory_stores", map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "text/plain"}, `{"name":"evil"}`, 403, "cross-origin"},
		{"origin null", "POST", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Origin": "null", "Content-Type": "text/plain"}, `{"path":"/evil.md","content":"x"}`, 403, "cross-origin"},
		{"sec-fetch-site cross-site", "POST", "/v1/memory_stores", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, `{"name":"evil"}`, 403, "cross-origin"},
		{"cross-origin delete", "DELETE", "/v1/memory_stores/" + st.ID, map[string]string{"Origin": "http://evil.example"}, "", 403, "cross-origin"},
		{"cross-origin archive", "POST", "/v1/memory_stores/" + st.ID + "/archive", map[string]string{"Sec-Fetch-Site": "same-site"}, "", 403, "cross-origin"},
		{"cross-origin tool", "POST", "/v1/memory_stores/" + st.ID + "/tools/memory", map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"},
			`{"command":"create","path":"/memories/evil.md","file_text":"x"}`, 403, "cross-origin"},
		{"cross-origin mcp", "POST", "/mcp?store=" + st.ID, map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, mcpInit, 403, "cross-origin"},
		{"cross-origin git push", "POST", "/git/" + st.ID + ".git/git-receive-pack", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-git-receive-pack-request"}, "0000", 403, "cross-origin"},
		{"text/plain store", "POST", "/v1/memory_stores", map[string]string{"Content-Type": "text/plain"}, `{"name":"evil"}`, 415, "application/json"},
		{"text/plain memory", "POST", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, `{"path":"/evil.md","content":"x"}`, 415, "application/json"},
		{"form memory", "POST", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `{"path":"/evil.md","content":"x"}`, 415, "application/json"},
		{"multipart memory", "POST", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "--x\r\n\r\n--x--", 415, "application/json"},
		{"no content type", "POST", "/v1/memory_stores/" + st.ID + "/memories", nil, `{"path":"/evil.md","content":"x"}`, 415, "application/json"},
		{"text/plain tool", "POST", "/v1/memory_stores/" + st.ID + "/tools/memory_write", map[string]string{"Content-Type": "text/plain"}, `{"path":"/memories/evil.md","content":"x"}`, 415, "application/json"},
		{"text/plain redact", "POST", "/v1/memory_stores/" + st.ID + "/memory_versions/memver_x/redact", map[string]string{"Content-Type": "text/plain"}, `{}`, 415, "application/json"},
		{"text/plain mcp", "POST", "/mcp?store=" + st.ID, map[string]string{"Content-Type": "text/plain", "Accept": "application/json, text/event-stream"}, mcpInit, 415, "application/json"},
		{"latin-1 json", "POST", "/v1/memory_stores", map[string]string{"Content-Type": "application/json; charset=iso-8859-1"}, `{"name":"evil"}`, 415, "UTF-8"},
	}
	for _, r := range refused {
		if status, body := send(r.method, r.path, r.header, r.body); status != r.status || !strings.Contains(body, r.says) {
			t.Errorf("%s: %d %s\nwant %d saying %q", r.name, status, body, r.status, r.says)
		}
	}
	// Nothing was written.
	status, body = send("GET", "/v1/memory_stores", nil, "")
	if status != 200 || strings.Count(body, `"id":"memstore_`) != 1 || strings.Contains(body, "evil") || strings.Contains(body, "archived_at\":\"") {
		t.Errorf("stores after the refused requests: %d %s", status, body)
	}
	if status, body := send("GET", "/v1/memory_stores/"+st.ID+"/memories", nil, ""); status != 200 || strings.TrimSpace(body) != `{"data":[],"next_page":null}` {
		t.Errorf("memories after the refused requests: %d %s", status, body)
	}

	// What the server's own pages, curl with a JSON content type and the SDKs send works.
	allowed := []struct {
		name         string
		method, path string
		header       map[string]string
		body         string
	}{
		{"same origin", "POST", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Origin": url, "Content-Type": "application/json"}, `{"path":"/a.md","content":"a"}`},
		{"sec-fetch-site same-origin", "POST", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}, `{"path":"/b.md","content":"b"}`},
		{"json with charset", "POST", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Content-Type": "application/json; charset=utf-8"}, `{"path":"/c.md","content":"c"}`},
		{"tool", "POST", "/v1/memory_stores/" + st.ID + "/tools/memory_write", jsonCT, `{"path":"/memories/d.md","content":"d"}`},
		{"cross-origin read", "GET", "/v1/memory_stores/" + st.ID + "/memories", map[string]string{"Origin": "http://evil.example"}, ""},
		{"mcp", "POST", "/mcp?store=" + st.ID, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, mcpInit},
		{"body-less archive", "POST", "/v1/memory_stores/" + st.ID + "/archive", nil, ""},
	}
	for _, r := range allowed {
		if status, body := send(r.method, r.path, r.header, r.body); status != 200 {
			t.Errorf("%s: %d %s", r.name, status, body)
		}
	}
}
