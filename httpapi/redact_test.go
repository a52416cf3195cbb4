package httpapi

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

// TestRedactRoute redacts a version over HTTP: who may, what the version answers after, and
// that a clone made afterwards over git's smart HTTP has no trace of the content.
func TestRedactRoute(t *testing.T) {
	g := startGitServer(t)
	key, rw, _ := g.keys.Create("writer", apikeys.ReadWrite, "")
	_, ro, _ := g.keys.Create("reader", apikeys.ReadOnly, "")
	store := g.createStore(t, rw, "redact")
	g.write(t, rw, store, "/creds/db.md", "password: Z3BRA-CROSSING-77\n")
	_, leaked, _ := g.read(t, rw, store, "/creds/db.md")
	g.write(t, rw, store, "/notes/a.md", "a\n")
	g.write(t, rw, store, "/creds/db.md", "password: in the vault\n")
	_, current, _ := g.read(t, rw, store, "/creds/db.md")
	route := "/v1/memory_stores/" + store + "/memory_versions/"
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	objects := func() string { return gitOK(t, st.RepoPath(), "cat-file", "--batch-all-objects", "--batch") }

	// A clone made before the redaction has the content (people's clones keep it: the
	// redaction cannot reach them).
	before := filepath.Join(t.TempDir(), "before")
	gitOK(t, "", "clone", "-q", g.repoURL(rw, store), before)
	mustHave(t, "objects of a clone before the redaction", gitOK(t, before, "cat-file", "--batch-all-objects", "--batch"), "Z3BRA")

	session := func(method, path, body string) int {
		status, _ := rawRequest(t, method, g.url+path, body, map[string]string{"x-api-key": rw, SessionHeader: "sesn_01REDACTSESSION000000000"})
		return status
	}
	if status := session("POST", route+leaked+"/redact", "{}"); status != 403 {
		t.Errorf("redact by a session: %d", status)
	}
	if status, body := rawRequest(t, "POST", g.url+route+leaked+"/redact", "{}", map[string]string{"x-api-key": ro}); status != 403 || !strings.Contains(body, "read_only") {
		t.Errorf("redact with a read-only key: %d %s", status, body)
	}
	if status, body := rawRequest(t, "POST", g.url+route+current+"/redact", "", map[string]string{"x-api-key": rw}); status != 400 ||
		!strings.Contains(body, "update or delete the memory first") {
		t.Errorf("redact of the current version: %d %s", status, body)
	}
	if status, _ := rawRequest(t, "POST", g.url+route+"memver_01NOSUCH0000000000000000/redact", "{}", map[string]string{"x-api-key": rw}); status != 404 {
		t.Errorf("redact of an unknown version: %d", status)
	}
	mustHave(t, "objects after refused redactions", objects(), "Z3BRA")

	status, body := rawRequest(t, "POST", g.url+route+leaked+"/redact", "{}", map[string]string{"x-api-key": rw})
	if status != 200 {
		t.Fatalf("redact: %d %s", status, body)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	by, _ := v["redacted_by"].(map[string]any)
	if v["id"] != leaked || v["path"] != nil || v["content"] != nil || v["content_sha256"] != nil || v["content_size_bytes"] != nil ||
		v["redacted_at"] == nil || by["type"] != "api_actor" || by["api_key_id"] != key.ID || v["operation"] != "created" {
		t.Errorf("redacted version: %s", body)
	}
	// The answer is the version, with what the rewrite did as the extension field redaction.
	version, red := splitRedaction(t, body)
	if red["rewritten_commits"].(float64) < 1 || red["old_head"] == nil || red["new_head"] == nil {
		t.Errorf("redaction: %v", red)
	}
	status, again := rawRequest(t, "POST", g.url+route+leaked+"/redact", "", map[string]string{"x-api-key": rw})
	if v2, red2 := splitRedaction(t, again); status != 200 || v2 != version || red2["new_head"] != nil || red2["rewritten_commits"].(float64) != 0 {
		t.Errorf("second redaction: %d %s\nwant %s and nothing rewritten", status, again, body)
	}
	if _, got := rawRequest(t, "GET", g.url+route+leaked+"?view=full", "", map[string]string{"x-api-key": ro}); canonicalJSON(t, got) != version {
		t.Errorf("redacted version read back: %s\nwant %s", got, version)
	}

	after := filepath.Join(t.TempDir(), "after")
	gitOK(t, "", "clone", "-q", g.repoURL(rw, store), after)
	if objs := gitOK(t, after, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(objs, "Z3BRA") {
		t.Error("a clone made after the redaction has the content")
	}
	if objs := objects(); strings.Contains(objs, "Z3BRA") {
		t.Error("the store's repository has the content")
	}
	mustHave(t, "log of a clone made after the redaction", gitOK(t, after, "log", "--format=%B"), "Gitmem-Redacted: "+leaked+" api_actor "+key.ID)
	g.fsck(t, store)
	// A clone of the new history pushes as any other: its rewritten commits are main's already.
	put(t, filepath.Join(after, "notes/c.md"), "c\n")
	gitOK(t, after, "add", "-A")
	gitOK(t, after, "commit", "-qm", "add c")
	gitOK(t, after, "push", "-q", "origin", "main")
	if content, _, ok := g.read(t, rw, store, "/notes/c.md"); !ok || content != "c\n" {
		t.Errorf("pushed memory after the redaction: %q %v", content, ok)
	}
	// The clone from before cannot push its old history back: main moved on without it.
	put(t, filepath.Join(before, "notes/b.md"), "b\n")
	gitOK(t, before, "add", "-A")
	gitOK(t, before, "commit", "-qm", "add b")
	gitFails(t, before, "push", "-q", "origin", "main")
}

// splitRedaction parses the answer of a redaction into the version (as JSON, as GET answers
// it) and its redaction field.
func splitRedaction(t *testing.T, body string) (string, map[string]any) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("redaction answer %q: %v", body, err)
	}
	var red map[string]any
	if err := json.Unmarshal(m["redaction"], &red); err != nil {
		t.Fatalf("redaction field of %q: %v", body, err)
	}
	delete(m, "redaction")
	rest, _ := json.Marshal(m)
	return canonicalJSON(t, string(rest)), red
}

// canonicalJSON is s re-encoded with sorted keys.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
