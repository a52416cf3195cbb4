package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
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
	// The clone from before cannot push its old history back: main moved on without it;
	// merged with main's new history (git pull), nor to main, nor to a proposal branch.
	put(t, filepath.Join(before, "notes/b.md"), "b\n")
	gitOK(t, before, "add", "-A")
	gitOK(t, before, "commit", "-qm", "add b")
	gitFails(t, before, "push", "-q", "origin", "main")
}

// TestRedactRefusesOldHistory: a clone made before a redaction, merged with the store's new
// history (git pull) and pushed, would bring the redacted content back; where the old
// commits were pushed with plain git (so no other rule refuses them), the push is refused,
// to main and to a proposal branch.
func TestRedactRefusesOldHistory(t *testing.T) {
	g := startGitServer(t)
	_, rw, _ := g.keys.Create("writer", apikeys.ReadWrite, "")
	store := g.createStore(t, rw, "redact")
	g.write(t, rw, store, "/notes/a.md", "a\n")
	before := filepath.Join(t.TempDir(), "before")
	gitOK(t, "", "clone", "-q", g.repoURL(rw, store), before)
	put(t, filepath.Join(before, "creds/db.md"), "password: Z3BRA-CROSSING-77\n")
	gitOK(t, before, "add", "-A")
	gitOK(t, before, "commit", "-qm", "the password")
	put(t, filepath.Join(before, "creds/db.md"), "password: in the vault\n")
	gitOK(t, before, "commit", "-qam", "out of memory")
	gitOK(t, before, "push", "-q", "origin", "main")
	var versions struct {
		Data []struct{ ID, Operation string }
	}
	mem := ""
	if _, _, ok := g.read(t, rw, store, "/creds/db.md"); !ok {
		t.Fatal("the pushed memory is not there")
	}
	var list struct{ Data []struct{ ID, Path string } }
	g.api(t, "GET", "/v1/memory_stores/"+store+"/memories?path_prefix=/creds/", rw, "", &list)
	for _, m := range list.Data {
		mem = m.ID
	}
	g.api(t, "GET", "/v1/memory_stores/"+store+"/memory_versions?memory_id="+mem, rw, "", &versions)
	leaked := versions.Data[len(versions.Data)-1].ID // the oldest: created
	if status := g.api(t, "POST", "/v1/memory_stores/"+store+"/memory_versions/"+leaked+"/redact", rw, "{}", nil); status != 200 {
		t.Fatalf("redact: %d", status)
	}
	put(t, filepath.Join(before, "notes/b.md"), "b\n")
	gitOK(t, before, "add", "-A")
	gitOK(t, before, "commit", "-qm", "add b")
	gitOK(t, before, "-c", "user.name=p", "-c", "user.email=p@x", "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
	for _, ref := range []string{"main", "HEAD:refs/heads/proposals/old"} {
		out := gitFails(t, before, "push", "origin", ref)
		mustHave(t, "push of the old history merged, to "+ref, out, "is history from before a redaction", "git reset --hard origin/main")
	}
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if objs := gitOK(t, st.RepoPath(), "cat-file", "--batch-all-objects", "--batch"); strings.Contains(objs, "Z3BRA") {
		t.Error("a refused push left the content in the store's repository")
	}
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

// TestRedactReachesProposals: a redaction takes the content out of everything the server
// serves, proposals included. A propose key pushes a proposal branch and opens a proposal
// through the API (a fork of the store), another proposal is rejected and kept, and the
// review reads the open one (which makes its branch) before and after; then a read_only
// key's mirror clone finds the content on no ref and in no object, the proposer reads the
// version redacted, the forks on disk hold it nowhere, and the answer says which proposals
// it reached and that the content does not remain.
func TestRedactReachesProposals(t *testing.T) {
	const secret = "ZEBRA-PLUTO-4471"
	ctx := context.Background()
	g := startGitServer(t)
	_, rw, _ := g.keys.Create("writer", apikeys.ReadWrite, "")
	_, ro, _ := g.keys.Create("reader", apikeys.ReadOnly, "")
	store := g.createStore(t, rw, "ops")
	_, pk, _ := g.keys.Create("agent", apikeys.Propose, store)
	g.write(t, rw, store, "/creds/db.md", "launch code: "+secret+"\n")
	_, leaked, _ := g.read(t, rw, store, "/creds/db.md")
	base := "/v1/memory_stores/" + store
	hdr := map[string]string{"x-api-key": rw, "content-type": "application/json"}
	session := func(s string) map[string]string {
		return map[string]string{"x-api-key": pk, "content-type": "application/json", SessionHeader: s}
	}
	proposalOf := func(s, path, content string) string {
		t.Helper()
		status, body := rawRequest(t, "POST", g.url+base+"/memories", fmt.Sprintf(`{"path":%q,"content":%q}`, path, content), session(s))
		if status != 200 {
			t.Fatalf("a write with the propose key: %d %s", status, body)
		}
		var list struct {
			Data []proposalJSON `json:"data"`
		}
		_, body = rawRequest(t, "GET", g.url+base+"/proposals?state=open", "", hdr)
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Data {
			if p.Author["session_id"] == s || p.Author["id"] == s {
				return p.ID
			}
		}
		t.Fatalf("no open proposal of session %s: %s", s, body)
		return ""
	}

	// A proposal branch pushed with git, on the history that holds the content.
	wt := filepath.Join(t.TempDir(), "wt")
	gitOK(t, "", "clone", "-q", g.repoURL(pk, store), wt)
	put(t, filepath.Join(wt, "notes/plan.md"), "plan\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "plan")
	gitOK(t, wt, "push", "-q", "origin", "HEAD:proposals/notes")
	// A proposal through the API, one rejected (its fork is kept) and one approved.
	open := proposalOf("sesn_01REDACTOPEN000000000000", "/ideas.md", "idea\n")
	rejected := proposalOf("sesn_01REDACTREJECT0000000000", "/other.md", "other\n")
	if status, body := rawRequest(t, "POST", g.url+base+"/proposals/"+rejected+"/reject", `{}`, hdr); status != 200 {
		t.Fatalf("reject: %d %s", status, body)
	}
	approved := proposalOf("sesn_01REDACTAPPROVE000000000", "/approved.md", "yes\n")
	if status, body := rawRequest(t, "POST", g.url+base+"/proposals/"+approved+"/approve", `{}`, hdr); status != 200 {
		t.Fatalf("approve: %d %s", status, body)
	}
	if status, body := rawRequest(t, "GET", g.url+base+"/proposals/"+open, "", hdr); status != 200 { // makes its branch
		t.Fatalf("get the proposal: %d %s", status, body)
	}

	g.write(t, rw, store, "/creds/db.md", "launch code: in the vault\n")
	status, body := rawRequest(t, "POST", g.url+base+"/memory_versions/"+leaked+"/redact", "{}", hdr)
	if status != 200 {
		t.Fatalf("redact: %d %s", status, body)
	}
	_, red := splitRedaction(t, body)
	if red["content_remains"] != false {
		t.Errorf("content_remains in %s: no other version holds these bytes", body)
	}
	mustHave(t, "the proposals the redaction reached", body, `{"id":"`+open+`","action":"redacted"}`, `{"id":"`+rejected+`","action":"redacted"}`)
	if status, body := rawRequest(t, "GET", g.url+base+"/proposals/"+open, "", hdr); status != 200 || strings.Contains(body, secret) {
		t.Fatalf("get the proposal after the redaction: %d %s", status, body)
	} else {
		mustHave(t, "the proposal's thread", body, "Version "+leaked+" was redacted from the store")
	}
	if status, body := rawRequest(t, "POST", g.url+base+"/gc", "", hdr); status != 200 {
		t.Fatalf("gc: %d %s", status, body)
	}

	// A read_only key's mirror has every ref, and the content on none, in no object.
	mirror := filepath.Join(t.TempDir(), "mirror")
	gitOK(t, "", "clone", "-q", "--mirror", g.repoURL(ro, store), mirror)
	refs := strings.Fields(gitOK(t, mirror, "for-each-ref", "--format=%(refname)"))
	mustHave(t, "the mirror's refs", strings.Join(refs, "\n"), "refs/heads/proposals/notes", "refs/heads/proposals/"+open, "refs/heads/proposals/"+approved)
	if out, err := gitTry(mirror, append([]string{"grep", "-l", secret}, refs...)...); err == nil || strings.Contains(out, secret[:5]) || out != "" {
		t.Errorf("git grep %s on the mirror's refs: %v\n%s", secret, err, out)
	}
	if objs := gitOK(t, mirror, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(objs, secret) {
		t.Error("the mirror's objects hold the content")
	}
	st, err := g.data.Store(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if objs := gitOK(t, st.RepoPath(), "cat-file", "--batch-all-objects", "--batch"); strings.Contains(objs, secret) {
		t.Error("the store's repository holds the content")
	}
	// Every fork on disk, of the open proposals and the rejected one.
	forks, _ := filepath.Glob(filepath.Join(g.data.Layout().ProposalForks(store), "prop_*", "repo.git"))
	if len(forks) != 3 {
		t.Errorf("forks on disk: %v", forks)
	}
	for _, repo := range forks {
		if objs := gitOK(t, repo, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(objs, secret) {
			t.Errorf("the fork %s holds the content", repo)
		}
	}

	// The proposer reads the version redacted, and the memory as its fork has it.
	status, body = rawRequest(t, "GET", g.url+base+"/memory_versions/"+leaked+"?view=full", "", session("sesn_01REDACTOPEN000000000000"))
	if status != 200 || strings.Contains(body, secret) || !strings.Contains(body, `"redacted_at":"`) {
		t.Errorf("the proposer reads the redacted version: %d %s", status, body)
	}
	// The proposal is still approvable: its fork's history is the store's, redacted alike.
	if status, body := rawRequest(t, "POST", g.url+base+"/proposals/"+open+"/approve", `{}`, hdr); status != 200 {
		t.Errorf("approve after the redaction: %d %s", status, body)
	}
	if content, _, ok := g.read(t, rw, store, "/ideas.md"); !ok || content != "idea\n" {
		t.Errorf("approved memory: %q %v", content, ok)
	}
	if content, _, _ := g.read(t, rw, store, "/creds/db.md"); content != "launch code: in the vault\n" {
		t.Errorf("/creds/db.md after the approval: %q", content)
	}
	if objs := gitOK(t, st.RepoPath(), "cat-file", "--batch-all-objects", "--batch"); strings.Contains(objs, secret) {
		t.Error("the store's repository holds the content after the approval")
	}
	g.fsck(t, store)
}
