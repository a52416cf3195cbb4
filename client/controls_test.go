package client

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// TestControlsRefused: through the Go client, a proposal's title with a control character,
// a comment with one other than a line break or a tab, and a store's description with one,
// come back as the invalid error they are (400 invalid_request_error), nothing changed; a
// title and a comment with bidirectional controls are taken.
func TestControlsRefused(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	_, rwSecret, _ := srv.keys.Create("person", apikeys.ReadWrite, "")
	_, proposeSecret, _ := srv.keys.Create("agent", apikeys.Propose, "")
	rw := New(srv.url, rwSecret)
	if _, err := rw.CreateStore(ctx, gitstore.CreateStoreInput{Name: "team", Description: "notes\x1b[8m"}); !gitstore.IsKind(err, gitstore.KindInvalid) ||
		!strings.Contains(err.Error(), "description has a control character (U+001B) at byte 5") {
		t.Fatalf("a description with ESC: %v", err)
	}
	st, err := rw.CreateStore(ctx, gitstore.CreateStoreInput{Name: "team", Description: "notes\r\nof\tthe team"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(srv.url, proposeSecret).Store(st.ID()).Write(ctx, gitstore.WriteInput{Path: "/a.md", Content: "a"})
	if err != nil || res.Proposal == "" {
		t.Fatalf("the agent's write: %+v %v", res, err)
	}
	path := "/v1/memory_stores/" + st.ID() + "/proposals/" + res.Proposal
	var p struct {
		Title    string `json:"title"`
		Comments []struct {
			Body string `json:"body"`
		} `json:"comments"`
	}
	if err := rw.Call(ctx, http.MethodGet, path, nil, &p); err != nil {
		t.Fatal(err)
	}
	title := p.Title
	for _, c := range []struct {
		method, sub string
		body        map[string]any
		says        string
	}{
		{http.MethodPatch, "", map[string]any{"title": "Tidy\x1b]0;owned\a"}, "title has a control character (U+001B) at byte 4"},
		{http.MethodPatch, "", map[string]any{"title": "two\nlines"}, "title has a control character (U+000A)"},
		{http.MethodPost, "/comments", map[string]any{"body": "LGTM\u009b2J"}, "comment has a control character (U+009B)"},
		{http.MethodPost, "/reject", map[string]any{"comment": "no\rway"}, "comment has a control character (U+000D)"},
	} {
		err := rw.Call(ctx, c.method, path+c.sub, c.body, nil)
		if !gitstore.IsKind(err, gitstore.KindInvalid) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %s %v: %v, want an invalid error saying %q", c.method, c.sub, c.body, err, c.says)
		}
	}
	if err := rw.Call(ctx, http.MethodGet, path, nil, &p); err != nil || p.Title != title || len(p.Comments) != 0 {
		t.Errorf("the refusals changed the proposal: %+v %v", p, err)
	}
	if err := rw.Call(ctx, http.MethodPatch, path, map[string]any{"title": "Tidy \u202eup"}, &p); err != nil || p.Title != "Tidy \u202eup" {
		t.Errorf("a title with a bidirectional control: %+v %v", p, err)
	}
	if err := rw.Call(ctx, http.MethodPost, path+"/comments", map[string]any{"body": "ok\r\n\u2067\u05d0\u2069"}, &p); err != nil || len(p.Comments) != 1 {
		t.Errorf("a comment of lines with bidirectional controls: %+v %v", p, err)
	}
}
