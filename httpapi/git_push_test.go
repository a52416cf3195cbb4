package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// TestGitPushRecordsKeyOfEveryCommit: a push of several commits, a merge among them, made
// with plain git: every commit that changes a file becomes versions of the commit's author
// that the api_key_id filter finds under the pushing key, as soon as the push returns.
func TestGitPushRecordsKeyOfEveryCommit(t *testing.T) {
	g := startGitServer(t)
	key, secret, err := g.keys.Create("laptop", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	store := g.createStore(t, secret, "notes")
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL(secret, store), "c")
	wt := filepath.Join(work, "c")
	base := strings.TrimSpace(gitOK(t, wt, "rev-parse", "HEAD"))
	for i := range 3 {
		put(t, filepath.Join(wt, fmt.Sprintf("n%d.md", i)), fmt.Sprintf("note %d\n", i))
		put(t, filepath.Join(wt, "log.md"), fmt.Sprintf("entry %d\n", i))
		gitOK(t, wt, "add", "-A")
		gitOK(t, wt, "commit", "-qm", fmt.Sprintf("note %d", i))
	}
	gitOK(t, wt, "checkout", "-q", "-b", "side", base)
	put(t, filepath.Join(wt, "side.md"), "from the side\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "side")
	gitOK(t, wt, "checkout", "-q", "main")
	gitOK(t, wt, "merge", "-q", "--no-edit", "side")
	gitOK(t, wt, "push", "-q", "origin", "main")

	pushed := map[string]bool{}
	for _, c := range strings.Fields(gitOK(t, wt, "rev-list", "--no-merges", "HEAD", "^"+base)) {
		pushed[c] = true
	}
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.Versions(context.Background(), gitstore.VersionFilter{APIKeyID: key.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, v := range page.Versions {
		if v.CreatedBy.Type == gitstore.UserActor {
			found[v.Commit] = true
		}
	}
	for c := range pushed {
		if !found[c] {
			t.Errorf("pushed commit %s has no version under key %s", c[:7], key.ID)
		}
	}
	if len(pushed) != 4 {
		t.Errorf("%d commits pushed, want 4", len(pushed))
	}
}

// TestGitPushRefusedWhenKeyNotRecorded: the store is closed (the server stops) while a push
// is checked, before git moves main. The key cannot be recorded, so the push is refused
// whole: main stays, and the pusher is told. (Before, main moved, the push was answered as
// a success and which key pushed it was lost.)
func TestGitPushRefusedWhenKeyNotRecorded(t *testing.T) {
	hook := newPausedHook(t, false)
	g := startGitServerWith(t, GitOptions{HookProgram: hook.program})
	_, secret, err := g.keys.Create("laptop", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	store := g.createStore(t, secret, "notes")
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	repo := st.RepoPath()
	before := g.head(t, store)
	work := t.TempDir()
	gitOK(t, work, "clone", "-q", g.repoURL(secret, store), "c")
	wt := filepath.Join(work, "c")
	put(t, filepath.Join(wt, "a.md"), "a\n")
	gitOK(t, wt, "add", "-A")
	gitOK(t, wt, "commit", "-qm", "a")

	pushed := hook.push(t, wt)
	if err := g.data.Close(); err != nil {
		t.Fatal(err)
	}
	r := hook.resume(t, pushed)
	if r.err == nil {
		t.Fatalf("push accepted although its key could not be recorded:\n%s", r.out)
	}
	mustHave(t, "refused push", r.out, "[remote rejected] main -> main", "gitmem could not record", "nothing was changed")
	if testing.Verbose() {
		t.Log(r.out)
	}
	if head := strings.TrimSpace(gitOK(t, repo, "rev-parse", "refs/heads/main")); head != before {
		t.Errorf("main moved to %s by a push whose key was not recorded", head)
	}
}

// pausedHook is a push hook that waits for the test: it adds a line to dir/paused and waits
// for dir/go, before or after the real hook's checks.
type pausedHook struct{ program, dir string }

func newPausedHook(t *testing.T, afterChecks bool) pausedHook {
	t.Helper()
	hook := fastHook
	if hook == "" {
		var err error
		if hook, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	h := pausedHook{dir: t.TempDir()}
	h.program = filepath.Join(h.dir, "paused-hook")
	wait := fmt.Sprintf("echo >>'%s/paused'\nwhile [ ! -e '%s/go' ]; do sleep 0.01; done\n", h.dir, h.dir)
	script := "#!/bin/sh\n" + wait + "exec '" + hook + "' \"$@\"\n"
	if afterChecks {
		script = "#!/bin/sh\n'" + hook + "' \"$@\"\nrc=$?\n" + wait + "exit $rc\n"
	}
	put(t, h.program, script)
	os.Chmod(h.program, 0o755)
	return h
}

type pushResult struct {
	out string
	err error
}

// paused is how many pushes' hooks have paused.
func (h pausedHook) paused() int {
	b, _ := os.ReadFile(filepath.Join(h.dir, "paused"))
	return bytes.Count(b, []byte("\n"))
}

// push starts git push origin main in wt and returns once its hook has paused (one more
// hook than before).
func (h pausedHook) push(t *testing.T, wt string) <-chan pushResult {
	t.Helper()
	before := h.paused()
	// A test that fails while the hook waits lets it go on, before its server closes (which
	// waits for the push).
	t.Cleanup(func() { os.WriteFile(filepath.Join(h.dir, "go"), nil, 0o644) })
	pushed := make(chan pushResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", "push", "origin", "main")
		cmd.Dir, cmd.Env = wt, gitEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ctx.Err() != nil {
			err = fmt.Errorf("the push did not end within a minute: %w", err)
		}
		pushed <- pushResult{out.String(), err}
	}()
	for {
		if h.paused() > before {
			return pushed
		}
		select {
		case r := <-pushed:
			t.Fatalf("push ended before its hook: %v\n%s", r.err, r.out)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// resume lets the hook go on and waits for the push.
func (h pausedHook) resume(t *testing.T, pushed <-chan pushResult) pushResult {
	t.Helper()
	put(t, filepath.Join(h.dir, "go"), "")
	return <-pushed
}

// TestGitPushRenameHoldsName: a push that renames its store holds the new name from the
// hook's check until git has moved main. The hook has accepted a push that renames store a
// to "shared" and waits before git moves main: meanwhile the API refuses to rename store b,
// or create a store, to "shared" (409, without a's id), and so does a push that renames b.
// Then a has the name and b keeps its own. (Before, the API rename went through and both
// stores were named "shared".) Once the push is done the hold ends: after a is renamed
// away, b may take the name.
func TestGitPushRenameHoldsName(t *testing.T) {
	hook, g, a, b := pausedStoresAB(t)
	wtA := renamedClone(t, g, a, "shared")
	wtB := renamedClone(t, g, b, "shared")

	pushedA := hook.push(t, wtA)
	status, body := rawRequest(t, "POST", g.url+"/v1/memory_stores/"+b, `{"name":"shared"}`, nil)
	if status != http.StatusConflict || !strings.Contains(body, "conflict_error") ||
		!strings.Contains(body, `the name \"shared\" is being given to another memory store by a push`) || strings.Contains(body, a) {
		t.Errorf("API rename to the name a push holds: %d %s", status, body)
	}
	status, body = rawRequest(t, "POST", g.url+"/v1/memory_stores", `{"name":"shared"}`, nil)
	if status != http.StatusConflict || strings.Contains(body, a) {
		t.Errorf("create of the name a push holds: %d %s", status, body)
	}
	pushedB := hook.push(t, wtB) // refused by its check, then paused too
	rA := hook.resume(t, pushedA)
	rB := <-pushedB
	if rA.err != nil {
		t.Fatalf("the push that renames a: %v\n%s", rA.err, rA.out)
	}
	if rB.err == nil {
		t.Fatalf("a second store renamed by a push to the name the first holds:\n%s", rB.out)
	}
	mustHave(t, "push of b", rB.out, `/.gitmem/store.json: the name "shared" is being given to another memory store by a push`)
	if strings.Contains(rB.out, a) {
		t.Errorf("the refusal names store a:\n%s", rB.out)
	}
	if got := storeName(t, g, a); got != "shared" {
		t.Errorf("a is named %q after its push", got)
	}
	if got := storeName(t, g, b); got != "b" {
		t.Errorf("b is named %q", got)
	}

	// The push is done: "shared" is a's as any name is, and free once a has another.
	status, body = rawRequest(t, "POST", g.url+"/v1/memory_stores/"+b, `{"name":"shared"}`, nil)
	if status != http.StatusConflict || !strings.Contains(body, "exists already") {
		t.Errorf("API rename to a's name: %d %s", status, body)
	}
	g.api(t, "POST", "/v1/memory_stores/"+a, "", `{"name":"a again"}`, &struct{}{})
	if status, body := rawRequest(t, "POST", g.url+"/v1/memory_stores/"+b, `{"name":"shared"}`, nil); status != http.StatusOK {
		t.Errorf("API rename to the name after the push ended: %d %s", status, body)
	}
}

// TestGitPushRenameReleasesName: a push that renames its store and that git refuses after
// the hook accepted it (an API write moved main meanwhile) gives the name back as soon as it
// is answered: another store may take it at once. A push that the name check refuses holds
// nothing either.
func TestGitPushRenameReleasesName(t *testing.T) {
	hook, g, a, b := pausedStoresAB(t)
	wtA := renamedClone(t, g, a, "shared")
	pushed := hook.push(t, wtA)
	g.write(t, "", a, "/api.md", "from the API\n") // moves main: git refuses the push
	r := hook.resume(t, pushed)
	if r.err == nil {
		t.Fatalf("push went through over an answered write:\n%s", r.out)
	}
	mustHave(t, "push that lost", r.out, "[remote rejected] main -> main")
	if got := storeName(t, g, a); got != "a" {
		t.Errorf("a is named %q after its refused push", got)
	}
	if status, body := rawRequest(t, "POST", g.url+"/v1/memory_stores/"+b, `{"name":"shared"}`, nil); status != http.StatusOK {
		t.Fatalf("API rename to the name of a refused push: %d %s", status, body)
	}

	// a's push again, now that b has the name: refused by the check, which holds nothing.
	gitOK(t, wtA, "pull", "-q", "--rebase")
	mustHave(t, "push to b's name", gitFails(t, wtA, "push", "origin", "main"),
		`/.gitmem/store.json: a memory store named "shared" exists already`)
	g.api(t, "POST", "/v1/memory_stores/"+b, "", `{"name":"b"}`, &struct{}{})
	wtC := renamedClone(t, g, g.createStore(t, "", "c"), "shared")
	gitOK(t, wtC, "push", "-q", "origin", "main")
	if got := storeName(t, g, a); got != "a" {
		t.Errorf("a is named %q", got)
	}
}

// pausedStoresAB is a server whose pushes wait for the test after the hook's checks, with
// two stores, named "a" and "b".
func pausedStoresAB(t *testing.T) (hook pausedHook, g *gitSrv, a, b string) {
	t.Helper()
	hook = newPausedHook(t, true)
	g = startGitServerWith(t, GitOptions{HookProgram: hook.program})
	return hook, g, g.createStore(t, "", "a"), g.createStore(t, "", "b")
}

// renamedClone clones store and commits a rename of it to name in .gitmem/store.json; it
// returns the work tree.
func renamedClone(t *testing.T, g *gitSrv, store, name string) string {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "c")
	gitOK(t, "", "clone", "-q", g.repoURL("", store), wt)
	e := &ruleEnv{t: t, store: store, wt: wt}
	raw, err := os.ReadFile(filepath.Join(wt, ".gitmem/store.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &e.info); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(wt, ".gitmem/store.json"), e.withInfo(func(m map[string]any) { m["name"] = name }))
	gitOK(t, wt, "commit", "-qam", "rename to "+name)
	return wt
}

// storeName is the store's name as the API answers it.
func storeName(t *testing.T, g *gitSrv, store string) string {
	t.Helper()
	var st struct{ Name string }
	g.api(t, "GET", "/v1/memory_stores/"+store, "", "", &st)
	return st.Name
}
