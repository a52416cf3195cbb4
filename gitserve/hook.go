package gitserve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// Environment variables between the server, git http-backend and the hook.
const (
	hookEnv   = "GITMEM_GIT_HOOK"    // set by the hook script: run as this hook
	storeEnv  = "GITMEM_STORE_ID"    // the store the push goes to
	acceptEnv = "GITMEM_PUSH_ACCEPT" // the server's socket that accepts a checked push (accept.go)
	accessEnv = "GITMEM_PUSH_ACCESS" // the pushing key's access: propose pushes proposal branches only
	// deadlineEnv is when the hook gives up its checks (Request.Deadline), in Unix milliseconds.
	deadlineEnv = "GITMEM_PUSH_DEADLINE"
	// maxBranchesEnv is the most proposal branches one push may update (Request.MaxBranches).
	maxBranchesEnv = "GITMEM_PUSH_MAX_BRANCHES"
)

// RunHookIfAsked runs the git hook that the program was started as, by the script that New
// writes, and exits; otherwise it returns at once. Call it first thing in main, and in
// TestMain of the packages whose tests push through the server (their test binary is then
// the hook).
func RunHookIfAsked() {
	name := os.Getenv(hookEnv)
	if name == "" {
		return
	}
	os.Exit(runHook(name, os.Stdin, os.Stderr))
}

// maxShown bounds the problems a refused push lists.
const maxShown = 20

// lines are the problems as the pusher or importer reads them, one line each (without
// indentation): up to maxShown, then how many more.
func (c *checker) lines() []string {
	var out []string
	for i, p := range c.problems {
		if i == maxShown {
			out = append(out, fmt.Sprintf("... and %d more", len(c.problems)-maxShown))
			break
		}
		line := p.where + ": " + p.rule
		if p.commit != "" {
			line += " (commit " + p.commit + ")"
		}
		out = append(out, line)
	}
	return out
}

// runHook is the pre-receive hook: it reads the ref updates of a push on stdin, checks them
// and the objects they bring (still in git's quarantine directory) and refuses the push whole,
// with exit status 1 and the reasons on stderr, which git shows the pusher as "remote: ...".
// A push that passes is accepted only once the server has recorded it (askAccept).
func runHook(name string, stdin io.Reader, stderr io.Writer) int {
	errw := bufio.NewWriter(stderr)
	defer errw.Flush()
	if name != "pre-receive" {
		fmt.Fprintf(errw, "gitmem: unknown git hook %q\n", name)
		return 1
	}
	// The server names its git in the environment (gitexec.PathEnv).
	if _, err := gitexec.Path(); err != nil {
		fmt.Fprintln(errw, "gitmem could not check this push (git is not in PATH); nothing was changed")
		return 1
	}
	storeID := os.Getenv(storeEnv)
	if storeID == "" {
		wd, _ := os.Getwd()
		storeID, _ = gitstore.Layout{}.RepoStore(filepath.Base(wd))
	}
	var updates []update
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 {
			updates = append(updates, update{old: f[0], new: f[1], ref: f[2]})
		}
	}
	objs, err := newObjects(nil)
	if err != nil {
		fmt.Fprintf(errw, "gitmem could not check this push (%v); nothing was changed\n", err)
		return 1
	}
	defer objs.close()
	c := &checker{storeID: storeID, objs: objs, reported: map[string]bool{}, access: os.Getenv(accessEnv),
		trees: map[string]bool{}, blobs: map[string]string{}}
	if ms, err := strconv.ParseInt(os.Getenv(deadlineEnv), 10, 64); err == nil {
		c.deadline = time.UnixMilli(ms)
	}
	c.maxBranches, _ = strconv.Atoi(os.Getenv(maxBranchesEnv))
	commits, err := c.check(updates)
	if err == nil && len(c.problems) == 0 {
		err = c.checkPushedObjects()
	}
	if errors.Is(err, errLate) {
		fmt.Fprintln(errw, "gitmem could not check this push within the time the server gives a git request (gitmem serve --git-timeout); "+
			"nothing was changed: push fewer commits or branches at a time")
		return 1
	}
	if err != nil {
		fmt.Fprintf(errw, "gitmem could not check this push (%v); nothing was changed\n", err)
		return 1
	}
	if len(c.problems) > 0 {
		fmt.Fprintln(errw, "gitmem refused this push; nothing was changed:")
		for _, line := range c.lines() {
			fmt.Fprintln(errw, "  "+line)
		}
		if c.commit != "" {
			fmt.Fprintln(errw, "Fix the commits (git commit --amend, or git rebase -i for older ones) and push again.")
		}
		return 1
	}
	if path := os.Getenv(acceptEnv); path != "" {
		err := askAccept(path, Push{Commits: commits, Proposed: c.proposed, Branches: c.branches, Rename: c.rename})
		var r Refusal
		switch {
		case errors.As(err, &r):
			fmt.Fprintf(errw, "gitmem refused this push; nothing was changed:\n  %s\n", r)
			return 1
		case err != nil:
			fmt.Fprintf(errw, "gitmem could not record this push (%v); nothing was changed\n", err)
			return 1
		}
	}
	return 0
}
