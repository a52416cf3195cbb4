package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// TestRemoteAndSync: two data directories share a store through a bare repository with
// gitmem remote and gitmem sync: the first sync fills the empty remote, the other side
// imports it, and edits on both sides merge (as text, and as a conflict memory), with what
// happened printed; then snapshot and ids agree on both sides. Bad input changes nothing.
func TestRemoteAndSync(t *testing.T) {
	remote := bareRemote(t)
	a, b := newCLI(t), newCLI(t)
	a.ok("", "stores", "create", "team")
	a.ok("one\ntwo\nthree\n", "put", "team", "/style.md")

	// Bad input, refused with a message that names the problem.
	mustContain(t, "bad name", a.fails("", "remote", "add", "team", "my/origin", remote), "remote name \"my/origin\" is not valid")
	mustContain(t, "empty URL", a.fails("", "remote", "add", "team", "origin", ""), "remote URL is empty")
	mustContain(t, "no remotes", a.fails("", "sync", "team"), "has no remotes: add one with \"gitmem remote add team NAME URL\"")
	mustContain(t, "unknown store", a.fails("", "remote", "add", "nope", "origin", remote), "no store with id or name \"nope\"")
	mustContain(t, "nothing yet", a.none("", "remote", "list"), "no remotes")

	out := a.ok("", "remote", "add", "team", "origin", remote)
	mustContain(t, "remote add", out, "added remote origin ("+remote+") to store team", "gitmem sync team")
	mustContain(t, "taken name", a.fails("", "remote", "add", "team", "origin", "/elsewhere.git"), "has a remote named \"origin\" already")
	mustContain(t, "unknown remote", a.fails("", "sync", "team", "upstream"), "has no remote named \"upstream\"")
	mustContain(t, "first sync", a.ok("", "sync", "team"), "origin: the remote was empty; pushed main")

	b.ok("", "import", remote)
	b.ok("", "remote", "add", "team", "origin", remote)
	mustContain(t, "in step", b.ok("", "sync", "team"), "origin: fetched nothing new; nothing to push")

	a.ok("ONE\ntwo\nthree\n", "put", "team", "/style.md")
	b.ok("one\ntwo\nTHREE\n", "put", "team", "/style.md")
	a.ok("from a\n", "put", "team", "/todo.md")
	b.ok("from b\n", "put", "team", "/todo.md")
	mustContain(t, "a pushes", a.ok("", "sync", "team"), "origin: fetched nothing new; pushed main")
	out = b.ok("", "sync", "team")
	mustContain(t, "b merges", out, "origin: fetched 2 commits; merged (", "1 merged as text, 1 conflict; pushed main",
		"  merged as text: /style.md", "  conflict: /todo.md (the remote's content stays); ours is at /todo.conflict-")
	mustContain(t, "a takes the merge", a.ok("", "sync", "team", "origin"), "fast-forwarded main to")
	// The same memories, versions and commits; each side lists versions in the order it
	// learned of them, so the lines are compared sorted.
	if sa, sb := sortedLines(snapshot(t, a, storeOf(t, a))), sortedLines(snapshot(t, b, storeOf(t, b))); sa != sb {
		t.Fatalf("the two sides differ:\n%s\n\n%s", sa, sb)
	}
	mustContain(t, "merged text", a.ok("", "cat", "team", "/style.md"), "ONE\ntwo\nTHREE\n")
	mustContain(t, "listing", a.ok("", "ls", "team"), "/todo.md", "/todo.conflict-")
	mustContain(t, "search finds the conflict copy", a.ok("", "search", "team", "from"), "/todo.conflict-")
	log := gitIn(t, remote, "log", "-1", "--format=%an%n%B")
	mustContain(t, "merge commit", log, "gitmem\nmerge origin/main:", "Merged as text: /style.md", "Conflict: /todo.md")

	list := a.ok("", "remote", "list", "team")
	mustContain(t, "remote list", list, "team (memstore_", "  origin  "+remote, "last sync:", "fast-forwarded main to", "remote head: ")

	// A remote that is not there: sync fails with git's message and the state says so.
	a.ok("", "remote", "add", "team", "gone", filepath.Join(t.TempDir(), "missing.git"))
	errOut := a.fails("", "sync", "team", "gone")
	mustContain(t, "failed sync", errOut, "sync with gone: fetch from gone (", "does not appear to be a git repository")
	mustContain(t, "remote list after failure", a.ok("", "remote", "list", "team"),
		"  gone  ", "last sync:   never", "last error:", "next try:", "(after 1 failed tries in a row)")
	mustContain(t, "remove", a.ok("", "remote", "remove", "team", "gone"), "removed remote gone")
	mustContain(t, "remove again", a.fails("", "remote", "remove", "team", "gone"), "has no remote named \"gone\"")
}

// bareRemote makes an empty bare repository (its HEAD on main) to be a store's remote.
func bareRemote(t *testing.T) string {
	t.Helper()
	needGitCLI(t)
	remote := filepath.Join(t.TempDir(), "team.git")
	gitIn(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)
	return remote
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func storeOf(t *testing.T, c *cli) string {
	t.Helper()
	id := storeIDRe.FindString(c.ok("", "stores", "list"))
	if id == "" {
		t.Fatal("no store")
	}
	return id
}

// TestServeSyncs: gitmem serve syncs a store with its remote after a write through the API,
// and gitmem remote list shows it while the server runs.
func TestServeSyncs(t *testing.T) {
	remote := bareRemote(t)
	c := newCLI(t)
	c.ok("", "stores", "create", "team")
	id := storeOf(t, c)
	c.ok("", "remote", "add", "team", "origin", remote)
	url, banner := serveForGit(t, c)
	mustContain(t, "banner", banner, "sync:  stores with remotes sync 2s after writes and every 1m0s")
	resp, err := http.Post(url+"/v1/memory_stores/"+id+"/memories", "application/json",
		strings.NewReader(`{"path":"/served.md","content":"written through the API\n"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var head string
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if out, _, code := c.run("", "remote", "list", id, "--json"); code == 0 {
			var list []struct {
				State struct {
					RemoteHead string `json:"remote_head"`
				} `json:"state"`
			}
			json.Unmarshal([]byte(out), &list)
			if len(list) == 1 && list[0].State.RemoteHead != "" &&
				exec.Command("git", "-C", remote, "cat-file", "-e", list[0].State.RemoteHead+":served.md").Run() == nil {
				head = list[0].State.RemoteHead
				break
			}
		}
	}
	if head == "" {
		t.Fatal("the server did not sync within 20s")
	}
	if got := strings.TrimSpace(gitIn(t, remote, "rev-parse", "main")); got != head {
		t.Fatalf("remote main %s, remote list says %s", got, head)
	}
	mustContain(t, "pushed file", gitIn(t, remote, "show", "main:served.md"), "written through the API")
	mustContain(t, "remote list while serving, by name", c.ok("", "remote", "list", "team"), "team (memstore_", "last sync:")
}

// TestSyncRedactsForks: gitmem sync on a data directory, without a server, takes a
// redaction that another replica made and pushed, and redacts it in the store's proposal
// forks as well as in the store: afterwards no object of the fork, nor of the store's
// repository, holds the content, and the proposal's thread says so.
func TestSyncRedactsForks(t *testing.T) {
	remote := bareRemote(t)
	a, b := newCLI(t), newCLI(t)
	a.ok("", "stores", "create", "team")
	id := storeOf(t, a)
	const secret = "db password: OCELOT-42\n"
	leak := versionIDRe.FindString(a.ok(secret, "put", "team", "/creds.md"))
	a.ok("ask the admin\n", "put", "team", "/creds.md")
	a.ok("", "remote", "add", "team", "origin", remote)
	a.ok("", "sync", "team")

	// An agent's write through a's server opens a proposal, whose fork holds the history
	// with the secret; then the server stops, and the rest is done on the data directory.
	pk := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(a.ok("", "keys", "create", "--name", "agent", "--access", "propose"))
	srv, _, _ := startServe(t, a)
	if out, errOut, code := a.runEnv(append(os.Environ(), "GITMEM_API_KEY="+pk), "an idea\n", "put", "team", "/idea.md"); code != 0 {
		t.Fatalf("the agent's put: exit %d\n%s%s", code, out, errOut)
	}
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.Fatalf("gitmem serve, stopped: %v", err)
	}
	prop := regexp.MustCompile(`prop_[0-9A-Z]+`).FindString(a.ok("", "proposals", "list", "team"))
	if prop == "" {
		t.Fatal("the agent's write opened no proposal")
	}
	fork := filepath.Join(gitstore.Layout{Root: a.data}.ProposalFork(id, prop), "repo.git")
	if !strings.Contains(gitIn(t, fork, "log", "-p", "--all"), "OCELOT") {
		t.Fatal("the fork does not hold the secret to begin with: the test shows nothing")
	}

	// Another replica redacts the version and pushes its rewritten history over the remote's.
	b.ok("", "import", remote)
	b.ok("", "remote", "add", "team", "origin", remote)
	b.ok("", "redact", "team", leak)
	mustContain(t, "b's sync", b.ok("", "sync", "team"), "origin: ")

	mustContain(t, "a's sync", a.ok("", "sync", "team"), "redacted 1 version as the remote did ("+leak+")")
	for what, repo := range map[string]string{"the fork": fork, "the store": gitstore.Layout{Root: a.data}.StoreRepo(id)} {
		if strings.Contains(gitIn(t, repo, "cat-file", "--batch-all-objects", "--batch"), "OCELOT") {
			t.Errorf("an object of %s holds the secret after the sync", what)
		}
	}
	mustContain(t, "the proposal's thread", a.ok("", "proposals", "show", "team", prop), leak+" was redacted from the store")
}
