package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

// jsonString is s as a JSON string, its control characters as \u escapes.
func jsonString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// TestProposalTextControls: a proposal's title is one line without control characters, and
// a comment (on its own or with a rejection) and a store's description hold line breaks
// (\n, \r\n) and tabs but no other control character: anything else is refused with 400
// invalid_request_error, nothing changed. Bidirectional controls are text (right-to-left
// writing needs them) and are kept as they are.
func TestProposalTextControls(t *testing.T) {
	ts := startServer(t, Options{})
	_, rw, _ := ts.keys.Create("person", apikeys.ReadWrite, "")
	_, pk, _ := ts.keys.Create("agent", apikeys.Propose, "")
	h := func(key string) map[string]string {
		return map[string]string{"x-api-key": key, "content-type": "application/json"}
	}
	var store struct{ ID string }
	_, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores", `{"name":"team"}`, h(rw))
	json.Unmarshal([]byte(body), &store)
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID+"/memories", `{"path":"/a.md","content":"a"}`, h(pk)); status != 200 {
		t.Fatalf("the agent's write: %d %s", status, body)
	}
	props := ts.url + "/v1/memory_stores/" + store.ID + "/proposals"
	var list struct {
		Data []proposalJSON `json:"data"`
	}
	_, body = rawRequest(t, "GET", props, "", h(rw))
	json.Unmarshal([]byte(body), &list)
	if len(list.Data) != 1 {
		t.Fatalf("proposals: %s", body)
	}
	one := props + "/" + list.Data[0].ID
	_, before := rawRequest(t, "GET", one, "", h(rw))
	_, storeBefore := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID, "", h(rw))

	const lineRule = "it is one line of text, without control characters"
	// The message as JSON writes it: its \n is \\n there.
	const textRule = `it may hold line breaks (\\n or \\r\\n) and tabs, and no other control character`
	for _, tc := range []struct {
		name, method, url, field, value string
		key                             string
		says                            string
	}{
		{"title with ESC", "PATCH", one, "title", "Tidy\x1b[2J", pk, "title has a control character (U+001B) at byte 4: " + lineRule},
		{"title with a line feed", "PATCH", one, "title", "Tidy\nup", rw, "title has a control character (U+000A) at byte 4"},
		{"title with a tab", "PATCH", one, "title", "Tidy\tup", rw, "(U+0009)"},
		{"title with \\r\\n", "PATCH", one, "title", "Tidy\r\nup", rw, "(U+000D)"},
		{"title with NUL", "PATCH", one, "title", "Tidy\x00", rw, "(U+0000)"},
		{"title with DEL", "PATCH", one, "title", "Tidy\x7f", rw, "(U+007F)"},
		{"title with a C1 control", "PATCH", one, "title", "Tidy\u009b2J", rw, "(U+009B)"},
		{"comment with ESC", "POST", one + "/comments", "body", "LGTM\x1b]0;owned\a", pk, "comment has a control character (U+001B) at byte 4: " + textRule},
		{"comment with a lone \\r", "POST", one + "/comments", "body", "LGTM\rnot", rw, "(U+000D) at byte 4"},
		{"comment with \\r at its end", "POST", one + "/comments", "body", "LGTM\r", rw, "(U+000D)"},
		{"comment with a C1 control", "POST", one + "/comments", "body", "ok\n\u0085", rw, "(U+0085) at byte 3"},
		{"comment with a form feed", "POST", one + "/comments", "body", "ok\f", rw, "(U+000C)"},
		{"rejection's comment with BEL", "POST", one + "/reject", "comment", "no\a", rw, "comment has a control character (U+0007)"},
		{"store description with ESC", "POST", ts.url + "/v1/memory_stores/" + store.ID, "description", "notes\x1b[31m", rw, "description has a control character (U+001B) at byte 5: " + textRule},
		{"new store's description with a lone \\r", "POST", ts.url + "/v1/memory_stores", "description", "a\rb", rw, "description has a control character (U+000D)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := `{"` + tc.field + `":` + jsonString(tc.value) + `}`
			if strings.HasSuffix(tc.url, "/memory_stores") {
				payload = `{"name":"another",` + payload[1:]
			}
			status, body := rawRequest(t, tc.method, tc.url, payload, h(tc.key))
			if status != 400 || !strings.Contains(body, `"invalid_request_error"`) || !strings.Contains(body, tc.says) {
				t.Errorf("%d %s, want 400 invalid_request_error saying %q", status, body, tc.says)
			}
		})
	}
	if _, after := rawRequest(t, "GET", one, "", h(rw)); after != before {
		t.Errorf("the refusals changed the proposal:\n%s\nwas\n%s", after, before)
	}
	if _, after := rawRequest(t, "GET", ts.url+"/v1/memory_stores/"+store.ID, "", h(rw)); after != storeBefore {
		t.Errorf("the refusals changed the store:\n%s\nwas\n%s", after, storeBefore)
	}
	if _, body := rawRequest(t, "GET", ts.url+"/v1/memory_stores", "", h(rw)); strings.Contains(body, "another") {
		t.Errorf("a refused store was made: %s", body)
	}

	// What is taken: bidirectional controls anywhere, line breaks and tabs in a comment and a
	// description; each kept as it was sent.
	const title = "Tidy \u202ecod.exe\u202c \u2067\u05e9\u05dc\u05d5\u05dd\u2069 \u200f"
	const comment = "LGTM\r\nbut\tthis:\n\u202edesrever\u2066 \u061c"
	const desc = "What the team learned\r\n\t\u202eby agents\u202c"
	var p proposalJSON
	if status, body := rawRequest(t, "PATCH", one, `{"title":`+jsonString(title)+`}`, h(pk)); status != 200 {
		t.Fatalf("a title with bidirectional controls: %d %s", status, body)
	} else {
		json.Unmarshal([]byte(body), &p)
	}
	if status, body := rawRequest(t, "POST", one+"/comments", `{"body":`+jsonString(comment)+`}`, h(rw)); status != 201 {
		t.Fatalf("a comment of lines: %d %s", status, body)
	} else {
		json.Unmarshal([]byte(body), &p)
	}
	if p.Title != title || len(p.Comments) != 1 || p.Comments[0].Body != comment {
		t.Errorf("kept %q and %+v", p.Title, p.Comments)
	}
	var info struct{ Description string }
	if status, body := rawRequest(t, "POST", ts.url+"/v1/memory_stores/"+store.ID, `{"description":`+jsonString(desc)+`}`, h(rw)); status != 200 {
		t.Fatalf("a description of lines: %d %s", status, body)
	} else if json.Unmarshal([]byte(body), &info); info.Description != desc {
		t.Errorf("description kept as %q", info.Description)
	}
	if status, body := rawRequest(t, "POST", one+"/reject", `{"comment":"no:\tnot\r\nnow"}`, h(rw)); status != 200 || !strings.Contains(body, `"rejected"`) {
		t.Errorf("a rejection with a comment of lines: %d %s", status, body)
	}
}
