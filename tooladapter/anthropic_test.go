package tooladapter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
)

// TestHandleMemoryCommand feeds the handler commands as anthropic-sdk-go parses them from
// a tool_use block, and as a program builds them.
func TestHandleMemoryCommand(t *testing.T) {
	s, st := newTestSession(t, nil)
	ctx := context.Background()
	var cmd anthropic.BetaMemoryTool20250818CommandUnion
	if err := json.Unmarshal([]byte(`{"command":"create","path":"/memories/a.md","file_text":"hi"}`), &cmd); err != nil {
		t.Fatal(err)
	}
	block := s.HandleMemoryCommand(ctx, "toolu_1", cmd)
	raw, _ := json.Marshal(block)
	if got, want := string(raw), `{"tool_use_id":"toolu_1","content":[{"text":"File created successfully at: /memories/a.md","type":"text"}],"type":"tool_result"}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A parsed command that lacks its path is reported, not read as "".
	if err := json.Unmarshal([]byte(`{"command":"view"}`), &cmd); err != nil {
		t.Fatal(err)
	}
	block = s.HandleMemoryCommand(ctx, "toolu_2", cmd)
	raw, _ = json.Marshal(block)
	if got, want := string(raw), `{"tool_use_id":"toolu_2","is_error":true,"content":[{"text":"Error: Missing required parameter \"path\" for the view command","type":"text"}],"type":"tool_result"}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	built := anthropic.BetaMemoryTool20250818CommandUnion{Command: "str_replace", Path: "/memories/a.md", OldStr: "hi", NewStr: "hello"}
	if got := s.HandleMemoryCommand(ctx, "toolu_3", built); got.IsError.Value || !strings.Contains(*got.Content[0].GetText(), "hello") {
		t.Errorf("built command: %+v", got)
	}
	if got := files(t, st)["a.md"]; got != "hello" {
		t.Errorf("content %q", got)
	}
	if got := s.ToolResult(ctx, "toolu_4", "memory_nope", []byte(`{}`)); !got.IsError.Value || !strings.Contains(*got.Content[0].GetText(), `there is no tool named "memory_nope"`) {
		t.Errorf("unknown tool: %+v", got)
	}
}

// TestBetaTools runs the agent tools as anthropic-sdk-go's tool runner does.
func TestBetaTools(t *testing.T) {
	s, st := newTestSession(t, map[string]string{"a.md": "one"})
	tools := map[string]anthropic.BetaTool{}
	for _, tool := range s.BetaTools() {
		tools[tool.Name()] = tool
	}
	if len(tools) != 7 || tools[WriteTool] == nil || tools[ChangesTool] == nil {
		t.Fatalf("tools: %v", tools)
	}
	schema := tools[EditTool].InputSchema()
	if got := strings.Join(schema.Required, ","); got != "path,old_string,new_string" {
		t.Errorf("required %q", got)
	}
	ctx := context.Background()
	out, err := tools[WriteTool].Execute(ctx, json.RawMessage(`{"path":"/memories/b.md","content":"two"}`))
	if err != nil || len(out) != 1 || out[0].OfText.Text != "Created /memories/b.md (3 bytes)." {
		t.Errorf("write: %+v, %v", out, err)
	}
	if _, err := tools[ReadTool].Execute(ctx, json.RawMessage(`{"path":"/memories/none.md"}`)); err == nil ||
		err.Error() != "There is no memory at /memories/none.md; memory_list and memory_search find the ones there are" {
		t.Errorf("read a missing memory: %v", err)
	}
	if got := files(t, st)["b.md"]; got != "two" {
		t.Errorf("b.md = %q", got)
	}
	params := BetaToolParams()
	raw, _ := json.Marshal(params[0])
	if !strings.HasPrefix(string(raw), `{"input_schema":{"properties":`) || !strings.Contains(string(raw), `"name":"memory_list"`) {
		t.Errorf("params: %s", raw)
	}
}

// TestLongView shows a memory longer than a view in parts, each with the view_range of the
// rest.
func TestLongView(t *testing.T) {
	var lines []string
	for i := 1; i <= 3000; i++ {
		lines = append(lines, fmt.Sprintf("line %d of a long memory", i))
	}
	s, _ := newTestSession(t, map[string]string{"long.md": strings.Join(lines, "\n"), "wide.md": strings.Repeat("é", 50000)})
	res := call(t, s, MemoryToolName, map[string]any{"command": "view", "path": "/memories/long.md"})
	if n := len([]rune(res.Content)); n > MaxViewChars+200 {
		t.Errorf("view is %d characters", n)
	}
	if want := "\n[Showing lines 1-486 of 3000: a view shows at most 16000 characters. View the rest with view_range [487, 3000].]"; !strings.HasSuffix(res.Content, want) {
		t.Errorf("view ends %q", res.Content[len(res.Content)-200:])
	}
	res = call(t, s, MemoryToolName, map[string]any{"command": "view", "path": "/memories/long.md", "view_range": []int{487, -1}})
	if !strings.HasPrefix(res.Content, "Here's the content of /memories/long.md with line numbers:\n   487\tline 487 of") ||
		!strings.HasSuffix(res.Content, "View the rest with view_range [970, 3000].]") {
		t.Errorf("second part: %q ... %q", res.Content[:120], res.Content[len(res.Content)-80:])
	}
	res = call(t, s, ReadTool, map[string]any{"path": "/memories/wide.md"})
	if !strings.HasSuffix(res.Content, "\n\n[Line 1 is 50000 characters long and is cut here: a view shows at most 16000 characters.]") ||
		len([]rune(res.Content)) > MaxViewChars+200 {
		t.Errorf("wide line: %d characters, ends %q", len([]rune(res.Content)), res.Content[len(res.Content)-120:])
	}
}
