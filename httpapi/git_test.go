package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// fastHook is a hook program built from testdata/githook, without -race: most tests' servers
// use it, since a push runs the hook once and a test binary built with -race is slow to start
// and run. "" if it could not be built; then the test binary is the hook.
var fastHook string

// TestMain lets git run this test binary as the push hook of the servers the tests start
// (the hook script runs the server's own executable, as gitmem serve does), and builds
// fastHook.
func TestMain(m *testing.M) {
	gitserve.RunHookIfAsked()
	dir, err := os.MkdirTemp("", "gitmem-githook")
	if err == nil {
		fastHook = filepath.Join(dir, "githook")
		if out, err := exec.Command("go", "build", "-o", fastHook, "./testdata/githook").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build testdata/githook (the tests use the test binary as the hook instead): %v\n%s", err, out)
			fastHook = ""
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gitSrv is a server with git over HTTP (and search) on loopback.
type gitSrv struct {
	url  string
	data *gitstore.DataDir
	keys *apikeys.Keys
	idx  *search.Service
	srv  *Server
}

func startGitServer(t testing.TB) *gitSrv {
	t.Helper()
	return startGitServerWith(t, GitOptions{HookProgram: fastHook})
}

func startGitServerWith(t testing.TB, opts GitOptions) *gitSrv {
	t.Helper()
	return startGitServerLimited(t, opts, Limits{})
}

// startGitServerLimited is startGitServerWith, the server with the limits l.
func startGitServerLimited(t testing.TB, opts GitOptions, l Limits) *gitSrv {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	d, keys := openDir(t, t.TempDir())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.Default()
	}
	srv := New(d, keys, Options{Logger: log, Limits: l})
	idx := search.New(d, search.Options{Logger: log})
	srv.EnableSearch(idx)
	srv.EnableHealth(ReadyChecks(d, idx))
	if err := srv.EnableGit(opts); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close() // the forks of open proposals, before their directories go
		idx.Close()
		d.Close()
	})
	return &gitSrv{url: hs.URL, data: d, keys: keys, idx: idx, srv: srv}
}

// api sends a JSON request to the API and decodes the answer into out (if not nil).
func (g *gitSrv) api(t testing.TB, method, path, key, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, g.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	if resp.StatusCode != 200 && out != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

func (g *gitSrv) createStore(t testing.TB, key, name string) string {
	t.Helper()
	var st struct{ ID string }
	g.api(t, "POST", "/v1/memory_stores", key, fmt.Sprintf(`{"name":%q}`, name), &st)
	return st.ID
}

func (g *gitSrv) write(t testing.TB, key, store, path, content string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"path": path, "content": content})
	g.api(t, "POST", "/v1/memory_stores/"+store+"/memories", key, string(body), &struct{}{})
}

// gitMemoryJSON is a memory as the API answers it, with view=full.
type gitMemoryJSON struct {
	ID              string  `json:"id"`
	Path            string  `json:"path"`
	Content         *string `json:"content"`
	MemoryVersionID string  `json:"memory_version_id"`
}

// read returns the content of the memory at path, and its current version, through the
// API; ok is false if no memory lives there.
func (g *gitSrv) read(t testing.TB, key, store, path string) (content, versionID string, ok bool) {
	t.Helper()
	page := ""
	for {
		var list struct {
			Data     []gitMemoryJSON `json:"data"`
			NextPage *string         `json:"next_page"`
		}
		g.api(t, "GET", "/v1/memory_stores/"+store+"/memories?limit=100&path_prefix="+
			path[:strings.LastIndex(path, "/")+1]+page, key, "", &list)
		for _, m := range list.Data {
			if m.Path == path {
				var mem gitMemoryJSON
				g.api(t, "GET", "/v1/memory_stores/"+store+"/memories/"+m.ID, key, "", &mem)
				if mem.Content == nil {
					t.Fatalf("memory %s has no content", m.ID)
				}
				return *mem.Content, mem.MemoryVersionID, true
			}
		}
		if list.NextPage == nil {
			return "", "", false
		}
		page = "&page=" + *list.NextPage
	}
}

func (g *gitSrv) repoURL(key, store string) string {
	u := g.url + "/git/" + store + ".git"
	if key != "" {
		u = strings.Replace(u, "http://", "http://gitmem:"+key+"@", 1)
	}
	return u
}

// gitEnv is the environment of every git command of the tests: no user or system config,
// never a prompt, and the person Ann Editor as author.
func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=", "SSH_ASKPASS=",
		"GIT_AUTHOR_NAME=Ann Editor", "GIT_AUTHOR_EMAIL=ann@example.com",
		"GIT_COMMITTER_NAME=Ann Editor", "GIT_COMMITTER_EMAIL=ann@example.com")
}

// gitTry runs git in dir and returns its combined output and error.
func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// gitOK runs git in dir and fails the test if it fails.
func gitOK(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// gitIn runs git in dir with stdin and returns its output, trimmed.
func gitIn(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitFails runs git in dir, fails the test if it succeeds, and returns its output.
func gitFails(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	if err == nil {
		t.Fatalf("git %s succeeded; it should fail\n%s", strings.Join(args, " "), out)
	}
	return out
}

// commitFile writes name in the work tree wt and commits it with message msg.
func commitFile(t testing.TB, wt, name, content, msg string) {
	t.Helper()
	put(t, filepath.Join(wt, name), content)
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", msg)
}

func put(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustHave(t testing.TB, what, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%s: %q missing from:\n%s", what, p, text)
		}
	}
}

func (g *gitSrv) head(t testing.TB, store string) string {
	t.Helper()
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(gitOK(t, st.RepoPath(), "rev-parse", "refs/heads/main"))
}

func (g *gitSrv) fsck(t testing.TB, store string) {
	t.Helper()
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	gitOK(t, st.RepoPath(), "fsck", "--full", "--strict", "--no-progress")
}

// TestGitCloneEditPush is a person's round trip: clone over HTTP (protocol v2 and v0),
// commit, push; the API and search show the change before the push returns, as a version
// by the commit's author; API writes reach the clone with fetch and pull.
func TestGitCloneEditPush(t *testing.T) {
	g := startGitServerWith(t, GitOptions{})         // the hook is this test binary, as gitmem serve's is itself
	store := g.createStore(t, "", "notes "+t.Name()) // store names are unique
	g.write(t, "", store, "/prefs/style.md", "Prefers tabs\n")
	work := t.TempDir()

	for v, says := range map[string]string{"2": "git< version 2", "0": "git< # service=git-upload-pack"} {
		cmd := exec.Command("git", "-c", "protocol.version="+v, "clone", g.repoURL("", store), "v"+v)
		cmd.Dir, cmd.Env = work, append(gitEnv(), "GIT_TRACE_PACKET=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("clone with protocol v%s: %v\n%s", v, err, out)
		}
		mustHave(t, "clone v"+v, string(out), "Cloning into", says)
		b, err := os.ReadFile(filepath.Join(work, "v"+v, "prefs/style.md"))
		if err != nil || string(b) != "Prefers tabs\n" {
			t.Fatalf("clone v%s: prefs/style.md = %q, %v", v, b, err)
		}
	}
	wt := filepath.Join(work, "v2")
	put(t, filepath.Join(wt, "prefs/style.md"), "Prefers spaces\n")
	put(t, filepath.Join(wt, "people/bob.md"), "Bob likes zucchini bread\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "spaces, and Bob")
	out := gitOK(t, wt, "push")
	mustHave(t, "push", out, "main -> main")

	// Before the push returned, the catalog and the search index caught up.
	content, verID, ok := g.read(t, "", store, "/prefs/style.md")
	if !ok || content != "Prefers spaces\n" {
		t.Fatalf("after push: /prefs/style.md = %q, %v", content, ok)
	}
	var ver struct {
		Operation string `json:"operation"`
		CreatedBy struct {
			Type   string `json:"type"`
			UserID string `json:"user_id"`
		} `json:"created_by"`
	}
	g.api(t, "GET", "/v1/memory_stores/"+store+"/memory_versions/"+verID, "", "", &ver)
	if ver.Operation != "modified" || ver.CreatedBy.Type != "user_actor" || !strings.HasPrefix(ver.CreatedBy.UserID, "user_") {
		t.Errorf("version of the push: %+v", ver)
	}
	st, _ := g.data.Store(context.Background(), store)
	v, err := st.Version(context.Background(), verID, false)
	if err != nil || v.CreatedBy.Name != "Ann Editor" || v.CreatedBy.Email != "ann@example.com" {
		t.Errorf("version's actor %+v, %v: want Ann Editor <ann@example.com>", v.CreatedBy, err)
	}
	var found struct {
		Data []struct {
			Path string `json:"path"`
		} `json:"data"`
	}
	g.api(t, "GET", "/v1/memory_stores/"+store+"/search?q=zucchini", "", "", &found)
	if len(found.Data) != 1 || found.Data[0].Path != "/people/bob.md" {
		t.Errorf("search after push: %+v", found)
	}

	// Without keys, only requests addressed to loopback are answered (DNS rebinding).
	req, _ := http.NewRequest("GET", g.url+"/git/"+store+".git/info/refs?service=git-upload-pack", nil)
	req.Host = "rebind.example:80"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("request for another host without keys: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// An API write reaches the other clone by fetch, and this one by pull.
	g.write(t, "", store, "/prefs/food.md", "Likes soup\n")
	v0 := filepath.Join(work, "v0")
	gitOK(t, v0, "fetch", "-q")
	mustHave(t, "fetch", gitOK(t, v0, "log", "--format=%s", "origin/main"), "create /prefs/food.md", "spaces, and Bob")
	gitOK(t, wt, "pull", "-q", "--rebase")
	if b, _ := os.ReadFile(filepath.Join(wt, "prefs/food.md")); string(b) != "Likes soup\n" {
		t.Errorf("after pull: prefs/food.md = %q", b)
	}
	// The clone that fetched can rebase and push on top.
	gitOK(t, v0, "pull", "-q", "--rebase")
	put(t, filepath.Join(v0, "prefs/food.md"), "Likes soup and bread\n")
	gitOK(t, v0, "commit", "-qam", "bread")
	gitOK(t, v0, "push", "-q")
	if c, _, _ := g.read(t, "", store, "/prefs/food.md"); c != "Likes soup and bread\n" {
		t.Errorf("second push: %q", c)
	}
	g.fsck(t, store)
}

// TestGitShallowCloneAndBigPush clones with --depth 1, pushes from the shallow clone, and
// pushes more than git sends in one piece (a chunked request body).
func TestGitShallowCloneAndBigPush(t *testing.T) {
	g := startGitServer(t)
	store := g.createStore(t, "", "notes "+t.Name()) // store names are unique
	for i := range 5 {
		g.write(t, "", store, fmt.Sprintf("/n/%d.md", i), fmt.Sprintf("note %d\n", i))
	}
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", "--depth", "1", g.repoURL("", store), "shallow")
	wt := filepath.Join(work, "shallow")
	if n := strings.TrimSpace(gitOK(t, wt, "rev-list", "--count", "HEAD")); n != "1" {
		t.Errorf("shallow clone has %s commits, want 1", n)
	}
	// About 3 MB of text that does not compress: git sends it chunked.
	rnd := make([]byte, 60000)
	for i := range 40 {
		for j := range rnd {
			rnd[j] = "abcdefghijklmnopqrstuvwxyz0123456789 \n"[(i*7919+j*j*31+j*104729/(i+1))%38]
		}
		put(t, filepath.Join(wt, fmt.Sprintf("big/%02d.md", i)), fmt.Sprintf("%d %x\n%s", i, i*i, rnd))
	}
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "forty big notes")
	gitOK(t, wt, "-c", "http.postBuffer=65536", "push", "-q")
	if c, _, ok := g.read(t, "", store, "/big/39.md"); !ok || !strings.HasPrefix(c, "39 5f1\n") {
		t.Errorf("after big push: /big/39.md ok=%v, starts %q", ok, c[:min(10, len(c))])
	}
	g.fsck(t, store)
}

// TestGitPushRules pushes every kind of change that a store refuses: each push is refused
// whole, git shows the pusher the file and the rule, and main does not move.
func TestGitPushRules(t *testing.T) {
	g := startGitServer(t)
	g.createStore(t, "", "taken")
	deep := strings.Repeat("d/", 20) + "x.md"

	cases := []struct {
		name string
		edit func(e *ruleEnv)                 // changes the work tree; a commit of everything follows
		push []string                         // the push command (default: push origin main)
		want []string                         // in git's output, after "remote: "
		raw  func(e *ruleEnv) (string, error) // instead of edit+commit+push
		fsck bool                             // refused by git's own object checks, before the hook
	}{
		{name: "not UTF-8", edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, "bad.md"), "ok \xff\xfe") },
			want: []string{"/bad.md: content is not valid UTF-8 (first bad byte at offset 3)"}},
		{name: "too big", edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, "big.md"), strings.Repeat("a", 102401)) },
			want: []string{"/big.md: content is 102401 bytes; the limit is 102400 bytes"}},
		{name: "not NFC", edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, "cafe\u0301.md"), "x") },
			want: []string{"/cafe\u0301.md: path \"/cafe\u0301.md\" is not in Unicode normal form C (NFC)"}},
		{name: "control character", edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, "tab\there.md"), "x") },
			want: []string{`"/tab\there.md"`, "has a control character (U+0009)"}},
		{name: "too deep", edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, deep), "x") },
			want: []string{"/" + deep + `: path "/` + deep + `" has 21 segments; the limit is 20`}},
		{name: "git's reserved name", raw: func(e *ruleEnv) (string, error) {
			// git add refuses such a name; plumbing makes it, and git's fsck on receive refuses it.
			blob := strings.TrimSpace(gitOK(e.t, e.wt, "rev-parse", "HEAD:a.md"))
			sub := gitIn(e.t, e.wt, "100644 blob "+blob+"\tconfig\n", "mktree")
			root := gitIn(e.t, e.wt, gitOK(e.t, e.wt, "ls-tree", "HEAD")+"040000 tree "+sub+"\t.GIT\n", "mktree")
			commit := strings.TrimSpace(gitOK(e.t, e.wt, "commit-tree", root, "-p", "HEAD", "-m", "dot git"))
			return gitTry(e.wt, "push", "origin", commit+":refs/heads/main")
		}, fsck: true, want: []string{"hasDotgit", "unpack failed"}},
		{name: "symlink", edit: func(e *ruleEnv) {
			if err := os.Symlink("a.md", filepath.Join(e.wt, "link.md")); err != nil {
				e.t.Fatal(err)
			}
		}, want: []string{"/link.md: a symbolic link: memories are plain files, mode 100644 only"}},
		{name: "submodule", raw: func(e *ruleEnv) (string, error) {
			head := strings.TrimSpace(gitOK(e.t, e.wt, "rev-parse", "HEAD"))
			gitOK(e.t, e.wt, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
			gitOK(e.t, e.wt, "commit", "-qm", "submodule")
			return gitTry(e.wt, "push", "origin", "main")
		}, want: []string{"/sub: a submodule (gitlink): memories are plain files, mode 100644 only"}},
		{name: "executable", edit: func(e *ruleEnv) {
			put(e.t, filepath.Join(e.wt, "run.md"), "#!/bin/sh\n")
			os.Chmod(filepath.Join(e.wt, "run.md"), 0o755)
		}, want: []string{"/run.md: an executable file (mode 100755)"}},
		{name: "more under .gitmem", edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, ".gitmem/notes.md"), "x") },
			want: []string{"/.gitmem/notes.md: nothing but store.json may be under /.gitmem/"}},
		{name: "store.json removed", edit: func(e *ruleEnv) { os.Remove(filepath.Join(e.wt, ".gitmem/store.json")) },
			want: []string{"/.gitmem/store.json: removed: it holds the store's metadata"}},
		{name: "store.json not JSON", edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, ".gitmem/store.json"), "{name: x}") },
			want: []string{"/.gitmem/store.json: .gitmem/store.json is not valid store metadata"}},
		{name: "store id changed", edit: func(e *ruleEnv) {
			put(e.t, filepath.Join(e.wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["id"] = "memstore_01M83BB1KXF10C9EEWAJM0FBRY" }))
		}, want: []string{"/.gitmem/store.json: its id must stay memstore_"}},
		{name: "store name empty", edit: func(e *ruleEnv) {
			put(e.t, filepath.Join(e.wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["name"] = "" }))
		}, want: []string{"/.gitmem/store.json: name is required"}},
		{name: "store renamed to a taken name", edit: func(e *ruleEnv) {
			put(e.t, filepath.Join(e.wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["name"] = "taken" }))
		}, want: []string{`/.gitmem/store.json: a memory store named "taken" exists already (archived ones count too); choose another name`}},
		{name: "settings in a proposal", push: []string{"push", "origin", "main:refs/heads/proposals/settings"}, edit: func(e *ruleEnv) {
			put(e.t, filepath.Join(e.wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["policy"] = map[string]any{"secrets": "off"} }))
			put(e.t, filepath.Join(e.wt, "fix.md"), "a typo fixed\n")
		}, want: []string{"/.gitmem/store.json: a proposal may not change the store's settings"}},
		{name: "archived by push", edit: func(e *ruleEnv) {
			put(e.t, filepath.Join(e.wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["archived_at"] = "2026-01-01T00:00:00Z" }))
		}, want: []string{"/.gitmem/store.json: archived_at may not be changed by a push"}},
		{name: "bad file in an older commit of the push", raw: func(e *ruleEnv) (string, error) {
			put(e.t, filepath.Join(e.wt, "bad.md"), "\xff")
			gitOK(e.t, e.wt, "add", "-A")
			gitOK(e.t, e.wt, "commit", "-qm", "oops")
			os.Remove(filepath.Join(e.wt, "bad.md"))
			put(e.t, filepath.Join(e.wt, "good.md"), "fine\n")
			gitOK(e.t, e.wt, "add", "-A")
			gitOK(e.t, e.wt, "commit", "-qm", "fixed")
			return gitTry(e.wt, "push", "origin", "main")
		}, want: []string{`/bad.md: content is not valid UTF-8 (first bad byte at offset 0) (commit `, ` "oops")`}},
		{name: "gitmem's trailers", raw: func(e *ruleEnv) (string, error) {
			// A person cherry-picks a commit that gitmem made: its trailers would name the
			// key and reuse the version id.
			put(e.t, filepath.Join(e.wt, "a.md"), "a again\n")
			gitOK(e.t, e.wt, "commit", "-qam", "update /a.md\n\nGitmem-Memory: mem_01M83BB1MHEPMYWGYCH17K0HMM\n"+
				"Gitmem-Version: memver_01M83BB1MHEPMYWGYCH4JPM9TT\nGitmem-Operation: modified\nGitmem-Actor: api_actor apikey_01M83EQW76530MXJ2NYMV3BFCX")
			return gitTry(e.wt, "push", "origin", "main")
		}, want: []string{`commit `, `"update /a.md": its message has gitmem's own trailers (Gitmem-Memory, Gitmem-Version, Gitmem-Operation, Gitmem-Actor)`}},
		{name: "second branch", push: []string{"push", "origin", "main:refs/heads/feature"},
			edit: func(e *ruleEnv) { put(e.t, filepath.Join(e.wt, "f.md"), "f\n") },
			want: []string{"refs/heads/feature: only refs/heads/main and proposal branches (refs/heads/proposals/NAME) may be pushed"}},
		{name: "tag", raw: func(e *ruleEnv) (string, error) {
			gitOK(e.t, e.wt, "tag", "v1")
			defer gitOK(e.t, e.wt, "tag", "-d", "v1")
			return gitTry(e.wt, "push", "origin", "v1")
		}, want: []string{"refs/tags/v1: only refs/heads/main may be pushed: a memory store keeps no tags"}},
		{name: "delete main", raw: func(e *ruleEnv) (string, error) { return gitTry(e.wt, "push", "origin", ":main") },
			want: []string{"refs/heads/main: deleting main is refused"}},
		{name: "force push", raw: func(e *ruleEnv) (string, error) {
			put(e.t, filepath.Join(e.wt, "f.md"), "f\n")
			gitOK(e.t, e.wt, "add", "-A")
			gitOK(e.t, e.wt, "commit", "-qm", "f")
			gitOK(e.t, e.wt, "push", "-q")
			gitOK(e.t, e.wt, "reset", "-q", "--hard", "HEAD~1")
			put(e.t, filepath.Join(e.wt, "g.md"), "g\n")
			gitOK(e.t, e.wt, "add", "-A")
			gitOK(e.t, e.wt, "commit", "-qm", "g")
			return gitTry(e.wt, "push", "--force", "origin", "main")
		}, want: []string{"refs/heads/main: not a fast-forward", "force pushes are refused"}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			e := newRuleEnv(t, g)
			before := g.head(t, e.store)
			var out string
			var err error
			if c.raw != nil {
				out, err = c.raw(e)
				if c.name == "force push" { // it pushed once before: main is where that push left it
					before = strings.TrimSpace(gitOK(t, e.wt, "rev-parse", "origin/main"))
				}
			} else {
				c.edit(e)
				gitOK(t, e.wt, "add", "-A")
				gitOK(t, e.wt, "commit", "-qm", c.name)
				push := c.push
				if push == nil {
					push = []string{"push", "origin", "main"}
				}
				out, err = gitTry(e.wt, push...)
			}
			if err == nil {
				t.Fatalf("push succeeded:\n%s", out)
			}
			if c.fsck {
				mustHave(t, c.name, out, c.want...)
			} else {
				mustHave(t, c.name, out, "remote: gitmem refused this push; nothing was changed:", "(pre-receive hook declined)")
				mustHave(t, c.name, out, "remote:   "+c.want[0])
				mustHave(t, c.name, out, c.want[1:]...)
			}
			if after := g.head(t, e.store); after != before {
				t.Errorf("main moved from %s to %s", before, after)
			}
			if testing.Verbose() {
				t.Log(out)
			}
		})
	}
}

// TestGitPushAfterRules: a push made on an old main is refused by git itself; what the rules
// allow passes (content of exactly the limit, a new name in store.json); an archived store
// takes no push.
func TestGitPushAfterRules(t *testing.T) {
	g := startGitServer(t)
	e := newRuleEnv(t, g)
	store, wt := e.store, e.wt
	// A push made on an old main: git itself says to fetch first.
	gitOK(t, wt, "fetch", "-q")
	gitOK(t, wt, "reset", "-q", "--hard", "origin/main")
	g.write(t, "", store, "/api.md", "from the API\n")
	put(t, filepath.Join(wt, "mine.md"), "mine\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "mine")
	mustHave(t, "stale push", gitFails(t, wt, "push", "origin", "main"), "rejected", "fetch first")
	gitOK(t, wt, "pull", "-q", "--rebase")

	// What the rules allow passes: content of exactly the limit, a new name in store.json.
	put(t, filepath.Join(wt, "max.md"), strings.Repeat("é", 51200))
	put(t, filepath.Join(wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["name"] = "renamed by a person" }))
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "max and rename")
	gitOK(t, wt, "push", "-q", "origin", "main")
	if c, _, ok := g.read(t, "", store, "/max.md"); !ok || len(c) != 102400 {
		t.Errorf("/max.md: ok=%v, %d bytes", ok, len(c))
	}
	var st struct{ Name string }
	g.api(t, "GET", "/v1/memory_stores/"+store, "", "", &st)
	if st.Name != "renamed by a person" {
		t.Errorf("store name after push: %q", st.Name)
	}
	if c, _, _ := g.read(t, "", store, "/mine.md"); c != "mine\n" {
		t.Errorf("/mine.md = %q", c)
	}

	// An archived store takes no push.
	g.api(t, "POST", "/v1/memory_stores/"+store+"/archive", "", "", &struct{}{})
	gitOK(t, wt, "pull", "-q", "--rebase")
	put(t, filepath.Join(wt, "late.md"), "late\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "late")
	mustHave(t, "archived", gitFails(t, wt, "push", "origin", "main"), "remote:   refs/heads/main: memory store "+store+" is archived and read-only")
	g.fsck(t, store)
}

// TestGitKeys: once keys exist, git needs one as the basic auth password; read_only keys
// clone and fetch but never push; a key limited to a store reaches only that store; a push
// is attributed to its key as well as to the commit's author.
func TestGitKeys(t *testing.T) {
	g := startGitServer(t)
	rw, rwSecret, err := g.keys.Create("laptop", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	store := g.createStore(t, rwSecret, "notes")
	other := g.createStore(t, rwSecret, "other")
	g.write(t, rwSecret, store, "/a.md", "a\n")
	_, roSecret, _ := g.keys.Create("dashboard", apikeys.ReadOnly, "")
	_, limitedSecret, _ := g.keys.Create("one store", apikeys.ReadWrite, other)
	work := t.TempDir()

	// No key: 401 with a basic challenge, so git asks its credential helper (here: nobody).
	resp, err := http.Get(g.url + "/git/" + store + ".git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Basic realm="gitmem"` {
		t.Errorf("no key: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	mustHave(t, "no key", string(body), "gitmem needs an API key: give it as the password")
	mustHave(t, "clone without a key", gitFails(t, work, "clone", g.repoURL("", store), "nokey"), "terminal prompts disabled")
	mustHave(t, "clone with a wrong key", gitFails(t, work, "clone", g.repoURL("gitmem_wrong", store), "wrong"), "Authentication failed")
	// The key also works as x-api-key or Bearer, for tools other than git.
	for _, h := range [][2]string{{"x-api-key", rwSecret}, {"Authorization", "Bearer " + rwSecret}} {
		req, _ := http.NewRequest("GET", g.url+"/git/"+store+".git/info/refs?service=git-upload-pack", nil)
		req.Header.Set(h[0], h[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-git-upload-pack-advertisement" {
			t.Errorf("%s: %d %s", h[0], resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}

	// A read_only key clones and fetches; its push is refused before anything is sent.
	gitOK(t, work, "clone", "-q", g.repoURL(roSecret, store), "ro")
	ro := filepath.Join(work, "ro")
	gitOK(t, ro, "fetch", "-q")
	put(t, filepath.Join(ro, "b.md"), "b\n")
	gitOK(t, ro, "add", "-A")
	gitOK(t, ro, "commit", "-qm", "b")
	before := g.head(t, store)
	mustHave(t, "read_only push", gitFails(t, ro, "push", "origin", "main"),
		"remote: this API key (apikey_", ") is read_only: it may clone and fetch, but a push needs a read_write key", "403")
	if g.head(t, store) != before {
		t.Error("a read_only key moved main")
	}
	// Both requests of a push are refused, also when sent by hand.
	for _, r := range []struct{ method, path string }{
		{"GET", "/info/refs?service=git-receive-pack"}, {"POST", "/git-receive-pack"}} {
		req, _ := http.NewRequest(r.method, g.url+"/git/"+store+".git"+r.path, strings.NewReader("0000"))
		req.SetBasicAuth("x", roSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("read_only %s %s: %d", r.method, r.path, resp.StatusCode)
		}
	}

	// A key limited to another store reaches only that one.
	mustHave(t, "limited key", gitFails(t, work, "clone", g.repoURL(limitedSecret, store), "limited"),
		"remote: this API key (apikey_", "is limited to memory store "+other, "403")
	gitOK(t, work, "clone", "-q", g.repoURL(limitedSecret, other), "limited")

	// Unknown store, and not git at all.
	mustHave(t, "unknown store", gitFails(t, work, "clone", g.repoURL(rwSecret, "memstore_01M83BB1KXF10C9EEWAJM0FBRY"), "unknown"),
		"remote: memory store memstore_01M83BB1KXF10C9EEWAJM0FBRY not found", "not found")
	if code := g.api(t, "GET", "/git/"+store+".git/objects/info/packs", rwSecret, "", nil); code != 404 {
		t.Errorf("dumb protocol: %d", code)
	}

	// A read_write key pushes; the versions are the author's and the key's.
	put(t, filepath.Join(ro, "b.md"), "b by Ann\n")
	gitOK(t, ro, "commit", "-qam", "b by Ann")
	gitOK(t, ro, "push", "-q", g.repoURL(rwSecret, store), "main")
	var vers struct {
		Data []struct {
			Path      string `json:"path"`
			CreatedBy struct {
				Type string `json:"type"`
			} `json:"created_by"`
		} `json:"data"`
	}
	g.api(t, "GET", "/v1/memory_stores/"+store+"/memory_versions?api_key_id="+rw.ID, rwSecret, "", &vers)
	var pushed []string
	for _, v := range vers.Data {
		if v.CreatedBy.Type == "user_actor" {
			pushed = append(pushed, v.Path)
		}
	}
	if strings.Join(pushed, ",") != "/b.md,/b.md" {
		t.Errorf("versions of the push by key %s: %v (all: %+v)", rw.ID, pushed, vers.Data)
	}
	// The attribution is kept when the catalog is rebuilt from history.
	if err := g.data.Reindex(context.Background(), store, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := g.data.Store(context.Background(), store)
	page, err := st.Versions(context.Background(), gitstore.VersionFilter{APIKeyID: rw.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range page.Versions {
		if v.CreatedBy.Type == gitstore.UserActor {
			n++
			if v.CreatedBy.Email != "ann@example.com" || v.CreatedBy.APIKeyID != rw.ID {
				t.Errorf("after reindex: %+v", v.CreatedBy)
			}
		}
	}
	if n != 2 {
		t.Errorf("after reindex, %d pushed versions match the key, want 2", n)
	}
	g.fsck(t, store)
}

// TestGitPushesDuringAPIWrites pushes from two clones while API writers write to the same
// store. Whoever moves main second loses cleanly: the API writer rebuilds its group on the
// push, a push made on an old main is refused and pushed again after git pull --rebase. No
// answered write is lost, every accepted push is in main as pushed, and git fsck is clean.
func TestGitPushesDuringAPIWrites(t *testing.T) {
	g := startGitServer(t)
	store := g.createStore(t, "", "busy")
	work := t.TempDir()
	const writers, writes, pushers, pushes = 4, 20, 2, 4

	type written struct{ path, content string }
	results := make(chan []written, writers)
	errs := make(chan error, writers*writes)
	for w := range writers {
		go func() {
			var ok []written
			defer func() { results <- ok }()
			for i := 0; i < writes; i++ {
				path, content := fmt.Sprintf("/api/w%d/%d.md", w, i), fmt.Sprintf("writer %d, write %d\n", w, i)
				body, _ := json.Marshal(map[string]string{"path": path, "content": content})
				resp, err := http.Post(g.url+"/v1/memory_stores/"+store+"/memories", "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("write %s: %d %s", path, resp.StatusCode, raw)
					continue
				}
				ok = append(ok, written{path, content})
			}
		}()
	}

	type pushed struct {
		commit, path, content string
	}
	pushedc := make(chan []pushed, pushers)
	reasons := make(chan string, pushers*pushes*21)
	refused := make(chan int, pushers)
	for p := range pushers {
		dir := filepath.Join(work, fmt.Sprintf("p%d", p))
		gitOK(t, work, "clone", "-q", g.repoURL("", store), dir)
		go func() {
			var ok []pushed
			retries := 0
			defer func() { pushedc <- ok; refused <- retries }()
			for i := 0; i < pushes; i++ {
				path, content := fmt.Sprintf("git/p%d/%d.md", p, i), fmt.Sprintf("pusher %d, push %d\n", p, i)
				put(t, filepath.Join(dir, path), content)
				if out, err := gitTry(dir, "add", "-A"); err != nil {
					t.Errorf("git add: %v\n%s", err, out)
					return
				}
				if out, err := gitTry(dir, "commit", "-qm", "push "+path); err != nil {
					t.Errorf("git commit: %v\n%s", err, out)
					return
				}
				for attempt := 0; ; attempt++ {
					out, err := gitTry(dir, "push", "-q", "origin", "main")
					if err == nil {
						break
					}
					if !strings.Contains(out, "fetch first") && !strings.Contains(out, "main moved while you pushed") &&
						!strings.Contains(out, "failed to update ref") && !strings.Contains(out, "non-fast-forward") {
						t.Errorf("push refused for another reason:\n%s", out)
						return
					}
					if attempt == 20 {
						t.Errorf("push still refused after %d attempts:\n%s", attempt, out)
						return
					}
					retries++
					for _, why := range []string{"fetch first", "main moved while you pushed", "failed to update ref", "non-fast-forward"} {
						if strings.Contains(out, why) {
							reasons <- why
							break
						}
					}
					if out, err := gitTry(dir, "pull", "-q", "--rebase", "origin", "main"); err != nil {
						t.Errorf("git pull --rebase: %v\n%s", err, out)
						return
					}
				}
				head, _ := gitTry(dir, "rev-parse", "HEAD")
				ok = append(ok, pushed{strings.TrimSpace(head), "/" + path, content})
			}
		}()
	}
	var apiWrites []written
	for range writers {
		apiWrites = append(apiWrites, <-results...)
	}
	var gitPushes []pushed
	retries := 0
	for range pushers {
		gitPushes = append(gitPushes, <-pushedc...)
		retries += <-refused
	}
	close(errs)
	close(reasons)
	why := map[string]int{}
	for r := range reasons {
		why[r]++
	}
	for err := range errs {
		t.Errorf("API write failed: %v", err)
	}
	t.Logf("%d API writes, %d pushes (%d pushes refused and made again after git pull --rebase: %v)", len(apiWrites), len(gitPushes), retries, why)
	if len(apiWrites) != writers*writes || len(gitPushes) != pushers*pushes {
		t.Fatalf("%d of %d API writes and %d of %d pushes went through", len(apiWrites), writers*writes, len(gitPushes), pushers*pushes)
	}

	// Every answered write and every push is there, through the API and in main.
	st, _ := g.data.Store(context.Background(), store)
	repo := st.RepoPath()
	for _, w := range apiWrites {
		if c, _, ok := g.read(t, "", store, w.path); !ok || c != w.content {
			t.Errorf("API write %s: read %q, %v", w.path, c, ok)
		}
		if c := gitOK(t, repo, "show", "main:"+w.path[1:]); c != w.content {
			t.Errorf("API write %s: main has %q", w.path, c)
		}
	}
	for _, p := range gitPushes {
		if _, err := gitTry(repo, "merge-base", "--is-ancestor", p.commit, "main"); err != nil {
			t.Errorf("pushed commit %s is not in main", p.commit)
		}
		if c, _, ok := g.read(t, "", store, p.path); !ok || c != p.content {
			t.Errorf("push %s: read %q, %v", p.path, c, ok)
		}
	}
	// One version per write and per pushed file: nothing applied twice, nothing missed.
	var total int
	for f := (gitstore.VersionFilter{Limit: 100}); ; {
		page, err := st.Versions(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		total += len(page.Versions)
		if f.Cursor = page.NextCursor; f.Cursor == "" {
			break
		}
	}
	if want := writers*writes + pushers*pushes; total != want {
		t.Errorf("%d versions, want %d", total, want)
	}
	g.fsck(t, store)
}

// TestGitPushLosesRaceToAPIWrite: the hook has accepted a push, and before git moves main an
// API write moves it. git's update of the ref, a compare-and-swap on main.lock like gitmem's,
// fails: the push is refused whole, the write stays, and the pusher pulls and pushes again.
func TestGitPushLosesRaceToAPIWrite(t *testing.T) {
	// The hook checks the push, then waits for the test before git goes on to move main.
	hook := newPausedHook(t, true)
	g := startGitServerWith(t, GitOptions{HookProgram: hook.program})
	store := g.createStore(t, "", "race")
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL("", store), "c")
	wt := filepath.Join(work, "c")
	put(t, filepath.Join(wt, "mine.md"), "mine\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "mine")
	mine := strings.TrimSpace(gitOK(t, wt, "rev-parse", "HEAD"))

	pushed := hook.push(t, wt)
	g.write(t, "", store, "/api.md", "from the API\n") // answered: it moved main
	apiHead := g.head(t, store)
	r := hook.resume(t, pushed)
	if r.err == nil {
		t.Fatalf("push went through over an answered write:\n%s", r.out)
	}
	mustHave(t, "push that lost", r.out, "[remote rejected] main -> main")
	if g.head(t, store) != apiHead {
		t.Errorf("main moved after the refused push")
	}
	st, _ := g.data.Store(context.Background(), store)
	if _, err := gitTry(st.RepoPath(), "merge-base", "--is-ancestor", mine, "main"); err == nil {
		t.Error("the refused push's commit is in main")
	}
	if c, _, ok := g.read(t, "", store, "/api.md"); !ok || c != "from the API\n" {
		t.Errorf("the API write: %q %v", c, ok)
	}
	if _, _, ok := g.read(t, "", store, "/mine.md"); ok {
		t.Error("the refused push's file is readable")
	}
	g.fsck(t, store)
	// The pusher does what git tells them.
	gitOK(t, wt, "pull", "-q", "--rebase")
	gitOK(t, wt, "push", "-q", "origin", "main")
	if c, _, ok := g.read(t, "", store, "/mine.md"); !ok || c != "mine\n" {
		t.Errorf("after pull --rebase and push: %q %v", c, ok)
	}
	if testing.Verbose() {
		t.Log(r.out)
	}
}

// ruleEnv is a store with one memory and a clone of it, for one push rule.
type ruleEnv struct {
	t         *testing.T
	store, wt string
	info      map[string]any // the store's .gitmem/store.json
}

func newRuleEnv(t *testing.T, g *gitSrv) *ruleEnv {
	t.Helper()
	store := g.createStore(t, "", "notes "+t.Name()) // store names are unique
	g.write(t, "", store, "/a.md", "a\n")
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL("", store), "c")
	e := &ruleEnv{t: t, store: store, wt: filepath.Join(work, "c")}
	raw, err := os.ReadFile(filepath.Join(e.wt, ".gitmem/store.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &e.info); err != nil {
		t.Fatal(err)
	}
	return e
}

// withInfo is store.json changed by change.
func (e *ruleEnv) withInfo(change func(m map[string]any)) string {
	m := map[string]any{}
	for k, v := range e.info {
		m[k] = v
	}
	change(m)
	b, _ := json.MarshalIndent(m, "", "  ")
	return string(b) + "\n"
}
