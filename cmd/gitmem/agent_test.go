package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/tooladapter"
)

// runAgentCLI runs the gitmem binary with the Anthropic variables of env only (the
// parent's are dropped), and returns stdout, stderr and the exit code.
func (c *cli) runAgentCLI(env []string, args ...string) (string, string, int) {
	c.t.Helper()
	var kept []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTHROPIC_") {
			kept = append(kept, kv)
		}
	}
	return c.runEnv(append(kept, env...), "", args...)
}

// toolResult is a tool_result block that a request must carry.
type toolResult struct {
	id, content string
	isError     bool
}

// fakeTurn is one exchange with the fake Messages API: what the request must carry for the
// previous turn's tool calls, and the reply.
type fakeTurn struct {
	results []toolResult
	// match, if set, checks the tool results instead of results, and returns what is wrong.
	match      func(got []toolResult) string
	content    []map[string]any // the reply's content blocks
	stopReason string
}

func memoryUse(id string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": "memory", "input": input}
}

func textBlock(text string) map[string]any { return map[string]any{"type": "text", "text": text} }

// fakeMessages plays a scripted Messages API (POST /v1/messages) and checks each request
// that the real SDK client in gitmem sends.
type fakeMessages struct {
	t      *testing.T
	task   string
	system []string // what the system prompt must contain
	turns  []fakeTurn

	mu       sync.Mutex
	requests int
}

func (f *fakeMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := f.t
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	n := f.requests
	fail := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf("request %d: ", n) + fmt.Sprintf(format, args...)
		t.Error(msg)
		w.Header().Set("content-type", "application/json")
		w.Header().Set("x-should-retry", "false")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		fail("unexpected %s %s", r.Method, r.URL.Path)
		return
	}
	if n > len(f.turns) {
		fail("the script has %d turns, and gitmem sent one more request", len(f.turns))
		return
	}
	turn := f.turns[n-1]
	if got := r.Header.Get("x-api-key"); got != "test" {
		fail("x-api-key %q, want test", got)
		return
	}
	if got := r.Header.Get("anthropic-beta"); !strings.Contains(got, "context-management-2025-06-27") {
		fail("anthropic-beta %q lacks context-management-2025-06-27", got)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model     string           `json:"model"`
		MaxTokens int              `json:"max_tokens"`
		Tools     []map[string]any `json:"tools"`
		System    []struct {
			Type, Text string
		} `json:"system"`
		ContextManagement struct {
			Edits []struct {
				Type         string   `json:"type"`
				ExcludeTools []string `json:"exclude_tools"`
			} `json:"edits"`
		} `json:"context_management"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fail("body: %v\n%s", err, body)
		return
	}
	if req.Model == "" || req.MaxTokens <= 0 {
		fail("model %q, max_tokens %d", req.Model, req.MaxTokens)
		return
	}
	hasMemoryTool := slices.ContainsFunc(req.Tools, func(tool map[string]any) bool {
		return tool["type"] == "memory_20250818" && tool["name"] == "memory"
	})
	if !hasMemoryTool {
		fail("tools %v lack the memory tool (type memory_20250818)", req.Tools)
		return
	}
	edits := req.ContextManagement.Edits
	if len(edits) != 1 || edits[0].Type != "clear_tool_uses_20250919" || !slices.Equal(edits[0].ExcludeTools, []string{"memory"}) {
		fail("context_management %+v: want one clear_tool_uses_20250919 edit that excludes the memory tool", req.ContextManagement)
		return
	}
	if len(req.System) != 1 || req.System[0].Type != "text" {
		fail("system %+v: want one text block", req.System)
		return
	}
	for _, want := range append([]string{"Memory protocol", "/memories"}, f.system...) {
		if !strings.Contains(req.System[0].Text, want) {
			fail("the system prompt lacks %q:\n%s", want, req.System[0].Text)
			return
		}
	}
	// The conversation: the task, then per earlier turn the reply and the tool results.
	if len(req.Messages) != 2*n-1 {
		fail("%d messages, want %d", len(req.Messages), 2*n-1)
		return
	}
	first := req.Messages[0]
	if first.Role != "user" || len(first.Content) != 1 || first.Content[0]["text"] != f.task {
		fail("first message %+v, want the task %q", first, f.task)
		return
	}
	if n > 1 {
		prev, user := req.Messages[len(req.Messages)-2], req.Messages[len(req.Messages)-1]
		if prev.Role != "assistant" || len(prev.Content) != len(f.turns[n-2].content) {
			fail("the reply of turn %d is not sent back: %+v", n-1, prev)
			return
		}
		var got []toolResult
		for _, b := range user.Content {
			if b["type"] != "tool_result" {
				fail("a %v block among the tool results", b["type"])
				return
			}
			var text string
			if content, ok := b["content"].([]any); ok {
				for _, c := range content {
					if m, _ := c.(map[string]any); m["type"] == "text" {
						text += m["text"].(string)
					}
				}
			}
			isErr, _ := b["is_error"].(bool)
			got = append(got, toolResult{id: fmt.Sprint(b["tool_use_id"]), content: text, isError: isErr})
		}
		if turn.match != nil {
			if msg := turn.match(got); msg != "" {
				fail("tool results of turn %d: %s:\n%+v", n-1, msg, got)
				return
			}
		} else if user.Role != "user" || !slices.Equal(got, turn.results) {
			fail("tool results of turn %d:\n got  %+v\n want %+v", n-1, got, turn.results)
			return
		}
	}
	w.Header().Set("content-type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": turn.content, "stop_reason": turn.stopReason, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100 * n, "output_tokens": 20},
	})
}

// agentEnv is the environment of a gitmem agent that talks to srv.
func agentEnv(srv *httptest.Server) []string {
	return []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=test"}
}

var sessionLine = regexp.MustCompile(`(?m)^session (sesn_[0-9A-Z]+) `)

// openData opens the data directory, after gitmem exited, until the test ends.
func openData(t *testing.T, c *cli) *gitstore.DataDir {
	t.Helper()
	d, err := gitstore.Open(context.Background(), c.data, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// agentModes are the ways the agent reaches its stores: the data directory, opened by the
// agent; the server that holds it, found through its lock; a server named with --server.
// Through a server, keys are in force.
var agentModes = []string{"local", "lock", "--server"}

// via is how a test's commands reach the data: env and the arguments before the command,
// and stop, which stops the server (if any) so that the test can open the directory.
type via struct {
	env  []string
	pre  []string
	stop func()
}

// reach sets up mode on c: for a server, a key and the server, started.
func reach(t *testing.T, c *cli, mode string) via {
	t.Helper()
	if mode == "local" {
		return via{stop: func() {}}
	}
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(c.ok("", "keys", "create", "--name", "agent"))
	cmd, _, url := startServe(t, c)
	v := via{env: []string{"GITMEM_API_KEY=" + secret}, stop: func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}}
	if mode == "--server" {
		v.pre = []string{"--server", url}
	}
	return v
}

// run runs gitmem as v says, with stdin, and returns stdout, stderr and the exit code.
func (v via) run(c *cli, stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	return c.runEnv(append(os.Environ(), v.env...), stdin, append(slices.Clone(v.pre), args...)...)
}

func TestAgentMemoryTool(t *testing.T) {
	for _, mode := range agentModes {
		t.Run(mode, func(t *testing.T) { testAgentMemoryTool(t, mode) })
	}
}

func testAgentMemoryTool(t *testing.T, mode string) {
	c := newCLI(t)
	c.ok("", "stores", "create", "project notes", "--description", "what we learn about the project")
	v := reach(t, c, mode)
	const task = "Plan the release: keep the plan in memory"
	plan := "# Release plan\n- freeze on Monday\n- ship on Friday\n"
	fake := &fakeMessages{t: t, task: task,
		system: []string{`/memories/ holds the memory store "project notes" (read and write)`, "what we learn about the project"},
		turns: []fakeTurn{
			{content: []map[string]any{textBlock("I will check my memory first."),
				memoryUse("toolu_01", map[string]any{"command": "view", "path": "/memories"})},
				stopReason: "tool_use"},
			{results: []toolResult{{id: "toolu_01",
				content: "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories"}},
				content: []map[string]any{memoryUse("toolu_02",
					map[string]any{"command": "create", "path": "/memories/notes/plan.md", "file_text": plan})},
				stopReason: "tool_use"},
			{results: []toolResult{{id: "toolu_02", content: "File created successfully at: /memories/notes/plan.md"}},
				content: []map[string]any{memoryUse("toolu_03",
					map[string]any{"command": "str_replace", "path": "/memories/notes/plan.md", "old_str": "Friday", "new_str": "Thursday"})},
				stopReason: "tool_use"},
			{results: []toolResult{{id: "toolu_03",
				content: "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" +
					"     1\t# Release plan\n     2\t- freeze on Monday\n     3\t- ship on Thursday\n     4\t"}},
				content:    []map[string]any{textBlock("The plan is in /memories/notes/plan.md.")},
				stopReason: "end_turn"},
		}}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	stdout, stderr, code := c.runAgentCLI(append(agentEnv(srv), v.env...), append(v.pre, "agent", "--store", "project notes", task)...)
	if code != 0 {
		t.Fatalf("gitmem agent: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if fake.requests != 4 {
		t.Errorf("%d requests, want 4", fake.requests)
	}
	if want := "I will check my memory first.\nThe plan is in /memories/notes/plan.md.\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	t.Logf("stderr:\n%s", stderr)
	mustContain(t, "stderr", stderr, "> memory view /memories\n", "> memory create /memories/notes/plan.md\n",
		"> memory str_replace /memories/notes/plan.md\n", "done in 4 turns", "gitmem log 'project notes'")
	m := sessionLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no session id on stderr:\n%s", stderr)
	}
	session := m[1]
	log, _, _ := v.run(c, "", "log", "project notes", "--session", session)
	if lines := strings.Split(strings.TrimSpace(log), "\n"); len(lines) != 3 || strings.Count(log, session) != 2 {
		t.Errorf("gitmem log --session %s:\n%s", session, log)
	}

	v.stop()
	ctx := context.Background()
	s, err := findStore(ctx, openData(t, c), "project notes")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := s.GetByPath(ctx, "/notes/plan.md", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(plan, "Friday", "Thursday", 1); *mem.Content != want {
		t.Errorf("content %q, want %q", *mem.Content, want)
	}
	page, err := s.Versions(ctx, gitstore.VersionFilter{MemoryID: mem.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, v := range page.Versions {
		ops = append(ops, string(v.Operation))
		if v.CreatedBy.Type != gitstore.SessionActor || v.CreatedBy.ID != session {
			t.Errorf("version %s by %+v, want session_actor %s", v.ID, v.CreatedBy, session)
		}
	}
	if got := strings.Join(ops, " "); got != "modified created" {
		t.Errorf("versions %s, want modified created", got)
	}
	bySession, err := s.Versions(ctx, gitstore.VersionFilter{SessionID: session, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(bySession.Versions) != 2 {
		t.Errorf("%d versions of session %s, want 2", len(bySession.Versions), session)
	}
}

func TestAgentReadOnlyStore(t *testing.T) {
	for _, mode := range agentModes {
		t.Run(mode, func(t *testing.T) { testAgentReadOnlyStore(t, mode) })
	}
}

func testAgentReadOnlyStore(t *testing.T, mode string) {
	c := newCLI(t)
	c.ok("", "stores", "create", "Scratch")
	c.ok("", "stores", "create", "Team Wiki")
	c.ok("Use tabs.\n", "put", "Team Wiki", "/style.md")
	v := reach(t, c, mode)
	const task = "Note a todo"
	const session = "sesn_01AGENTTEST0000000000000000"
	fake := &fakeMessages{t: t, task: task,
		system: []string{
			`/memories/scratch/ holds the memory store "Scratch" (read and write)`,
			`/memories/team-wiki/ holds the memory store "Team Wiki" (read only: you cannot change it)`,
			"For this session: Conventions: follow them; ask: never",
		},
		turns: []fakeTurn{
			{content: []map[string]any{
				memoryUse("toolu_01", map[string]any{"command": "create", "path": "/memories/team-wiki/todo.md", "file_text": "x"}),
				memoryUse("toolu_02", map[string]any{"command": "view", "path": "/memories/team-wiki/style.md"}),
			}, stopReason: "tool_use"},
			{results: []toolResult{
				{id: "toolu_01", isError: true,
					content: `Error: /memories/team-wiki/todo.md is in the memory store "Team Wiki", which this session may read but not change`},
				{id: "toolu_02", content: "Here's the content of /memories/team-wiki/style.md with line numbers:\n     1\tUse tabs.\n     2\t"},
			},
				content: []map[string]any{memoryUse("toolu_03",
					map[string]any{"command": "create", "path": "/memories/scratch/todo.md", "file_text": "- use tabs"})},
				stopReason: "tool_use"},
			{results: []toolResult{{id: "toolu_03", content: "File created successfully at: /memories/scratch/todo.md"}},
				content: []map[string]any{textBlock("Done.")}, stopReason: "end_turn"},
		}}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	stdout, stderr, code := c.runAgentCLI(append(agentEnv(srv), v.env...), append(v.pre, "agent", "--session", session,
		"--store", "Scratch", "--store", "Team Wiki:read_only:Conventions: follow them; ask: never", task)...)
	if code != 0 {
		t.Fatalf("gitmem agent: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	t.Logf("stderr:\n%s", stderr)
	mustContain(t, "stderr", stderr, "session "+session+" ",
		`/memories/team-wiki is the store "Team Wiki"`, "read_only)",
		"> memory create /memories/team-wiki/todo.md  (is_error: /memories/team-wiki/todo.md is in the memory store",
		"> memory create /memories/scratch/todo.md\n")

	v.stop()
	ctx := context.Background()
	d := openData(t, c)
	scratch, err := findStore(ctx, d, "Scratch")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := scratch.GetByPath(ctx, "/todo.md", true)
	if err != nil {
		t.Fatal(err)
	}
	if *mem.Content != "- use tabs" {
		t.Errorf("content %q", *mem.Content)
	}
	wiki, err := findStore(ctx, d, "Team Wiki")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wiki.GetByPath(ctx, "/todo.md", false); !gitstore.IsKind(err, gitstore.KindNotFound) {
		t.Errorf("the read-only store has /todo.md: %v", err)
	}
}

func TestAgentSearchAndMaxTurns(t *testing.T) {
	for _, mode := range agentModes {
		t.Run(mode, func(t *testing.T) { testAgentSearchAndMaxTurns(t, mode) })
	}
}

func testAgentSearchAndMaxTurns(t *testing.T, mode string) {
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	c.ok("Use tabs for Go code.\n", "put", "prefs", "/style.md")
	v := reach(t, c, mode)
	search := func(id string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": tooladapter.SearchTool, "input": map[string]any{"query": "tabs"}}
	}
	found := func(got []toolResult) string {
		if len(got) != 1 || got[0].isError || !strings.Contains(got[0].content, "/memories/style.md") ||
			!strings.Contains(got[0].content, "Use tabs for Go code.") {
			return "want a hit of /memories/style.md"
		}
		return ""
	}
	fake := &fakeMessages{t: t, task: "What is my style?", turns: []fakeTurn{
		{content: []map[string]any{search("toolu_01")}, stopReason: "tool_use"},
		{match: found, content: []map[string]any{search("toolu_02")}, stopReason: "tool_use"},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// With --search, memory_search is declared beside the memory tool.
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"name":"memory_search"`) {
			t.Errorf("memory_search is not among the tools: %s", body)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()

	stdout, stderr, code := c.runAgentCLI(append(agentEnv(srv), v.env...), append(v.pre, "agent", "--store", "prefs", "--search", "--max-turns", "2", "What is my style?")...)
	if code != 1 {
		t.Fatalf("gitmem agent: exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if fake.requests != 2 {
		t.Errorf("%d requests, want 2", fake.requests)
	}
	mustContain(t, "stderr", stderr, `> memory_search "tabs"`, "gitmem: stopped after 2 turns (--max-turns 2) while Claude was still working")
}

func TestAgentUsageErrors(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "s")
	run := func(env []string, args ...string) string {
		t.Helper()
		out, errOut, code := c.runAgentCLI(env, append([]string{"agent"}, args...)...)
		if code == 0 {
			t.Fatalf("gitmem agent %v: exit 0, want a failure\nstdout: %s\nstderr: %s", args, out, errOut)
		}
		return errOut
	}
	key := []string{"ANTHROPIC_API_KEY=test", "ANTHROPIC_BASE_URL=http://127.0.0.1:1"}
	mustContain(t, "no key", run(nil, "--store", "s", "hello"),
		"ANTHROPIC_API_KEY is not set", "export ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL")
	mustContain(t, "no store", run(key, "hello"), "attach a store with --store STORE")
	mustContain(t, "no task", run(key, "--store", "s"), "agent: missing TASK, quoted or as words")
	mustContain(t, "unknown store", run(key, "--store", "nope", "hello"), `no store with id or name "nope"`)
	mustContain(t, "twice", run(key, "--store", "s", "--store", "s:read_only", "hello"), "attached twice")
	mustContain(t, "bad session", run(key, "--store", "s", "--session", "abc", "hello"), "must start with sesn_")
	nine := []string{}
	for range 9 {
		nine = append(nine, "--store", "s")
	}
	mustContain(t, "nine", run(key, append(nine, "hello")...), "at most 8")

	// Through a server, what it refuses is said as it says it.
	v := reach(t, c, "lock")
	mustContain(t, "no key, served", run(key, "--store", "s", "hello"), "requires an API key; set GITMEM_API_KEY")
	mustContain(t, "unknown store, served", run(append(key, v.env...), "--store", "nope", "hello"), `no store with id or name "nope"`)
	mustContain(t, "twice, served", run(append(key, v.env...), "--store", "s", "--store", "s:read_only", "hello"), "attached twice")
	mustContain(t, "bad session, served", run(append(key, v.env...), "--store", "s", "--session", "sesn_a.b", "hello"), "must be a session id like sesn_")
}

func TestParseStoreSpec(t *testing.T) {
	long := strings.Repeat("é", tooladapter.MaxPromptChars)
	for _, tc := range []struct {
		in     string
		want   storeSpec
		errHas string
	}{
		{in: "notes", want: storeSpec{ref: "notes", access: tooladapter.ReadWrite}},
		{in: "notes:read_only", want: storeSpec{ref: "notes", access: tooladapter.ReadOnly}},
		{in: "notes:read_write:", want: storeSpec{ref: "notes", access: tooladapter.ReadWrite}},
		{in: "notes:read_only:Rules: a:b, c", want: storeSpec{ref: "notes", access: tooladapter.ReadOnly, prompt: "Rules: a:b, c"}},
		{in: "notes:Rules: a:b", want: storeSpec{ref: "notes", access: tooladapter.ReadWrite, prompt: "Rules: a:b"}},
		{in: "notes:read_write:read_only", want: storeSpec{ref: "notes", access: tooladapter.ReadWrite, prompt: "read_only"}},
		{in: "notes:read_only files are fine", want: storeSpec{ref: "notes", access: tooladapter.ReadWrite, prompt: "read_only files are fine"}},
		{in: "Team Wiki:read_only", want: storeSpec{ref: "Team Wiki", access: tooladapter.ReadOnly}},
		{in: "notes:" + long, want: storeSpec{ref: "notes", access: tooladapter.ReadWrite, prompt: long}},
		{in: "notes:" + long + "x", errHas: "the prompt is 4097 characters; the limit is 4096"},
		{in: "notes:ro", errHas: `access "ro" is unknown`},
		{in: "notes:READ_ONLY:x", errHas: `access "READ_ONLY" is unknown`},
		{in: ":read_only", errHas: "the store is missing"},
		{in: "", errHas: "the store is missing"},
	} {
		got, err := parseStoreSpec(tc.in)
		switch {
		case tc.errHas != "":
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("parseStoreSpec(%.40q): error %v, want one with %q", tc.in, err, tc.errHas)
			}
		case err != nil:
			t.Errorf("parseStoreSpec(%.40q): %v", tc.in, err)
		case got != tc.want:
			t.Errorf("parseStoreSpec(%.40q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestAgentThroughServer: while gitmem serve holds the data directory, gitmem agent runs its
// tools through the server's /mcp, with the server's session prompt, as one session; a store
// prompt, which the server cannot take, is refused in one line.
func TestAgentThroughServer(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "Scratch")
	serveForGit(t, c)
	const task = "Note a todo"
	const session = "sesn_01AGENTSERVED00000000000000"
	fake := &fakeMessages{t: t, task: task,
		system: []string{`/memories/ holds the memory store "Scratch" (read and write)`},
		turns: []fakeTurn{
			{content: []map[string]any{memoryUse("toolu_01", map[string]any{"command": "create", "path": "/memories/todo.md", "file_text": "- tabs"})},
				stopReason: "tool_use"},
			{results: []toolResult{{id: "toolu_01", content: "File created successfully at: /memories/todo.md"}},
				content: []map[string]any{memoryUse("toolu_02", map[string]any{"command": "view", "path": "/memories/nope.md"})}, stopReason: "tool_use"},
			{results: []toolResult{{id: "toolu_02", isError: true, content: "Error: The path /memories/nope.md does not exist. Please provide a valid path."}},
				content: []map[string]any{textBlock("Done.")}, stopReason: "end_turn"},
		}}
	srv := httptest.NewServer(fake)
	defer srv.Close()

	stdout, stderr, code := c.runAgentCLI(agentEnv(srv), "agent", "--session", session, "--store", "Scratch", task)
	if code != 0 {
		t.Fatalf("gitmem agent through the server: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	mustContain(t, "stderr", stderr, "session "+session, "through http://127.0.0.1:", "> memory create /memories/todo.md")
	if got := c.ok("", "cat", "Scratch", "/todo.md"); got != "- tabs" {
		t.Errorf("written through the server: %q", got)
	}
	mustContain(t, "the session's version", c.ok("", "log", "Scratch", "--session", session), "/todo.md", session)

	// A store's prompt goes to the server, and into the system prompt.
	brief := &fakeMessages{t: t, task: task, system: []string{"For this session: be brief"},
		turns: []fakeTurn{{content: []map[string]any{textBlock("Done.")}, stopReason: "end_turn"}}}
	srv2 := httptest.NewServer(brief)
	defer srv2.Close()
	if _, stderr, code = c.runAgentCLI(agentEnv(srv2), "agent", "--store", "Scratch:read_write:be brief", task); code != 0 || brief.requests != 1 {
		t.Errorf("a store prompt through the server: exit %d, %d requests: %s", code, brief.requests, stderr)
	}
}

// TestAgentInterrupted: Ctrl-C during a turn ends the run with 130 and says what the run
// left, not only that it was cancelled.
func TestAgentInterrupted(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	asked := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so that the server sees the client go
		asked <- struct{}{}
		select { // the turn never ends: the user interrupts it
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	defer srv.Close()
	cmd := exec.Command(binary, "--data", c.data, "agent", "--store", "prefs", "Remember my style.")
	cmd.Env = append(append(os.Environ(), agentEnv(srv)...), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the agent never asked the model:\n%s", stderr.String())
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("interrupted agent: %v, want exit 130", err)
	}
	mustContain(t, "stderr", stderr.String(), "gitmem: interrupted in turn 1")
}
