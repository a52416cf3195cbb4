package httpapi

import (
	"bytes"
	"context"
	"fmt"
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

// pausedHook is a push hook that waits for the test: it touches dir/paused and waits for
// dir/go, before or after the real hook's checks.
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
	wait := fmt.Sprintf("touch '%s/paused'\nwhile [ ! -e '%s/go' ]; do sleep 0.01; done\n", h.dir, h.dir)
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

// push starts git push origin main in wt and returns once the hook has paused.
func (h pausedHook) push(t *testing.T, wt string) <-chan pushResult {
	t.Helper()
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
		if _, err := os.Stat(filepath.Join(h.dir, "paused")); err == nil {
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
