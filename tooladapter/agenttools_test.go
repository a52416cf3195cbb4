package tooladapter

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// dates hides the times in memory_list's lines.
var dates = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d`)

func TestAgentTools(t *testing.T) {
	seed := map[string]string{"notes/a.md": "alpha\nbeta\nalpha", "notes/deep/b.md": "bee", "top.md": "top"}
	tests := []struct {
		name, tool, in, want string
		after                map[string]string // nil: unchanged
	}{
		{"list all", ListTool, `{}`, "Memories under /memories/ (size, last changed, path):\n" +
			"16B\tD\t/memories/notes/a.md\n3B\tD\t/memories/notes/deep/b.md\n3B\tD\t/memories/top.md", nil},
		{"list a folder one level", ListTool, `{"path_prefix":"/memories/notes","depth":1}`,
			"Memories under /memories/notes/ (size, last changed, path):\n16B\tD\t/memories/notes/a.md\n-\t-\t/memories/notes/deep/", nil},
		{"list with a limit", ListTool, `{"limit":1}`,
			"The first 1 entries under /memories/ (size, last changed, path); raise limit or list a subfolder for more:\n16B\tD\t/memories/notes/a.md", nil},
		{"list an empty folder", ListTool, `{"path_prefix":"/memories/none/"}`, "No memories under /memories/none/.", nil},
		{"list a memory", ListTool, `{"path_prefix":"/memories/top.md"}`, "Error: /memories/top.md is a memory, not a folder; read it with memory_read", nil},
		{"list bad depth", ListTool, `{"depth":-1}`, "Error: depth must be 0 (every memory below) or 1 or more levels, got -1", nil},
		{"list bad limit", ListTool, `{"limit":5000}`, "Error: limit must be between 1 and 1000, got 5000", nil},
		{"list outside", ListTool, `{"path_prefix":"/etc/"}`, "Error: Path must start with /memories, got: /etc/", nil},

		{"read", ReadTool, `{"path":"/memories/notes/a.md"}`,
			"Here's the content of /memories/notes/a.md with line numbers:\n     1\talpha\n     2\tbeta\n     3\talpha", nil},
		{"read a range", ReadTool, `{"path":"/memories/notes/a.md","view_range":[2,2]}`,
			"Here's the content of /memories/notes/a.md with line numbers:\n     2\tbeta", nil},
		{"read a bad range", ReadTool, `{"path":"/memories/notes/a.md","view_range":[2]}`, "Error: view_range must be two line numbers [start, end], got 1", nil},
		{"read a folder", ReadTool, `{"path":"/memories/notes"}`, "Error: /memories/notes is a folder, not a memory; use memory_list to see what it holds", nil},
		{"read the root", ReadTool, `{"path":"/memories"}`, "Error: /memories is a folder, not a memory; use memory_list to see what it holds", nil},
		{"read missing", ReadTool, `{"path":"/memories/x.md"}`, "Error: There is no memory at /memories/x.md; memory_list and memory_search find the ones there are", nil},
		{"read without path", ReadTool, `{}`, `Error: Missing required parameter "path" for memory_read`, nil},

		{"write new", WriteTool, `{"path":"/memories/new/n.md","content":"hello"}`, "Created /memories/new/n.md (5 bytes).",
			map[string]string{"new/n.md": "hello"}},
		{"write over", WriteTool, `{"path":"/memories/top.md","content":"TOP!"}`, "Replaced the content of /memories/top.md (4 bytes).",
			map[string]string{"top.md": "TOP!"}},
		{"write same", WriteTool, `{"path":"/memories/top.md","content":"top"}`, "/memories/top.md already has this content; nothing changed.", nil},
		{"write over a folder", WriteTool, `{"path":"/memories/notes","content":"x"}`, "Error: /memories/notes is a folder, not a memory; choose another path", nil},
		{"write below a memory", WriteTool, `{"path":"/memories/top.md/x","content":"x"}`,
			"Error: Cannot write /memories/top.md/x: /memories/top.md is a file, so it cannot hold other files", nil},
		{"write without content", WriteTool, `{"path":"/memories/x"}`, `Error: Missing required parameter "content" for memory_write`, nil},
		{"write too much", WriteTool, `{"path":"/memories/x","content":"` + strings.Repeat("é", 60000) + `"}`,
			"Error: Cannot write /memories/x: content is 120000 bytes; the limit is 102400 bytes", nil},

		{"edit", EditTool, `{"path":"/memories/notes/a.md","old_string":"beta","new_string":"BETA"}`,
			"Edited /memories/notes/a.md: replaced 1 occurrence. The first change, with line numbers:\n     1\talpha\n     2\tBETA\n     3\talpha",
			map[string]string{"notes/a.md": "alpha\nBETA\nalpha"}},
		{"edit ambiguous", EditTool, `{"path":"/memories/notes/a.md","old_string":"alpha","new_string":"A"}`,
			"Error: old_string occurs 2 times in /memories/notes/a.md (at lines 1, 3); add surrounding text to make it unique, or set replace_all", nil},
		{"edit all", EditTool, `{"path":"/memories/notes/a.md","old_string":"alpha","new_string":"A","replace_all":true}`,
			"Edited /memories/notes/a.md: replaced 2 occurrences. The first change, with line numbers:\n     1\tA\n     2\tbeta\n     3\tA",
			map[string]string{"notes/a.md": "A\nbeta\nA"}},
		{"edit missing text", EditTool, `{"path":"/memories/top.md","old_string":"nope","new_string":"x"}`,
			"Error: old_string was not found in /memories/top.md; read it with memory_read and copy the text exactly, without the line numbers", nil},
		{"edit empty old", EditTool, `{"path":"/memories/top.md","old_string":"","new_string":"x"}`,
			"Error: old_string is empty: give the exact text to replace, copied from /memories/top.md", nil},
		{"edit missing memory", EditTool, `{"path":"/memories/nope.md","old_string":"a","new_string":"x"}`,
			"Error: There is no memory at /memories/nope.md; memory_list and memory_search find the ones there are", nil},
		{"edit replace_all of wrong type", EditTool, `{"path":"/memories/top.md","old_string":"t","new_string":"x","replace_all":"yes"}`,
			`Error: Parameter "replace_all" of memory_edit must be true or false`, nil},

		{"delete", DeleteTool, `{"path":"/memories/top.md"}`, "Deleted /memories/top.md.",
			map[string]string{"notes/a.md": "alpha\nbeta\nalpha", "notes/deep/b.md": "bee"}},
		{"delete folder", DeleteTool, `{"path":"/memories/notes/"}`, "Deleted the folder /memories/notes/ and the 2 memories in it.",
			map[string]string{"top.md": "top"}},
		{"delete root", DeleteTool, `{"path":"/memories/"}`, "Error: Cannot delete the /memories directory itself", nil},
		{"delete missing", DeleteTool, `{"path":"/memories/zz"}`, "Error: There is no memory or folder at /memories/zz", nil},

		{"search without an index", SearchTool, `{"query":"alpha"}`,
			"Error: Search is not available here: this gitmem runs without a search index. Use memory_list and memory_read instead", nil},
		{"search without query", SearchTool, `{}`, `Error: Missing required parameter "query" for memory_search`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, st := newTestSession(t, seed)
			res := call(t, s, tc.tool, []byte(tc.in))
			if got := dates.ReplaceAllString(res.Content, "D"); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if got, want := res.IsError, strings.HasPrefix(tc.want, "Error: "); got != want {
				t.Errorf("is_error = %v, want %v", got, want)
			}
			want := maps.Clone(seed)
			if tc.after != nil {
				want = tc.after
				if !strings.HasPrefix(tc.name, "delete") {
					want = maps.Clone(seed)
					maps.Copy(want, tc.after)
				}
			}
			if got := files(t, st); !maps.Equal(got, want) {
				t.Errorf("files after: got %q, want %q", got, want)
			}
		})
	}
}

func TestSearchTool(t *testing.T) {
	ctx := context.Background()
	d := newTestData(t)
	st := newTestStore(t, d, "notes", map[string]string{"deploy.md": "We deploy on Fridays.\nNever on Mondays.", "food.md": "Pizza"})
	svc := search.New(d, search.Options{})
	t.Cleanup(func() { svc.Close() })
	s, err := NewSession(ctx, Options{Stores: []Attachment{{Store: st}}, Search: svc})
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, s, SearchTool, map[string]any{"query": "deploying friday"})
	want := "1 memory matches \"deploying friday\"; the best 1, with their matching lines (line number, tab, text):\n\n/memories/deploy.md (score "
	if !strings.HasPrefix(res.Content, want) || !strings.HasSuffix(res.Content, "\n     1\tWe deploy on Fridays.") {
		t.Errorf("got %q", res.Content)
	}
	// A write is found by the next search (read your writes).
	call(t, s, MemoryToolName, map[string]any{"command": "create", "path": "/memories/x/pets.md", "file_text": "The cat is called Friday"})
	res = call(t, s, SearchTool, map[string]any{"query": "cat", "path_prefix": "/memories/x/"})
	if !strings.Contains(res.Content, "/memories/x/pets.md") {
		t.Errorf("search after write: %q", res.Content)
	}
	res = call(t, s, SearchTool, map[string]any{"query": "pizza", "path_prefix": "/memories/x/"})
	if res.Content != `No memories match "pizza".` {
		t.Errorf("search outside the prefix: %q", res.Content)
	}
}

// TestSessionWithSeveralStores attaches three stores: each is a folder of /memories,
// read-only ones refuse changes, and every write is recorded as the session.
func TestSessionWithSeveralStores(t *testing.T) {
	ctx := context.Background()
	d := newTestData(t)
	prefs := newTestStore(t, d, "User Prefs", map[string]string{"style.md": "tabs"})
	team := newTestStore(t, d, "Team docs!", map[string]string{"onboarding/setup.md": "install go"})
	twin := newTestStore(t, d, "user prefs", nil)
	s, err := NewSession(ctx, Options{APIKeyID: "apikey_X", Stores: []Attachment{
		{Store: prefs, Prompt: "What the user likes."},
		{Store: team, Access: ReadOnly},
		{Store: twin},
	}})
	if err != nil {
		t.Fatal(err)
	}
	twinSlug := "user-prefs-" + strings.ToLower(strings.TrimPrefix(twin.ID(), gitstore.StorePrefix))
	res := call(t, s, MemoryToolName, map[string]any{"command": "view", "path": "/memories"})
	want := "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n" +
		"14B\t/memories\n10B\t/memories/team-docs/\n10B\t/memories/team-docs/onboarding/\n" +
		"4B\t/memories/user-prefs/\n4B\t/memories/user-prefs/style.md\n0B\t/memories/" + twinSlug + "/"
	if res.Content != want {
		t.Errorf("view /memories:\ngot  %q\nwant %q", res.Content, want)
	}
	for _, tc := range []struct{ tool, in, want string }{
		{MemoryToolName, `{"command":"view","path":"/memories/team-docs/onboarding/setup.md"}`,
			"Here's the content of /memories/team-docs/onboarding/setup.md with line numbers:\n     1\tinstall go"},
		{MemoryToolName, `{"command":"create","path":"/memories/team-docs/x.md","file_text":"x"}`,
			`Error: /memories/team-docs/x.md is in the memory store "Team docs!", which this session may read but not change`},
		{WriteTool, `{"path":"/memories/team-docs/onboarding/setup.md","content":"x"}`,
			`Error: /memories/team-docs/onboarding/setup.md is in the memory store "Team docs!", which this session may read but not change`},
		{MemoryToolName, `{"command":"create","path":"/memories/nowhere/x.md","file_text":"x"}`,
			"Error: The path /memories/nowhere/x.md does not exist: there is no memory store at /memories/nowhere. The stores are /memories/user-prefs/, /memories/team-docs/, /memories/" + twinSlug + "/"},
		{MemoryToolName, `{"command":"create","path":"/memories/x.md","file_text":"x"}`,
			"Error: The path /memories/x.md does not exist: there is no memory store at /memories/x.md. The stores are /memories/user-prefs/, /memories/team-docs/, /memories/" + twinSlug + "/"},
		{MemoryToolName, `{"command":"delete","path":"/memories/user-prefs"}`,
			`Error: Cannot delete /memories/user-prefs: it is the root of the memory store "User Prefs" (` + prefs.ID() + ")"},
		{MemoryToolName, `{"command":"rename","old_path":"/memories/user-prefs/style.md","new_path":"/memories/` + twinSlug + `/style.md"}`,
			"Error: Cannot rename /memories/user-prefs/style.md to /memories/" + twinSlug + "/style.md: they are in different memory stores (\"User Prefs\" (" + prefs.ID() + ") and \"user prefs\" (" + twin.ID() + ")); create it in the other store and delete it here"},
		{MemoryToolName, `{"command":"str_replace","path":"/memories/user-prefs/style.md","old_str":"tabs","new_str":"spaces"}`,
			"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tspaces"},
		{ListTool, `{"depth":1}`, "Memories under /memories/ (size, last changed, path):\n-\t-\t/memories/user-prefs/\n-\t-\t/memories/team-docs/\n-\t-\t/memories/" + twinSlug + "/"},
	} {
		if res := call(t, s, tc.tool, []byte(tc.in)); res.Content != tc.want {
			t.Errorf("%s %s:\ngot  %q\nwant %q", tc.tool, tc.in, res.Content, tc.want)
		}
	}
	if got := files(t, prefs); got["style.md"] != "spaces" {
		t.Errorf("prefs after the edit: %q", got)
	}
	vs, err := prefs.Versions(ctx, gitstore.VersionFilter{SessionID: s.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs.Versions) != 1 || vs.Versions[0].CreatedBy.Type != gitstore.SessionActor || vs.Versions[0].CreatedBy.APIKeyID != "apikey_X" {
		t.Errorf("versions of the session: %+v", vs.Versions)
	}
	prompt := s.SystemPrompt()
	for _, want := range []string{"/memories/user-prefs/ holds the memory store \"User Prefs\" (read and write).\n  For this session: What the user likes.",
		"/memories/team-docs/ holds the memory store \"Team docs!\" (read only: you cannot change it)."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, prompt)
		}
	}
}

func TestSessionLimits(t *testing.T) {
	ctx := context.Background()
	d := newTestData(t)
	var many []Attachment
	for i := 0; i < MaxStores+1; i++ {
		many = append(many, Attachment{Store: newTestStore(t, d, fmt.Sprintf("s%d", i), nil)})
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "a session needs at least one memory store"},
		{Options{Stores: many}, "a session can attach at most 8 memory stores, got 9"},
		{Options{Stores: many[:2], ID: "sess_1"}, `session id "sess_1" must start with sesn_`},
		{Options{Stores: []Attachment{{Store: many[0].Store, Prompt: strings.Repeat("p", MaxPromptChars+1)}}},
			"the prompt for memory store " + many[0].Store.ID() + " is 4097 characters; the limit is 4096"},
		{Options{Stores: []Attachment{{Store: many[0].Store, Access: "write"}}}, `access "write" of memory store ` + many[0].Store.ID() + " is unknown; use read_write, read_only or propose"},
		{Options{Stores: []Attachment{{Store: many[0].Store}, {Store: many[0].Store}}}, "memory store " + many[0].Store.ID() + " is attached twice"},
	} {
		if _, err := NewSession(ctx, tc.opts); err == nil || err.Error() != tc.want || !gitstore.IsKind(err, gitstore.KindInvalid) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestToolDefinitions(t *testing.T) {
	tools := Tools()
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too short to use unprompted: %q", tool.Name, tool.Description)
		}
		raw, err := json.Marshal(tool.InputSchema)
		if err != nil || !strings.Contains(string(raw), `"type":"object"`) {
			t.Errorf("%s: schema %s, %v", tool.Name, raw, err)
		}
		// Every required property is defined.
		props, _ := tool.InputSchema["properties"].(map[string]any)
		req, _ := tool.InputSchema["required"].([]string)
		for _, r := range req {
			if props[r] == nil {
				t.Errorf("%s: required %q has no schema", tool.Name, r)
			}
		}
	}
	if got, want := strings.Join(names, " "), "memory memory_list memory_search memory_read memory_write memory_edit memory_delete memory_changes"; got != want {
		t.Errorf("tools %q, want %q", got, want)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{"User Prefs": "user-prefs", "  Team -- docs!! ": "team-docs", "Ünïcode 世界": "ünïcode-世界", "!!!": "store"} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMountPaths: a client that only knows the stores' infos places them where a session
// does, two names of one slug included.
func TestMountPaths(t *testing.T) {
	ctx := context.Background()
	d := newTestData(t)
	var atts []Attachment
	var infos []gitstore.StoreInfo
	for _, name := range []string{"Team Wiki", "team-wiki", "notes"} {
		st := newTestStore(t, d, name, nil)
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		atts, infos = append(atts, Attachment{Store: st}), append(infos, info)
	}
	for _, n := range []int{1, 3} {
		sess, err := NewSession(ctx, Options{Stores: atts[:n]})
		if err != nil {
			t.Fatal(err)
		}
		got := MountPaths(infos[:n])
		for i, info := range infos[:n] {
			if want, _ := sess.MountPath(info.ID); got[i] != want {
				t.Errorf("%d stores: MountPaths[%d] = %q, the session has %q", n, i, got[i], want)
			}
		}
	}
}

// TestSessionAt reads the store as it was, through the memory tool and the agent tools, and
// changes nothing.
func TestSessionAt(t *testing.T) {
	ctx := context.Background()
	s, st := newTestSession(t, map[string]string{"plan.md": "first plan"})
	before := st.Head()
	call(t, s, MemoryToolName, map[string]any{"command": "str_replace", "path": "/memories/plan.md", "old_str": "first", "new_str": "second"})
	call(t, s, MemoryToolName, map[string]any{"command": "create", "path": "/memories/later.md", "file_text": "later"})
	past, err := NewSession(ctx, Options{Stores: []Attachment{{Store: st}}, At: before})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, in, want string }{
		{MemoryToolName, `{"command":"view","path":"/memories/plan.md"}`, "Here's the content of /memories/plan.md with line numbers:\n     1\tfirst plan"},
		{MemoryToolName, `{"command":"view","path":"/memories"}`, "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n10B\t/memories\n10B\t/memories/plan.md"},
		{MemoryToolName, `{"command":"view","path":"/memories/later.md"}`, "Error: The path /memories/later.md does not exist. Please provide a valid path."},
		{ReadTool, `{"path":"/memories/plan.md"}`, "Here's the content of /memories/plan.md with line numbers:\n     1\tfirst plan"},
		{MemoryToolName, `{"command":"create","path":"/memories/x.md","file_text":"x"}`,
			`Error: /memories/x.md cannot be changed: this session reads the memory store "test" as it was at ` + before},
		{SearchTool, `{"query":"plan"}`, "Error: Search is not available here: this gitmem runs without a search index. Use memory_list and memory_read instead"},
	} {
		if res := call(t, past, tc.tool, []byte(tc.in)); dates.ReplaceAllString(res.Content, "D") != tc.want {
			t.Errorf("%s %s:\ngot  %q\nwant %q", tc.tool, tc.in, res.Content, tc.want)
		}
	}
	if got := files(t, st); got["plan.md"] != "second plan" || got["later.md"] != "later" || len(got) != 2 {
		t.Errorf("the store after reading the past: %q", got)
	}
	if _, err := NewSession(ctx, Options{Stores: []Attachment{{Store: st}}, At: "last monday"}); !gitstore.IsKind(err, gitstore.KindInvalid) {
		t.Errorf("a bad at: %v", err)
	}
}
