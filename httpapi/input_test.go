package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gitmem/gitmem/tooladapter"
)

// TestInputIsNotTakenSilently: input that would be changed, dropped or ignored on the way in
// is refused with the rule named, on the REST routes, the tool route and MCP, and changes
// nothing.
func TestInputIsNotTakenSilently(t *testing.T) {
	g := startGitServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := g.createStore(t, "", "input")
	g.write(t, "", store, "/dir/a.md", "l1\nl2\nl3")
	head := g.head(t, store)
	memories := g.url + "/v1/memory_stores/" + store + "/memories"
	tools := g.url + "/v1/memory_stores/" + store + "/tools/"

	for _, tc := range []struct{ name, method, url, body, want string }{
		{"invalid UTF-8 in a path", "POST", memories, "{\"path\":\"/b\xff.md\",\"content\":\"x\"}", "not valid UTF-8"},
		{"invalid UTF-8 in content", "POST", memories, "{\"path\":\"/b.md\",\"content\":\"x\xc3\"}", "not valid UTF-8"},
		{"a lone surrogate escape", "POST", memories, `{"path":"/b.md","content":"x\udc00"}`, "surrogate"},
		{"a high surrogate without its low one", "POST", memories, `{"path":"/b\ud800.md","content":"x"}`, "surrogate"},
		{"content null", "POST", memories, `{"path":"/b.md","content":null}`, `"content"`},
		{"gc with an unknown field", "POST", g.url + "/v1/memory_stores/" + store + "/gc", `{"agressive":true}`, `unknown field "agressive"`},
		{"an unknown query parameter", "GET", memories + "?depht=1", "", "depht"},
		{"an unknown query parameter of stores", "GET", g.url + "/v1/memory_stores?limt=2", "", "limt"},
		{"an unknown query parameter of a write", "POST", memories + "?dry_run=true", `{"path":"/b.md","content":"x"}`, "dry_run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := request(t, tc.method, tc.url, "", "", tc.body)
			if msg := errMessage(out); status != 400 || !strings.Contains(msg, tc.want) {
				t.Errorf("%d %v, want a 400 naming %q", status, out, tc.want)
			}
		})
	}
	// the parameters the SDKs send are taken
	for _, u := range []string{memories + "?beta=true&depth=1&limit=5&path_prefix=/&view=basic",
		g.url + "/v1/memory_stores?beta=true&include_archived=true&created_at[gte]=2020-01-01T00:00:00Z&limit=3"} {
		if status, out := request(t, "GET", u, "", "", ""); status != 200 {
			t.Errorf("GET %s: %d %v", u, status, out)
		}
	}
	if status, out := request(t, "GET", memories+"?depht=1", "", "", ""); status == 400 &&
		!strings.Contains(errMessage(out), "depth") {
		t.Errorf("the refusal should list the parameters the route takes: %v", out)
	}

	cs, err := mcpConnect(t, ctx, g.url+MCPPath+"?store="+store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range []struct {
		name, tool, in, want string
		isError              bool
	}{
		{"invalid UTF-8 in a tool input", "memory_write", "{\"path\":\"/memories/b\xff.md\",\"content\":\"x\"}", "not valid UTF-8", true},
		{"a lone surrogate in a tool input", "memory", `{"command":"create","path":"/memories/b.md","file_text":"\udc00"}`, "surrogate", true},
		{"an unknown field of an agent tool", "memory_read", `{"path":"/memories/dir/a.md","veiw_range":[1,2]}`, `"veiw_range"`, true},
		{"an unknown field of memory_write", "memory_write", `{"path":"/memories/b.md","content":"x","overwrite":true}`, `"overwrite"`, true},
		// The memory tool keeps the reference implementation's answers: it ignores unknown
		// fields, ignores a view_range that is not two numbers (memory_read refuses one, as
		// its schema says), and shows a folder named with a trailing / with a doubled /.
		{"the memory tool ignores unknown fields, as the reference does", "memory", `{"command":"view","path":"/memories/dir/a.md","bogus":1}`,
			"Here's the content of /memories/dir/a.md with line numbers:\n     1\tl1\n     2\tl2\n     3\tl3", false},
		{"view ignores a view_range of one number, as the reference does", "memory", `{"command":"view","path":"/memories/dir/a.md","view_range":[2]}`,
			"Here's the content of /memories/dir/a.md with line numbers:\n     1\tl1\n     2\tl2\n     3\tl3", false},
		{"memory_read refuses a view_range of three numbers", "memory_read", `{"path":"/memories/dir/a.md","view_range":[1,2,3]}`, "view_range must be two line numbers", true},
		{"view of a folder with a trailing / doubles it, as the reference does", "memory", `{"command":"view","path":"/memories/dir/"}`, "\t/memories/dir//a.md", false},
		{"memory_list takes its schema's maximum limit", "memory_list", `{"path_prefix":"/memories","limit":1000}`, "/memories/dir/a.md", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := request(t, "POST", tools+tc.tool, "", "", tc.in)
			content, _ := out["content"].(string)
			if status != 200 || out["is_error"] != tc.isError || !strings.Contains(content, tc.want) {
				t.Errorf("tool route: %d %v, want is_error %v and %q", status, out, tc.isError, tc.want)
			}
			var args map[string]any
			if json.Unmarshal([]byte(tc.in), &args) == nil && utf8.ValidString(tc.in) && !strings.Contains(tc.in, `\u`) {
				text, isErr := mcpCall(t, ctx, cs, tc.tool, args)
				if isErr != tc.isError || !strings.Contains(text, tc.want) {
					t.Errorf("MCP: %v %q, want is_error %v and %q", isErr, text, tc.isError, tc.want)
				}
			}
		})
	}
	if got := g.head(t, store); got != head {
		t.Fatalf("main moved from %s to %s: refused input changed the store", head, got)
	}
}

// TestToolAnswersAreBounded: no tool answer to a model is longer than MaxAnswerChars, on the
// tool route and over MCP; an ambiguous str_replace names at most a few distinct lines.
func TestToolAnswersAreBounded(t *testing.T) {
	g := startGitServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := g.createStore(t, "", "bounded")
	g.write(t, "", store, "/one-line.md", strings.Repeat("ab", 50000))
	lines := make([]string, 5000)
	for i := range lines {
		lines[i] = "x"
	}
	g.write(t, "", store, "/many-lines.md", strings.Join(lines, "\n"))
	tools := g.url + "/v1/memory_stores/" + store + "/tools/"
	cs, err := mcpConnect(t, ctx, g.url+MCPPath+"?store="+store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range []struct{ name, tool, in, want string }{
		{"ambiguous str_replace on one line", "memory", `{"command":"str_replace","path":"/memories/one-line.md","old_str":"a","new_str":"c"}`,
			"in lines: 1 (50000 occurrences). Please ensure it is unique"},
		{"ambiguous str_replace on many lines", "memory", `{"command":"str_replace","path":"/memories/many-lines.md","old_str":"x","new_str":"y"}`,
			"in lines: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 4990 more (5000 occurrences)"},
		{"ambiguous memory_edit", "memory_edit", `{"path":"/memories/one-line.md","old_string":"a","new_string":"c"}`, "occurs 50000 times in /memories/one-line.md (at lines 1)"},
		// within the cap, the reference implementation's message, byte for byte
		{"ambiguous str_replace within the cap", "memory", `{"command":"str_replace","path":"/memories/many-lines.md","old_str":"x\nx\nx\nx\nx\nx\nx\nx\nx\nx\nx\nx","new_str":"y"}`,
			"Error: No replacement was performed. Multiple occurrences of old_str `x\nx\nx\nx\nx\nx\nx\nx\nx\nx\nx\nx` in lines: 1, 13, 25,"},
		{"a long old_str that is not found", "memory", `{"command":"str_replace","path":"/memories/one-line.md","old_str":"` + strings.Repeat("z", 100000) + `","new_str":"c"}`,
			"is cut here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := request(t, "POST", tools+tc.tool, "", "", tc.in)
			content, _ := out["content"].(string)
			if n := utf8.RuneCountInString(content); status != 200 || n > tooladapter.MaxAnswerChars || !strings.Contains(content, tc.want) {
				t.Errorf("tool route: %d, %d characters (limit %d), want %q in: %.300s", status, n, tooladapter.MaxAnswerChars, tc.want, content)
			}
			var args map[string]any
			json.Unmarshal([]byte(tc.in), &args)
			text, _ := mcpCall(t, ctx, cs, tc.tool, args)
			if n := utf8.RuneCountInString(text); n > tooladapter.MaxAnswerChars {
				t.Errorf("MCP: %d characters, limit %d", n, tooladapter.MaxAnswerChars)
			}
		})
	}
}
