package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/mcpserver"
	"github.com/gitmem/gitmem/tooladapter"
)

// mcpText calls a tool over MCP and returns its one text content and whether it is an
// error result.
func mcpText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d contents, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call %s: content %T, want text", name, res.Content[0])
	}
	return text.Text, res.IsError
}

// TestMCPStdio runs "gitmem mcp" as an MCP client starts it, as a subprocess spoken to on
// stdio, with the official SDK's client: the tools, the instructions, the memory tool and
// the agent tools (search included) on a read-write store and a read-only one, and then, after
// the process is gone, the versions its writes made.
func TestMCPStdio(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes", "--description", "what I learn")
	c.ok("", "stores", "create", "handbook")
	c.ok("Always run the tests.\n", "put", "handbook", "/rules.md")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(binary, "--data", c.data, "mcp", "--store", "notes", "--store", "handbook:read_only:House rules: follow them")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "gitmem-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			cs.Close()
		}
	}()

	mustContain(t, "instructions", cs.InitializeResult().Instructions, "Memory protocol",
		`/memories/notes/ holds the memory store "notes" (read and write). Description: what I learn`,
		`/memories/handbook/ holds the memory store "handbook" (read only: you cannot change it).`,
		"For this session: House rules: follow them")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]*mcp.Tool{}
	for _, tool := range tools.Tools {
		listed[tool.Name] = tool
	}
	if len(tools.Tools) != 8 {
		t.Errorf("%d tools, want 8", len(tools.Tools))
	}
	for _, def := range tooladapter.Tools() {
		got, ok := listed[def.Name]
		if !ok {
			t.Errorf("tool %s is not listed", def.Name)
			continue
		}
		b, _ := json.Marshal(def.InputSchema)
		var want any
		json.Unmarshal(b, &want)
		if got.Description != def.Description || !reflect.DeepEqual(got.InputSchema, want) {
			t.Errorf("tool %s: %q %v, want %q %v", def.Name, got.Description, got.InputSchema, def.Description, want)
		}
	}

	ok := func(name string, args map[string]any, wants ...string) string {
		t.Helper()
		text, isErr := mcpText(t, ctx, cs, name, args)
		if isErr {
			t.Fatalf("%s %v: error result %s", name, args, text)
		}
		mustContain(t, name, text, wants...)
		return text
	}
	ok("memory", map[string]any{"command": "create", "path": "/memories/notes/todo.md", "file_text": "buy milk\n"}, "created")
	ok("memory", map[string]any{"command": "view", "path": "/memories/notes/todo.md"}, "buy milk")
	ok("memory", map[string]any{"command": "view", "path": "/memories"}, "/memories/notes", "/memories/handbook/rules.md")
	ok("memory_write", map[string]any{"path": "/memories/notes/coffee.md", "content": "Ann takes her espresso without sugar.\n"})
	ok("memory_read", map[string]any{"path": "/memories/notes/coffee.md"}, "espresso without sugar")
	ok("memory_read", map[string]any{"path": "/memories/handbook/rules.md"}, "Always run the tests.")
	// The index catches up with a store before it answers; only its first build may ask
	// to search again.
	for i := 0; ; i++ {
		text, isErr := mcpText(t, ctx, cs, "memory_search", map[string]any{"query": "espresso"})
		if isErr && strings.Contains(text, "search again in a moment") && i < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if isErr || !strings.Contains(text, "/memories/notes/coffee.md") {
			t.Errorf("memory_search: %v %s", isErr, text)
		}
		break
	}
	text, isErr := mcpText(t, ctx, cs, "memory_write", map[string]any{"path": "/memories/handbook/rules.md", "content": "No tests."})
	if !isErr || !strings.Contains(text, "may read but not change") {
		t.Errorf("write to the read-only store: %v %s", isErr, text)
	}
	text, isErr = mcpText(t, ctx, cs, "memory", map[string]any{"command": "delete", "path": "/memories/handbook/rules.md"})
	if !isErr || !strings.Contains(text, "may read but not change") {
		t.Errorf("delete in the read-only store: %v %s", isErr, text)
	}

	// Closing the client closes stdin; gitmem exits and lets go of the data directory.
	closed = true
	if err := cs.Close(); err != nil {
		t.Fatalf("gitmem mcp exited with %v\nstderr: %s", err, stderr.String())
	}
	m := regexp.MustCompile(`session (sesn_[0-9A-Z]+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no session id on stderr: %s", stderr.String())
	}
	session := m[1]
	mustContain(t, "stderr", stderr.String(), "its versions: gitmem log notes --session "+session)
	d, err := gitstore.Open(ctx, c.data, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	versions := func(ref string) []gitstore.Version {
		t.Helper()
		st, err := findStore(ctx, d, ref)
		if err != nil {
			t.Fatal(err)
		}
		page, err := st.Versions(ctx, gitstore.VersionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return page.Versions
	}
	notes := versions("notes")
	if len(notes) != 2 {
		t.Errorf("notes has %d versions, want 2", len(notes))
	}
	for _, v := range notes {
		if v.CreatedBy.Type != gitstore.SessionActor || v.CreatedBy.ID != session {
			t.Errorf("%s %s written by %+v, want session_actor %s", v.Operation, v.Path, v.CreatedBy, session)
		}
	}
	if hb := versions("handbook"); len(hb) != 1 || hb[0].CreatedBy.Type != gitstore.UserActor {
		t.Errorf("handbook versions: %+v", hb)
	}
}

// TestMCPUsageErrors: a wrong store is refused before any MCP, and nothing reaches stdout;
// a wrong command line exits 2, an unknown store 3 (docs/cli.md).
func TestMCPUsageErrors(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "s")
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"mcp"}, "attach a store with --store", exitUsage},
		{[]string{"mcp", "--store", "s:ro"}, `access "ro" is unknown`, exitUsage},
		{[]string{"mcp", "--store", "s", "--session", "x1"}, "must start with sesn_", exitUsage},
		{[]string{"mcp", "--store", "nope"}, `no store with id or name "nope"`, exitNotFound},
		{[]string{"mcp", "--store", "s", "--store", "s:read_only"}, "attached twice", exitUsage},
		{[]string{"mcp", "--store", "s", "--log-level", "loud"}, `--log-level must be debug, info, warn or error, got "loud"`, exitUsage},
	} {
		out, errOut, code := c.run("", tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("gitmem %v: exit %d, stdout %q, stderr %q; want exit %d, no stdout, %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}

// TestMCPStdioOneShot: a client that pipes its calls and closes stdin at once, as a shell
// pipeline does, gets an answer to each call before gitmem mcp exits, from the data
// directory and through a server. The SDK alone stops writing at the end of stdin.
func TestMCPStdioOneShot(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(c.ok("", "keys", "create", "--name", "pipe"))
	calls := func(path string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_write","arguments":{"path":"/memories/` + path + `","content":"piped\n"}}}
{"jsonrpc":"2.0","id":"last","method":"tools/list"}
`
	}
	env := append(os.Environ(), "GITMEM_API_KEY="+secret)
	for _, where := range []string{"data directory", "server"} {
		if where == "server" {
			serveForGit(t, c)
		}
		path := strings.ReplaceAll(where, " ", "-") + ".md"
		out, errOut, code := c.runEnv(env, calls(path), "mcp", "--store", "notes")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", where, code, errOut)
		}
		mustContain(t, where, out, `"id":2,"result"`, "Created /memories/"+path, `"id":"last","result"`, "memory_search")
		if got, errOut, _ := c.runEnv(env, "", "cat", "notes", "/"+path); got != "piped\n" {
			t.Errorf("%s: the memory holds %q %s", where, got, errOut)
		}
	}
}

// mcpAnswer is a JSON-RPC answer that gitmem mcp writes on stdout.
type mcpAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	batch int // the answers on the line: more than one for a batch
}

// mcpAnswers parses stdout, one answer or a batch of them a line, and returns the answers by
// id (the answers with id null under "null", in the order written).
func mcpAnswers(t *testing.T, out string) map[string][]mcpAnswer {
	t.Helper()
	byID := map[string][]mcpAnswer{}
	for line := range strings.Lines(out) {
		var batch []mcpAnswer
		if strings.HasPrefix(line, "[") {
			if err := json.Unmarshal([]byte(line), &batch); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
		} else {
			var a mcpAnswer
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			batch = []mcpAnswer{a}
		}
		for _, a := range batch {
			a.batch = len(batch)
			id := string(a.ID)
			if id == "" {
				id = "null"
			}
			byID[id] = append(byID[id], a)
		}
	}
	return byID
}

// mustRefuse checks that answers are errors with code, whose messages say what each of says.
func mustRefuse(t *testing.T, what string, answers []mcpAnswer, code int, says ...string) {
	t.Helper()
	if len(answers) != len(says) {
		t.Errorf("%s: %d answers, want %d: %+v", what, len(answers), len(says), answers)
		return
	}
	for i, a := range answers {
		if a.Error == nil || a.Error.Code != code || !strings.Contains(a.Error.Message, says[i]) {
			t.Errorf("%s: answer %d is %s %+v, want error %d saying %q", what, i+1, a.Result, a.Error, code, says[i])
		}
	}
}

// TestMCPStdioBadLines: a line that is not a JSON-RPC message gets an error answer, and the
// session goes on: the calls after it are answered. The SDK alone ends the session at the first
// such line, and answers none of the calls after it.
func TestMCPStdioBadLines(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(c.ok("", "keys", "create", "--name", "pipe"))
	long := strings.Repeat("a", mcpserver.MaxMessageBytes)
	calls := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"
[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]
42
{"id":5,"method":"ping"}
{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"pad":"` + long + `"}}}
{"jsonrpc":"2.0","id":"last","method":"tools/list"}
`
	env := append(os.Environ(), "GITMEM_API_KEY="+secret)
	for _, where := range []string{"data directory", "server"} {
		if where == "server" {
			serveForGit(t, c)
		}
		out, errOut, code := c.runEnv(env, calls, "mcp", "--store", "notes")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", where, code, errOut)
		}
		answers := mcpAnswers(t, out)
		nulls := answers["null"]
		if len(nulls) != 4 {
			t.Fatalf("%s: %d answers with id null, want 4:\n%.2000s\n%s", where, len(nulls), out, errOut)
		}
		mustRefuse(t, where+": the answer to the line not JSON", nulls[:1], -32700, "parse error: the line is not JSON")
		mustRefuse(t, where+": the other answers with id null", nulls[1:], -32600,
			"invalid request: JSON-RPC batches are not part of MCP from protocol version 2025-06-18 on",
			"invalid request: a JSON-RPC message is a JSON object, not a number",
			"invalid request: the line is longer than 1048576 bytes")
		mustRefuse(t, where+": the message without jsonrpc", answers["5"], -32600, `"jsonrpc": "2.0"`)
		for _, id := range []string{"2", "3", "4", "6"} {
			if answers[id] != nil {
				t.Errorf("%s: the line of id %s is answered: %+v", where, id, answers[id])
			}
		}
		if len(answers["1"]) != 1 || len(answers[`"last"`]) != 1 {
			t.Fatalf("%s: initialize and the last tools/list are not both answered:\n%.2000s\n%s", where, out, errOut)
		}
		mustContain(t, where+": tools/list", string(answers[`"last"`][0].Result), "memory_search")
	}
}

// TestMCPStdioBatches: in a session of MCP 2025-03-26, which has JSON-RPC batches, a batch of
// calls is answered with a batch; a batch that the SDK would not answer (one with a
// notification), or would end the session on (empty, or two calls with one id), gets an error
// answer, and the session goes on.
func TestMCPStdioBatches(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	calls := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]
[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":4,"method":"ping"}]
[]
[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]
{"jsonrpc":"2.0","id":"last","method":"tools/list"}
`
	out, errOut, code := c.run(calls, "mcp", "--store", "notes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	answers := mcpAnswers(t, out)
	for _, id := range []string{"2", "3"} {
		if len(answers[id]) != 1 || answers[id][0].Error != nil || answers[id][0].batch != 2 {
			t.Errorf("the batch's call %s: %+v, want an answer in a batch of 2", id, answers[id])
		}
	}
	mustContain(t, "tools/list in the batch", string(answers["3"][0].Result), "memory_search")
	mustRefuse(t, "the answers with id null", answers["null"], -32600,
		"message 1 of the batch is a notification", "the batch is empty", "message 2 of the batch has the id 5")
	if answers["4"] != nil || answers["5"] != nil {
		t.Errorf("a batch refused is run: %+v %+v", answers["4"], answers["5"])
	}
	if len(answers[`"last"`]) != 1 {
		t.Fatalf("the last tools/list is not answered:\n%.2000s\n%s", out, errOut)
	}
	mustContain(t, "tools/list", string(answers[`"last"`][0].Result), "memory_search")
}

// TestMCPStdioThroughServer: while gitmem serve holds the data directory, "gitmem mcp" on
// stdio forwards to the server's /mcp with the key, as one session whose writes are versions
// of that session; the server's version is in the MCP server info.
func TestMCPStdioThroughServer(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("", "stores", "create", "Team Wiki", "--description", "how we work")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(c.ok("", "keys", "create", "--name", "mcp"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sid := "sesn_01M83PZ34EVJY3C18AZVHGZ9ME"
	client := mcp.NewClient(&mcp.Implementation{Name: "gitmem-test", Version: "1"}, nil)
	connect := func() (*mcp.ClientSession, *bytes.Buffer) {
		t.Helper()
		cmd := exec.Command(binary, "--data", c.data, "mcp", "--store", "notes", "--store", "Team Wiki:read_only:Conventions: follow them", "--session", sid)
		cmd.Env = append(os.Environ(), "GITMEM_API_KEY="+secret)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, stderr.String())
		}
		return cs, &stderr
	}
	// What the model is told, and what gitmem says on stderr, from the data directory...
	cs, stderr := connect()
	local := cs.InitializeResult().Instructions
	cs.Close()
	localErr := stderr.String()
	serveForGit(t, c)

	// ... are the same through the server, the stores' prompts included.
	cs, stderr = connect()
	init := cs.InitializeResult()
	if init.Instructions != local {
		t.Errorf("instructions through the server:\n%s\nfrom the data directory:\n%s", init.Instructions, local)
	}
	mustContain(t, "instructions", init.Instructions, "Memory protocol", "For this session: Conventions: follow them")
	if init.ServerInfo == nil || init.ServerInfo.Version == "" {
		t.Errorf("server info: %+v", init.ServerInfo)
	}
	text, isErr := mcpText(t, ctx, cs, "memory", map[string]any{"command": "create", "path": "/memories/notes/todo.md", "file_text": "buy milk\n"})
	if isErr {
		t.Fatalf("create through the server: %s", text)
	}
	text, _ = mcpText(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/notes/todo.md"})
	mustContain(t, "view", text, "buy milk")
	text, isErr = mcpText(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/../x"})
	if !isErr {
		t.Errorf("a bad path is an error result: %s", text)
	}

	// The MCP client learns what others change: memory_changes, and one that waits for the
	// next change while a person writes with the CLI.
	put := func(path, content string) {
		t.Helper()
		if _, errOut, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY="+secret), content, "put", "Team Wiki", path); code != 0 {
			t.Fatalf("put %s: %s", path, errOut)
		}
	}
	put("/conventions.md", "Review every change.\n")
	text, isErr = mcpText(t, ctx, cs, "memory_changes", map[string]any{"since": "1h"})
	mustContain(t, "memory_changes", text, "created /memories/notes/todo.md by session "+sid+" (you)\n", "created /memories/team-wiki/conventions.md by API key apikey_")
	cursor := regexp.MustCompile(`cursor: (evc_\S+)`).FindStringSubmatch(text)
	if isErr || cursor == nil {
		t.Fatalf("memory_changes: %v %s", isErr, text)
	}
	waited := make(chan string, 1)
	go func() { // mcpText may not fail the test from here
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_changes", Arguments: map[string]any{"since": cursor[1], "wait_seconds": 30}})
		if err != nil || len(res.Content) != 1 {
			waited <- fmt.Sprintf("%+v %v", res, err)
			return
		}
		text, _ := res.Content[0].(*mcp.TextContent)
		waited <- text.Text
	}()
	time.Sleep(200 * time.Millisecond)
	put("/release.md", "Friday.\n")
	text = <-waited
	mustContain(t, "memory_changes that waited", text, "created /memories/team-wiki/release.md by API key")
	if strings.Contains(text, "conventions.md") {
		t.Errorf("memory_changes after the cursor repeats an earlier change:\n%s", text)
	}
	cs.Close()
	mustContain(t, "stderr", stderr.String(), "/mcp", sid)
	for _, line := range strings.Split(strings.TrimSpace(localErr), "\n")[1:] { // the first line says where the tools are
		if !strings.Contains(stderr.String(), line+"\n") {
			t.Errorf("stderr through the server lacks %q:\n%s", line, stderr.String())
		}
	}

	out, errOut, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY="+secret), "", "log", "notes", "--session", sid)
	if code != 0 {
		t.Fatalf("log: %s", errOut)
	}
	mustContain(t, "versions of the session", out, "/todo.md", sid)

	// Without the key the server refuses, and the command says what to set.
	errBytes, _ := exec.Command(binary, "--data", c.data, "mcp", "--store", "notes").CombinedOutput()
	mustContain(t, "no key", string(errBytes), "GITMEM_API_KEY")
}

// TestMCPStdioPropose: "gitmem mcp --store team:propose" on the data directory opens no
// proposal for a session that only reads; a session that changes something opens one at its
// first change, reads its change back, and main does not have it.
func TestMCPStdioPropose(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "team")
	c.ok("in main\n", "put", "team", "/main.md")
	session := func(id string, calls func(ctx context.Context, cs *mcp.ClientSession)) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.Command(binary, "--data", c.data, "mcp", "--store", "team:propose", "--session", id)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		client := mcp.NewClient(&mcp.Implementation{Name: "gitmem-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		mustContain(t, "instructions", cs.InitializeResult().Instructions, "your changes are proposed")
		calls(ctx, cs)
	}
	session("sesn_reader", func(ctx context.Context, cs *mcp.ClientSession) {
		if text, isErr := mcpText(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/main.md"}); isErr || !strings.Contains(text, "in main") {
			t.Errorf("view: %v %s", isErr, text)
		}
	})
	mustContain(t, "proposals after a session that read", c.none("", "proposals", "list", "team"), "no proposals")
	session("sesn_writer", func(ctx context.Context, cs *mcp.ClientSession) {
		if text, isErr := mcpText(t, ctx, cs, "memory", map[string]any{"command": "create", "path": "/memories/idea.md", "file_text": "an idea\n"}); isErr {
			t.Fatalf("create: %s", text)
		}
		if text, isErr := mcpText(t, ctx, cs, "memory", map[string]any{"command": "view", "path": "/memories/idea.md"}); isErr || !strings.Contains(text, "an idea") {
			t.Errorf("the session reads its change: %v %s", isErr, text)
		}
	})
	mustContain(t, "proposals after a session that wrote", c.ok("", "proposals", "list", "team"), "Changes by session sesn_writer")
	if _, stderr, code := c.run("", "cat", "team", "/idea.md"); code == 0 {
		t.Errorf("the proposed memory is in main (%s)", stderr)
	}
}
