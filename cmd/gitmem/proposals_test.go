package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/proposals"
	"github.com/gitmem/gitmem/proposals/proposalstest"
)

// TestProposalsCLI: an agent with a propose key writes with the CLI; a person lists, reads,
// comments on, rejects and approves its proposals with the CLI through the server.
func TestProposalsCLI(t *testing.T) {
	_, url, rw, pk, as := servedTeam(t)
	as(rw, 0, "Review every change.\n", "put", "team", "/rules.md")
	mustContain(t, "the agent's put", as(pk, 0, "Ship on Fridays.\n", "put", "team", "/idea.md"),
		"created /idea.md (mem_", "version memver_", "in proposal prop_", "not in main until a person approves it")
	if out := as(rw, 0, "", "ls", "team"); strings.Contains(out, "idea.md") {
		t.Errorf("main lists the proposal's memory:\n%s", out)
	}
	if out := as(pk, 0, "", "cat", "team", "/idea.md"); out != "Ship on Fridays.\n" {
		t.Errorf("the agent reads its write: %q", out)
	}
	list := as(rw, 0, "", "proposals", "list", "team", "--state", "open")
	mustContain(t, "list", list, "open", `Changes by key "agent"`)
	id := regexp.MustCompile(`prop_[0-9A-Z]+`).FindString(list)
	mustContain(t, "show", as(rw, 0, "", "proposals", "show", "team", id), "created /idea.md", "+Ship on Fridays.")
	// Read, the proposal is a branch of the store's repository too, which git can fetch.
	remote := strings.Replace(url, "http://", "http://x:"+rw+"@", 1) + "/git/team.git"
	if out, err := gitAs(t.TempDir(), "ls-remote", remote); err != nil || !strings.Contains(out, "refs/heads/proposals/"+id) {
		t.Errorf("git ls-remote: %v\n%s", err, out)
	}
	mustContain(t, "comment", as(pk, 0, "", "proposals", "comment", "team", id, "Fridays are quiet."), "(1 comment)")
	mustContain(t, "the agent approves", as(pk, 5, "", "proposals", "approve", "team", id), "may only propose")
	as(rw, 2, "", "proposals", "list", "team", "--state", "shut")
	mustContain(t, "approve", as(rw, 0, "", "proposals", "approve", "team", id), "approved "+id, "fast-forward")
	if out := as(rw, 0, "", "cat", "team", "/idea.md"); out != "Ship on Fridays.\n" {
		t.Errorf("after approval main has %q", out)
	}
	mustContain(t, "approve again", as(rw, 4, "", "proposals", "approve", "team", id), "approved already")

	// A second proposal, conflicting with main: refused with nothing written, then rejected.
	as(pk, 0, "Ship on Mondays.\n", "put", "team", "/idea.md")
	as(rw, 0, "Ship on Thursdays.\n", "put", "team", "/idea.md")
	var open struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.Unmarshal([]byte(as(rw, 0, "", "proposals", "list", "team", "--state", "open", "--json")), &open)
	if len(open.Data) != 1 || open.Data[0].ID == id {
		t.Fatalf("open proposals: %+v", open)
	}
	second := open.Data[0].ID
	mustContain(t, "a conflict", as(rw, 4, "", "proposals", "approve", "team", second), "conflicts with main at /idea.md", "nothing was written")
	as(rw, 0, "", "proposals", "show", "team", second) // its branch, as it is read
	mustContain(t, "reject", as(rw, 0, "", "proposals", "reject", "team", second, "--comment", "We ship on Thursdays."), "rejected "+second)
	if out, _ := gitAs(t.TempDir(), "ls-remote", remote); strings.Contains(out, "refs/heads/proposals/"+second) {
		t.Errorf("a rejected proposal's branch is still there:\n%s", out)
	}
	if out := as(rw, 0, "", "cat", "team", "/idea.md"); out != "Ship on Thursdays.\n" {
		t.Errorf("after the rejection main has %q", out)
	}
	// The agent's next write opens a third proposal; reading the rejected one still works.
	mustContain(t, "show rejected", as(rw, 0, "", "proposals", "show", "team", second), "rejected", "We ship on Thursdays.", "-Ship on Thursdays.", "+Ship on Mondays.")

	// Some of a proposal: --path.
	as(pk, 0, "yes\n", "put", "team", "/yes.md")
	as(pk, 0, "no\n", "put", "team", "/no.md")
	json.Unmarshal([]byte(as(rw, 0, "", "proposals", "list", "team", "--state", "open", "--json")), &open)
	if len(open.Data) != 1 {
		t.Fatalf("open proposals: %+v", open)
	}
	mustContain(t, "approve some", as(rw, 0, "", "proposals", "approve", "team", open.Data[0].ID, "--path", "/yes.md"), "approved "+open.Data[0].ID)
	as(rw, 0, "", "cat", "team", "/yes.md")
	as(rw, 3, "", "cat", "team", "/no.md")
}

// servedTeam is a data directory with the store "team", a read_write key (rw, named
// "person") and a propose key (pk, named "agent"), held by a running server at url; as runs
// gitmem with a key, fails the test unless it exits with wantCode, and returns its output.
func servedTeam(t *testing.T) (c *cli, url, rw, pk string, as func(key string, wantCode int, stdin string, args ...string) string) {
	c = newCLI(t)
	c.ok("", "stores", "create", "team")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`)
	rw = secret.FindString(c.ok("", "keys", "create", "--name", "person"))
	pk = secret.FindString(c.ok("", "keys", "create", "--name", "agent", "--access", "propose"))
	url, _ = serveForGit(t, c)
	as = func(key string, wantCode int, stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY="+key), stdin, args...)
		if code != wantCode {
			t.Fatalf("gitmem %v: exit %d, want %d\n%s%s", args, code, wantCode, out, errOut)
		}
		return out + errOut
	}
	return c, url, rw, pk, as
}

// TestProposalsCLILocal: without a server the commands read the data directory's proposals.
func TestProposalsCLILocal(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "team")
	if out := c.none("", "proposals", "list", "team"); out != "no proposals\n" {
		t.Errorf("list: %q", out)
	}
	if _, errOut, code := c.run("", "proposals", "show", "team", "prop_01M8A1ZCW3TN4QA7YRPCH6C3Y1"); code != exitNotFound || !strings.Contains(errOut, "has no proposal") {
		t.Errorf("show a missing proposal: exit %d %s", code, errOut)
	}
	if _, errOut, code := c.run("", "proposals", "list", "nope"); code != exitNotFound {
		t.Errorf("list of a missing store: exit %d %s", code, errOut)
	}
}

// TestProposalsCLIPages: gitmem proposals list shows every proposal of a store that has
// more than a page of them (the API's largest is 100), newest first, each once, with
// --state too: on the data directory and through the server.
func TestProposalsCLIPages(t *testing.T) {
	c := newCLI(t)
	id := storeIDRe.FindString(c.ok("", "stores", "create", "team"))
	agent := gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_01M8A1ZCW3TN4QA7YRPCH6C3Y1", Name: "agent"}
	seeded := proposalstest.Decided(id, 230, agent, func(i int, p *proposals.Proposal) {
		if i%3 == 0 {
			p.State, p.Merge, p.Dropped = proposals.Rejected, "", true
		}
	})
	if err := proposalstest.Write(gitstore.Layout{Root: c.data}, id, seeded); err != nil {
		t.Fatal(err)
	}
	var all, rejected []string // newest first
	for i := len(seeded) - 1; i >= 0; i-- {
		all = append(all, seeded[i].ID)
		if seeded[i].State == proposals.Rejected {
			rejected = append(rejected, seeded[i].ID)
		}
	}
	listed := regexp.MustCompile(`(?m)^(prop_[0-9A-Z]+) `)
	check := func(where string) {
		t.Helper()
		for _, tc := range []struct {
			args []string
			want []string
		}{{nil, all}, {[]string{"--state", "rejected"}, rejected}} {
			var got []string
			for _, m := range listed.FindAllStringSubmatch(c.ok("", append([]string{"proposals", "list", "team"}, tc.args...)...), -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: gitmem proposals list team %v: %d proposals, want %d, newest first", where, tc.args, len(got), len(tc.want))
			}
			var asJSON struct {
				Data []struct{ ID string } `json:"data"`
			}
			if err := json.Unmarshal([]byte(c.ok("", append([]string{"proposals", "list", "team", "--json"}, tc.args...)...)), &asJSON); err != nil || len(asJSON.Data) != len(tc.want) || asJSON.Data[0].ID != tc.want[0] {
				t.Errorf("%s: gitmem proposals list team --json %v: %d proposals (%v), want %d", where, tc.args, len(asJSON.Data), err, len(tc.want))
			}
		}
	}
	check("on the data directory")
	serveForGit(t, c)
	check("through the server")
}

// TestReviewPolicyCLI: stores set --review makes a folder reviewed: the CLI's own write there
// is refused with what to do, and an agent's write through the server becomes a proposal.
func TestReviewPolicyCLI(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "team")
	mustContain(t, "set", c.ok("", "stores", "set", "team", "--review", "/team/"), "review /team/")
	mustContain(t, "show", c.ok("", "stores", "show", "team"), "review       /team/")
	mustContain(t, "a write there", c.fails("hi\n", "put", "team", "/team/a.md"), "changes only through review", "propose the change instead")
	c.ok("hi\n", "put", "team", "/elsewhere.md")
	mustContain(t, "a bad folder", c.fails("", "stores", "set", "team", "--review", "team"), "must be a folder")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(c.ok("", "keys", "create", "--name", "agent"))
	url, _ := serveForGit(t, c)
	env := append(os.Environ(), "GITMEM_API_KEY="+secret)
	out, errOut, code := c.runEnv(env, "hi\n", "put", "team", "/team/b.md")
	if code != 0 {
		t.Fatalf("the agent's put: %s", errOut)
	}
	mustContain(t, "the agent's put", out, "proposed /team/b.md in proposal prop_", "not in main until a person approves it", "gitmem proposals show team prop_")
	out, errOut, code = c.runEnv(env, "", "mv", "team", "/elsewhere.md", "/team/c.md")
	if code != 0 {
		t.Fatalf("the agent's mv: %s", errOut)
	}
	mustContain(t, "the agent's mv", out, "proposed renaming /elsewhere.md to /team/c.md in proposal prop_")

	// A git push that changes the reviewed folder is refused; one elsewhere goes through.
	work := t.TempDir()
	git := gitAs
	remote := strings.Replace(url, "http://", "http://x:"+secret+"@", 1) + "/git/team.git"
	if out, err := git(work, "clone", "-q", remote, "team"); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	wt := filepath.Join(work, "team")
	os.MkdirAll(filepath.Join(wt, "team"), 0o755)
	os.WriteFile(filepath.Join(wt, "team", "pushed.md"), []byte("pushed\n"), 0o644)
	git(wt, "add", "-A")
	git(wt, "commit", "-qm", "into the reviewed folder")
	if out, err := git(wt, "push", "-q", "origin", "main"); err == nil || !strings.Contains(out, "changes only through review") {
		t.Errorf("a push into the reviewed folder: %v\n%s", err, out)
	}
	git(wt, "reset", "-q", "--hard", "origin/main")
	os.WriteFile(filepath.Join(wt, "notes.md"), []byte("fine\n"), 0o644)
	git(wt, "add", "-A")
	git(wt, "commit", "-qm", "elsewhere")
	if out, err := git(wt, "push", "-q", "origin", "main"); err != nil {
		t.Errorf("a push elsewhere: %v\n%s", err, out)
	}
	out, _, _ = c.runEnv(env, "", "proposals", "list", "team")
	mustContain(t, "proposals", out, `Changes by key "agent"`)

	// The agent's key, which the review does not exempt, may neither lift it nor approve its
	// own proposal, through the API or with a push of the store's metadata.
	_, errOut, _ = c.runEnv(env, "", "stores", "set", "team", "--review", "")
	mustContain(t, "the agent lifts the review", errOut, "only a key that this store's review policy exempts")
	prop := regexp.MustCompile(`prop_[0-9A-Z]+`).FindString(out)
	_, errOut, _ = c.runEnv(env, "", "proposals", "approve", "team", prop)
	mustContain(t, "the agent approves its own proposal", errOut, "approving the change of /team/", "only a key that this store's review policy exempts")
	git(wt, "pull", "-q", "origin", "main")
	meta, err := os.ReadFile(filepath.Join(wt, ".gitmem", "store.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wt, ".gitmem", "store.json"), []byte(strings.Replace(string(meta), `"/team/"`, `"/other/"`, 1)), 0o644)
	git(wt, "commit", "-qam", "no more review of /team/")
	if out, err := git(wt, "push", "-q", "origin", "main"); err == nil || !strings.Contains(out, "only a key that this store's review policy exempts") {
		t.Errorf("a push that moves the review: %v\n%s", err, out)
	}
	if out, _, _ := c.runEnv(env, "", "stores", "show", "team"); !strings.Contains(out, "review       /team/") {
		t.Errorf("the review policy after the refusals:\n%s", out)
	}
}

// TestProposalBranchPush: a git push to refs/heads/proposals/NAME opens a proposal of its
// commits (a propose key may push nothing else), a second push updates it, and its approval
// brings the commits into main.
func TestProposalBranchPush(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "team")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`)
	rw := secret.FindString(c.ok("", "keys", "create", "--name", "person"))
	pk := secret.FindString(c.ok("", "keys", "create", "--name", "agent", "--access", "propose"))
	url, _ := serveForGit(t, c)
	env := append(os.Environ(), "GITMEM_API_KEY="+rw)
	c.runEnv(env, "Review every change.\n", "put", "team", "/rules.md")

	work := t.TempDir()
	remote := strings.Replace(url, "http://", "http://x:"+pk+"@", 1) + "/git/team.git"
	if out, err := gitAs(work, "clone", "-q", remote, "team"); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	wt := filepath.Join(work, "team")
	os.WriteFile(filepath.Join(wt, "vat.md"), []byte("Prices include VAT.\n"), 0o644)
	gitAs(wt, "add", "-A")
	gitAs(wt, "commit", "-qm", "VAT")
	if out, err := gitAs(wt, "push", "-q", "origin", "HEAD:main"); err == nil || !strings.Contains(out, "may only propose") {
		t.Errorf("a propose key's push to main: %v\n%s", err, out)
	}
	if out, err := gitAs(wt, "push", "-q", "origin", "HEAD:proposals/vat"); err != nil {
		t.Fatalf("push to a proposal branch: %v\n%s", err, out)
	}
	list, _, _ := c.runEnv(env, "", "proposals", "list", "team")
	mustContain(t, "list", list, `Branch vat pushed by key "agent"`)
	id := regexp.MustCompile(`prop_[0-9A-Z]+`).FindString(list)
	show, _, _ := c.runEnv(env, "", "proposals", "show", "team", id)
	mustContain(t, "show", show, "created /vat.md", "+Prices include VAT.")

	// A second push to the branch: the same proposal, with the new commit.
	os.WriteFile(filepath.Join(wt, "rules.md"), []byte("Review every change.\nTwice.\n"), 0o644)
	gitAs(wt, "commit", "-qam", "twice")
	if out, err := gitAs(wt, "push", "-q", "origin", "HEAD:proposals/vat"); err != nil {
		t.Fatalf("second push: %v\n%s", err, out)
	}
	show, _, _ = c.runEnv(env, "", "proposals", "show", "team", id)
	mustContain(t, "show after the second push", show, "2 change(s)", "modified /rules.md", "+Twice.")
	if out, _, code := c.runEnv(env, "", "cat", "team", "/vat.md"); code != exitNotFound {
		t.Errorf("main has the proposal before approval: %q", out)
	}
	if out, errOut, code := c.runEnv(env, "", "proposals", "approve", "team", id); code != 0 {
		t.Fatalf("approve: %s %s", out, errOut)
	}
	if out, _, _ := c.runEnv(env, "", "cat", "team", "/vat.md"); out != "Prices include VAT.\n" {
		t.Errorf("after approval main has %q", out)
	}
	log, _, _ := c.runEnv(env, "", "log", "team")
	mustContain(t, "the versions are the commits' author's", log, "Ann")
	log, _, _ = c.runEnv(env, "", "log", "team", "--json")
	mustContain(t, "each approved version names its approver", log, `"approved_by"`)
	if strings.Count(log, `"approved_by"`) != 2 {
		t.Errorf("want the 2 pushed changes approved:\n%s", log)
	}
}

// TestServeProposalLimits: serve's --max-open-proposals-per-key and --max-open-proposals
// bound the open proposals in place of the defaults: a key's new session past its bound, and
// another key's past the store's, are refused (409, naming the flag), with nothing written.
func TestServeProposalLimits(t *testing.T) {
	c := newCLI(t)
	id := storeIDRe.FindString(c.ok("", "stores", "create", "team"))
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`)
	a := secret.FindString(c.ok("", "keys", "create", "--name", "agent a", "--access", "propose"))
	b := secret.FindString(c.ok("", "keys", "create", "--name", "agent b", "--access", "propose"))
	c3 := secret.FindString(c.ok("", "keys", "create", "--name", "agent c", "--access", "propose"))
	rw := secret.FindString(c.ok("", "keys", "create", "--name", "person"))
	_, _, url := startServe(t, c, "--max-open-proposals-per-key", "1", "--max-open-proposals", "2")
	write := func(key, session, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/v1/memory_stores/"+id+"/memories", strings.NewReader(`{"path":"`+path+`","content":"x"}`))
		req.Header.Set("x-api-key", key)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("x-gitmem-session-id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := write(a, "sesn_a1", "/a1.md"); code != 200 {
		t.Fatalf("a's first session: %d %s", code, body)
	}
	if code, body := write(a, "sesn_a2", "/a2.md"); code != http.StatusConflict || !strings.Contains(body, "--max-open-proposals-per-key") {
		t.Errorf("a's second session past --max-open-proposals-per-key 1: %d %s", code, body)
	}
	if code, body := write(b, "sesn_b1", "/b1.md"); code != 200 {
		t.Fatalf("b's first session: %d %s", code, body)
	}
	if code, body := write(c3, "sesn_c1", "/c1.md"); code != http.StatusConflict || !strings.Contains(body, "--max-open-proposals)") {
		t.Errorf("a third key past --max-open-proposals 2: %d %s", code, body)
	}
	out, errOut, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY="+rw), "", "proposals", "list", "team", "--state", "open")
	list := out + errOut
	if n := strings.Count(list, "prop_"); code != 0 || n != 2 || strings.Contains(list, "agent c") {
		t.Errorf("open proposals after the refusals (%d):\n%s", n, list)
	}
}
