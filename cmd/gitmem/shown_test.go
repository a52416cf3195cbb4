package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTextOutputEscapesControls: what a propose key or a pusher chose (a proposal's title, a
// comment, a proposed memory's content in the diff, a commit's author name) reaches the
// reviewer's terminal through the CLI's text output with its control characters and
// bidirectional controls escaped: no escape sequence of theirs runs there, and no line is
// reordered. The API refuses control characters in a title or a comment (400, nothing
// changed), so those carry bidirectional controls, which it keeps.
func TestTextOutputEscapesControls(t *testing.T) {
	c, url, rw, pk, as := servedTeam(t)
	const evil = "\x1b]0;owned\x07\x1b[1A\x1b[2K\r\u009b2J\u202edesrever\u2066"
	const bidi = "\u202edesrever\u2066"
	as(pk, 0, "fine\n"+evil+"\n", "put", "team", "/idea.md")
	id := regexp.MustCompile(`prop_[0-9A-Z]+`).FindString(as(rw, 0, "", "proposals", "list", "team"))
	call := func(method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url+"/v1/memory_stores/"+storeIDOf(t, c, rw)+"/proposals/"+id+path, strings.NewReader(body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("x-api-key", pk)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := call(http.MethodPatch, "", `{"title":"Tidy`+jsonEscapes(evil)+`"}`); st != http.StatusBadRequest {
		t.Errorf("a title with control characters: %d, want 400", st)
	}
	if st := call(http.MethodPost, "/comments", `{"body":"LGTM`+jsonEscapes(evil)+`"}`); st != http.StatusBadRequest {
		t.Errorf("a comment with control characters: %d, want 400", st)
	}
	if st := call(http.MethodPatch, "", `{"title":"Tidy`+jsonEscapes(bidi)+`"}`); st != http.StatusOK {
		t.Fatalf("a title with bidirectional controls: %d", st)
	}
	if st := call(http.MethodPost, "/comments", `{"body":"LGTM`+jsonEscapes(bidi)+`"}`); st != http.StatusCreated {
		t.Fatalf("a comment with bidirectional controls: %d", st)
	}

	// A commit pushed with git whose author's name holds them.
	work := t.TempDir()
	remote := strings.Replace(url, "http://", "http://x:"+rw+"@", 1) + "/git/team.git"
	if out, err := gitAs(work, "clone", "-q", remote, "team"); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	wt := filepath.Join(work, "team")
	os.WriteFile(filepath.Join(wt, "pushed.md"), []byte("pushed\n"), 0o644)
	gitAs(wt, "add", "-A")
	if out, err := gitAs(wt, "commit", "-qm", "pushed", "--author", "Ev\x1b]0;owned\x07il <ev@example.com>"); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	if out, err := gitAs(wt, "push", "-q", "origin", "HEAD:main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}

	// A memory of main that holds them, changed once: its blame, diff and search snippets.
	as(rw, 0, "fine\n"+evil+"\n", "put", "team", "/evil.md")
	as(rw, 0, "changed\n"+evil+"\n", "put", "team", "/evil.md")

	for _, args := range [][]string{{"proposals", "list", "team"}, {"proposals", "show", "team", id}, {"log", "team"},
		{"blame", "team", "/pushed.md"}, {"blame", "team", "/evil.md"}, {"diff", "team", "/evil.md"}, {"search", "team", "owned"}} {
		out := as(rw, 0, "", args...)
		if strings.ContainsAny(out, "\x1b\x07\r\u009b\u202e\u2066") {
			t.Errorf("gitmem %v prints control characters: %q", args, out)
		}
		if args[1] != "list" { // the list's titles and authors hold none
			mustContain(t, strings.Join(args, " "), out, `\x1b]0;owned\a`)
		}
		if args[0] == "proposals" {
			mustContain(t, strings.Join(args, " "), out, "Tidy"+`\u202edesrever\u2066`)
		}
		if args[1] == "show" {
			mustContain(t, strings.Join(args, " "), out, "LGTM"+`\u202edesrever\u2066`)
		}
	}
}

// storeIDOf is the id of the store "team", as key lists it.
func storeIDOf(t *testing.T, c *cli, key string) string {
	t.Helper()
	out, _, _ := c.runEnv(append(os.Environ(), "GITMEM_API_KEY="+key), "", "stores", "list")
	id := regexp.MustCompile(`memstore_[0-9A-Z]+`).FindString(out)
	if id == "" {
		t.Fatalf("no store id in\n%s", out)
	}
	return id
}

// jsonEscapes is s inside a JSON string: its control characters as \u escapes.
func jsonEscapes(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r < 0xa0 {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
