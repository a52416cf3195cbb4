package httpapi

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unportable are paths that a clone cannot hold on some system, with a part of the rule
// that the refusal must name.
var unportable = []struct{ path, rule string }{
	{"/" + strings.Repeat("a", 256) + ".md", "the limit is 255 bytes"},
	{"/dir/" + strings.Repeat("é", 128), "the limit is 255 bytes"},
	{"/CON", "Windows reserves"},
	{"/aux.md", "Windows reserves"},
	{"/notes/NUL.txt", "Windows reserves"},
	{"/com1.md", "Windows reserves"},
	{"/Lpt9.tar.gz", "Windows reserves"},
	{"/conin$.md", "Windows reserves"},
	{"/notes./a.md", "ends with a dot or a space"},
	{"/notes /a.md", "ends with a dot or a space"},
	{"/a.md.", "ends with a dot or a space"},
	{"/a:b.md", "Windows does not allow"},
	{"/a*b.md", "Windows does not allow"},
	{"/a?b.md", "Windows does not allow"},
	{"/a<b.md", "Windows does not allow"},
	{"/a>b.md", "Windows does not allow"},
	{"/a|b.md", "Windows does not allow"},
	{`/a"b.md`, "Windows does not allow"},
	{`/a\b.md`, "Windows does not allow"},
	{"/.Gitmem/x.md", "reserved"},
	{"/.GITMEM", "reserved"},
	{"/Case.md", "differs only in case from /case.md"},
	{"/DIR/x.md", "differs only in case from /dir/"},
	{"/dir/B.md", "differs only in case from /dir/b.md"},
}

// TestUnportableNamesAreRefused: a name that breaks clones (on every system, or on Windows or
// macOS) is refused on every way in (REST, tool route, MCP, git push), with the rule named,
// and nothing changes.
func TestUnportableNamesAreRefused(t *testing.T) {
	g := startGitServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := g.createStore(t, "", "names")
	g.write(t, "", store, "/case.md", "c\n")
	g.write(t, "", store, "/dir/b.md", "b\n")
	g.write(t, "", store, "/other.md", "o\n")
	head := g.head(t, store)
	cs, err := mcpConnect(t, ctx, g.url+MCPPath+"?store="+store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range unportable {
		t.Run(tc.path, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"path": tc.path, "content": "x"})
			status, out := request(t, "POST", g.url+"/v1/memory_stores/"+store+"/memories", "", "", string(body))
			msg := errMessage(out)
			if status/100 != 4 || !strings.Contains(msg, tc.rule) {
				t.Errorf("REST create: %d %q, want a 4xx naming %q", status, msg, tc.rule)
			}
			// a rename onto the name, over REST
			var list struct{ Data []struct{ ID, Path string } }
			g.api(t, "GET", "/v1/memory_stores/"+store+"/memories?path_prefix=/", "", "", &list)
			other := ""
			for _, m := range list.Data {
				if m.Path == "/other.md" {
					other = m.ID
				}
			}
			body, _ = json.Marshal(map[string]string{"path": tc.path})
			status, out = request(t, "POST", g.url+"/v1/memory_stores/"+store+"/memories/"+other, "", "", string(body))
			msg = errMessage(out)
			if status/100 != 4 || !strings.Contains(msg, tc.rule) {
				t.Errorf("REST rename: %d %q, want a 4xx naming %q", status, msg, tc.rule)
			}
			toolRule := tc.rule
			if strings.Contains(tc.path, "\\") {
				toolRule = "has a backslash" // the memory tool's own message: folders are separated by /
			}
			for _, call := range []struct{ tool, in string }{
				{"memory", mustJSON(map[string]string{"command": "create", "path": "/memories" + tc.path, "file_text": "x"})},
				{"memory", mustJSON(map[string]string{"command": "rename", "old_path": "/memories/other.md", "new_path": "/memories" + tc.path})},
				{"memory_write", mustJSON(map[string]string{"path": "/memories" + tc.path, "content": "x"})},
			} {
				status, out := request(t, "POST", g.url+"/v1/memory_stores/"+store+"/tools/"+call.tool, "", "", call.in)
				content, _ := out["content"].(string)
				if status != 200 || out["is_error"] != true || !strings.Contains(content, toolRule) {
					t.Errorf("tool %s %s: %d %v, want an error naming %q", call.tool, call.in, status, out, toolRule)
				}
			}
			text, isErr := mcpCall(t, ctx, cs, "memory_write", map[string]any{"path": "/memories" + tc.path, "content": "x"})
			if !isErr || !strings.Contains(text, toolRule) {
				t.Errorf("MCP memory_write: %v %q, want an error naming %q", isErr, text, toolRule)
			}
		})
	}
	if got := g.head(t, store); got != head {
		t.Fatalf("main moved from %s to %s: a refused write changed the store", head, got)
	}

	// git push: the same names, refused whole with the rule named.
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL("", store), "c")
	wt := filepath.Join(work, "c")
	blob := gitIn(t, wt, "x\n", "hash-object", "-w", "--stdin")
	for _, tc := range unportable {
		if strings.EqualFold(tc.path[:min(len(tc.path), 8)], "/.gitmem") {
			continue // .gitmem holds store.json only: a push is refused for that rule first
		}
		t.Run("push"+tc.path, func(t *testing.T) {
			// through the index: the local file system need not hold the name
			gitOK(t, wt, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+tc.path[1:])
			gitOK(t, wt, "commit", "-qm", "add "+tc.path)
			out := gitFails(t, wt, "push", "origin", "main")
			mustHave(t, "push", out, tc.rule)
			gitOK(t, wt, "reset", "-q", "--hard", "origin/main")
		})
	}
	if got := g.head(t, store); got != head {
		t.Fatalf("main moved from %s to %s: a refused push changed the store", head, got)
	}
}

// TestUnportableNamesStayReachable: a store that already holds such names (written before
// the rule, or by plain git) can still read them, change them in place, rename them away,
// and delete them, over REST and git push.
func TestUnportableNamesStayReachable(t *testing.T) {
	g := startGitServer(t)
	store := g.createStore(t, "", "legacy")
	g.write(t, "", store, "/case.md", "c\n")
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	// Bring the names in behind the push rules: commit in a clone, fetch into the bare repo.
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL("", store), "c")
	wt := filepath.Join(work, "c")
	long := strings.Repeat("l", 256) + ".md"
	for _, p := range []string{"CASE.md", "CON.md", long, "dir./a.md"} {
		blob := gitIn(t, wt, "old "+p+"\n", "hash-object", "-w", "--stdin")
		gitOK(t, wt, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+p)
	}
	gitOK(t, wt, "commit", "-qm", "legacy names")
	gitOK(t, st.RepoPath(), "fetch", "-q", wt, "+main:refs/heads/main")
	if err := st.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	var list struct {
		Data []struct{ ID, Path, Type string }
	}
	g.api(t, "GET", "/v1/memory_stores/"+store+"/memories?depth=5", "", "", &list)
	for _, m := range list.Data {
		ids[m.Path] = m.ID
	}
	for _, p := range []string{"/CASE.md", "/CON.md", "/" + long, "/dir./a.md"} {
		if c, _, ok := g.read(t, "", store, p); !ok || c != "old "+p[1:]+"\n" {
			t.Fatalf("read %s: %q %v", p, c, ok)
		}
	}
	// change in place, rename away, delete
	g.api(t, "POST", "/v1/memory_stores/"+store+"/memories/"+ids["/CON.md"], "", `{"content":"new\n"}`, &struct{}{})
	g.api(t, "POST", "/v1/memory_stores/"+store+"/memories/"+ids["/CASE.md"], "", `{"path":"/case2.md"}`, &struct{}{})
	g.api(t, "DELETE", "/v1/memory_stores/"+store+"/memories/"+ids["/"+long], "", "", &struct{}{})
	status, out := request(t, "POST", g.url+"/v1/memory_stores/"+store+"/tools/memory", "", "",
		`{"command":"str_replace","path":"/memories/dir./a.md","old_str":"old","new_str":"new"}`)
	if status != 200 || out["is_error"] != false {
		t.Fatalf("str_replace in a legacy folder: %d %v", status, out)
	}
	// a push that changes a legacy file in place is taken (a fresh clone: the long name is
	// gone, so Linux can check it out)
	gitOK(t, work, "clone", "-q", g.repoURL("", store), "d")
	wt = filepath.Join(work, "d")
	put(t, filepath.Join(wt, "dir./a.md"), "pushed\n")
	gitOK(t, wt, "commit", "-qam", "edit legacy")
	gitOK(t, wt, "push", "-q", "origin", "main")
	if c, _, _ := g.read(t, "", store, "/dir./a.md"); c != "pushed\n" {
		t.Fatalf("after push: %q", c)
	}
	g.fsck(t, store)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// errMessage is the message of an API error body, "" if it is none.
func errMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}
