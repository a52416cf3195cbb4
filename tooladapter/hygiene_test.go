package tooladapter

import (
	"context"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets"
	"github.com/gitmem/gitmem/secrets/secrettest"
)

// toolWrite is one tool call that puts text holding a secret into /memories/notes.md (or,
// for creates, /memories/new.md), which holds "seed\n" before each call.
type toolWrite struct {
	name, tool string
	input      func(text string) map[string]any
	path       string
}

var toolWrites = []toolWrite{
	{"create", MemoryToolName, func(x string) map[string]any {
		return map[string]any{"command": "create", "path": "/memories/new.md", "file_text": x}
	}, "new.md"},
	{"str_replace", MemoryToolName, func(x string) map[string]any {
		return map[string]any{"command": "str_replace", "path": "/memories/notes.md", "old_str": "seed", "new_str": x}
	}, "notes.md"},
	{"insert", MemoryToolName, func(x string) map[string]any {
		return map[string]any{"command": "insert", "path": "/memories/notes.md", "insert_line": 1, "insert_text": x}
	}, "notes.md"},
	{"memory_write", WriteTool, func(x string) map[string]any {
		return map[string]any{"path": "/memories/new.md", "content": x}
	}, "new.md"},
	{"memory_edit", EditTool, func(x string) map[string]any {
		return map[string]any{"path": "/memories/notes.md", "old_string": "seed", "new_string": x}
	}, "notes.md"},
}

func TestToolsApplyTheSecretsPolicy(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []gitstore.SecretsPolicy{gitstore.SecretsReject, gitstore.SecretsRedact, gitstore.SecretsOff} {
		s, st := newTestSession(t, nil)
		if _, err := st.UpdateInfo(ctx, gitstore.StorePatch{Policy: &gitstore.PolicyPatch{Secrets: &mode}, Actor: testActor}); err != nil {
			t.Fatal(err)
		}
		for _, w := range toolWrites {
			for _, sample := range secrettest.Samples() {
				t.Run(string(mode)+"/"+w.name+"/"+sample.Name, func(t *testing.T) {
					st.Delete(ctx, gitstore.DeleteInput{Path: "/new.md", Actor: testActor})
					if _, err := st.Write(ctx, gitstore.WriteInput{Path: "/notes.md", Content: "seed\n", Actor: testActor}); err != nil {
						t.Fatal(err)
					}
					res := call(t, s, w.tool, w.input(sample.Content))
					stored := files(t, st)[w.path]
					if strings.Contains(res.Content, sample.Secret) && mode != gitstore.SecretsOff {
						t.Fatalf("the answer echoes the secret: %s", res.Content)
					}
					switch mode {
					case gitstore.SecretsReject:
						if !res.IsError || !strings.Contains(res.Content, sample.Kind+" at line") {
							t.Fatalf("answer = %+v, want an error naming %s and where", res, sample.Kind)
						}
						if strings.Contains(stored, sample.Secret) {
							t.Fatal("a rejected secret was stored")
						}
					case gitstore.SecretsRedact:
						if res.IsError || !strings.Contains(res.Content, "redacted a secret before saving ("+sample.Kind) {
							t.Fatalf("answer = %+v, want a note on the redaction of %s", res, sample.Kind)
						}
						if strings.Contains(stored, sample.Secret) || !strings.Contains(stored, secrets.Marker(sample.Kind)) {
							t.Fatalf("stored %q, want the marker in place of the secret", stored)
						}
					case gitstore.SecretsOff:
						if res.IsError || strings.Contains(res.Content, "redacted") || !strings.Contains(stored, sample.Secret) {
							t.Fatalf("answer = %+v, stored %q; want the content stored as it is", res, stored)
						}
					}
				})
			}
		}
	}
}

func TestToolsReportQuotas(t *testing.T) {
	ctx := context.Background()
	s, st := newTestSession(t, map[string]string{"a.md": "12345"})
	max := 1
	if _, err := st.UpdateInfo(ctx, gitstore.StorePatch{Policy: &gitstore.PolicyPatch{MaxMemories: &max}, Actor: testActor}); err != nil {
		t.Fatal(err)
	}
	res := call(t, s, MemoryToolName, map[string]any{"command": "create", "path": "/memories/b.md", "file_text": "x"})
	if !res.IsError || !strings.Contains(res.Content, "2 memories, past its quota max_memories of 1") {
		t.Fatalf("answer = %+v, want the quota error", res)
	}
}
