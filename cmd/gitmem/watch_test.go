package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// watchAPI is a Messages API that answers each request from a list of replies and keeps
// the first user message of each conversation (the task of a run).
type watchAPI struct {
	mu      sync.Mutex
	replies [][]map[string]any // content blocks; a reply with a tool_use stops for tool use
	tasks   []string
	n       int
}

func (f *watchAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(req.Messages) == 1 {
		f.tasks = append(f.tasks, req.Messages[0].Content[0]["text"].(string))
	}
	content := []map[string]any{textBlock("Nothing more to do.")}
	if f.n < len(f.replies) {
		content = f.replies[f.n]
	}
	f.n++
	stop := "end_turn"
	if content[0]["type"] == "tool_use" {
		stop = "tool_use"
	}
	w.Header().Set("content-type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "msg_w", "type": "message", "role": "assistant", "model": "m",
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
}

func (f *watchAPI) runs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tasks...)
}

// TestAgentWatch: gitmem agent --watch runs the task, then runs again when someone else
// changes the store, with what changed in the task; its own writes do not wake it; Ctrl-C
// stops it cleanly.
func TestAgentWatch(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "Scratch")
	serveForGit(t, c)
	api := &watchAPI{replies: [][]map[string]any{
		{memoryUse("toolu_01", map[string]any{"command": "create", "path": "/memories/summary.md", "file_text": "empty"})},
		{textBlock("Summary written.")},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	const task = "Keep /memories/summary.md a summary of the other notes"
	cmd := exec.Command(binary, "--data", c.data, "agent", "--store", "Scratch", "--watch", "--watch-quiet", "300ms", task)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTHROPIC_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, agentEnv(srv)...)
	var stderr bytes.Buffer
	var mu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	errText := func() string { mu.Lock(); defer mu.Unlock(); return stderr.String() }
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited for %s; stderr:\n%s", what, errText())
			}
		}
	}
	waitFor("the first run to end", func() bool { return strings.Contains(errText(), "watching \"Scratch\"") })
	// Its own write (summary.md) does not wake it.
	time.Sleep(time.Second)
	if runs := api.runs(); len(runs) != 1 || runs[0] != task {
		t.Fatalf("runs after the first: %q\n%s", runs, errText())
	}
	// Two writes by someone else, close together: one run that names both.
	c.ok("Use tabs\n", "put", "Scratch", "/style.md")
	c.ok("Ship on Fridays\n", "put", "Scratch", "/release.md")
	waitFor("a second run", func() bool { return len(api.runs()) == 2 })
	second := api.runs()[1]
	mustContain(t, "the second run's task", second, "memory.created /memories/style.md by", "memory.created /memories/release.md by", task)
	waitFor("the watch to go on", func() bool { return strings.Count(errText(), "watching \"Scratch\"") == 2 })
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after Ctrl-C: %v\n%s", err, errText())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Ctrl-C did not stop the watch:\n%s", errText())
	}
	mustContain(t, "stderr", errText(), "stopped watching", "2 change(s) by others")
	if got := c.ok("", "cat", "Scratch", "/summary.md"); got != "empty" {
		t.Errorf("the agent's write: %q", got)
	}
}

// TestAgentWatchNeedsServer: without a server nobody else can change the stores, so --watch
// says what it needs.
func TestAgentWatchNeedsServer(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "Scratch")
	_, stderr, code := c.runAgentCLI([]string{"ANTHROPIC_API_KEY=test"}, "agent", "--store", "Scratch", "--watch", "task")
	if code != 2 || !strings.Contains(stderr, "--watch needs a running gitmem serve") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
