package httpapi

import (
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
)

// TestGitProposalBranchesOfOthers: a propose key's git sees neither another key's proposal
// made through the API nor its pushed branch (the API refuses it both), and cannot push onto
// them; the branches that gitmem keeps of the API's proposals (proposals/prop_...) take no
// push from anyone, so that what a reviewer fetches there is what the proposal holds. The
// proposer sees its own; a read_write key sees them all.
func TestGitProposalBranchesOfOthers(t *testing.T) {
	g := startGitServer(t)
	rw, a, b, store := twoProposers(t, g)

	// A proposes through the API; a reviewer's read makes its branch proposals/<prop_id>.
	g.write(t, a, store, "/a.md", "for A's reviewer only\n")
	propA := onlyProposal(t, g, rw, store)
	// A pushes a branch too.
	wa := filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", g.repoURL(a, store), wa)
	commitFile(t, wa, "vat.md", "Prices include VAT.\n", "VAT")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/vat")

	refs := func(key string) string { return gitOK(t, "", "ls-remote", g.repoURL(key, store)) }
	if out := refs(rw); !strings.Contains(out, "refs/heads/proposals/"+propA) || !strings.Contains(out, "refs/heads/proposals/vat") {
		t.Fatalf("a read_write key's ls-remote lacks the proposals' branches:\n%s", out)
	}
	if out := refs(a); !strings.Contains(out, "refs/heads/proposals/"+propA) || !strings.Contains(out, "refs/heads/proposals/vat") {
		t.Errorf("A's ls-remote lacks its own proposals' branches:\n%s", out)
	}
	if out := refs(b); strings.Contains(out, "proposals/") {
		t.Errorf("B's ls-remote shows A's proposals' branches:\n%s", out)
	}
	// A branch that no open proposal holds yet (one pushed while B's fetch runs, say) is
	// hidden from B's fetches too: they see the proposal branches of B's own proposals only.
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetBranch(context.Background(), gitstore.ProposalBranches+"stray", st.Head()); err != nil {
		t.Fatal(err)
	}
	if out := refs(b); strings.Contains(out, "proposals/") {
		t.Errorf("B's ls-remote shows a branch of no open proposal:\n%s", out)
	}
	if out := refs(rw); !strings.Contains(out, "proposals/stray") {
		t.Errorf("a read_write key's ls-remote lacks a branch:\n%s", out)
	}
	wb := filepath.Join(t.TempDir(), "b")
	gitOK(t, "", "clone", "-q", g.repoURL(b, store), wb)
	gitFails(t, wb, "fetch", "-q", "origin", "refs/heads/proposals/"+propA)
	gitFails(t, wb, "fetch", "-q", "origin", "refs/heads/proposals/vat")
	// Nor by its commit's hash, which protocol v2's fetch would serve: a propose key's git
	// speaks v0, which serves only what it advertised. The raw request is what a client that
	// skips git's own check of the hash would send.
	vat := strings.TrimSpace(gitOK(t, wa, "rev-parse", "HEAD"))
	for _, v := range []string{"0", "2"} {
		if out := gitFails(t, wb, "-c", "protocol.version="+v, "fetch", "-q", "origin", vat); !strings.Contains(out, "unadvertised object") {
			t.Errorf("B's fetch of A's commit by its hash, protocol v%s: %s", v, out)
		}
	}
	want := fmt.Sprintf("want %s\n", vat)
	status, raw := g.rawGit(t, b, store, "upload-pack", fmt.Sprintf("%04x%s00000009done\n", len(want)+4, want), "version=2")
	if !strings.Contains(raw, "not our ref") {
		t.Errorf("B's raw upload-pack request for A's commit: %d %q", status, raw[:min(len(raw), 300)])
	}

	// Onto A's branches: refused, to B for being A's, and to anyone for proposals/prop_...
	put(t, filepath.Join(wb, "rules.md"), "Anything goes.\n")
	gitOK(t, wb, "commit", "-qam", "B's")
	if out := gitFails(t, wb, "push", "origin", "HEAD:proposals/vat"); !strings.Contains(out, "hidden ref") {
		t.Errorf("B's push onto A's branch: %s", out)
	}
	if out := gitFails(t, wb, "push", "origin", "HEAD:proposals/"+propA); !strings.Contains(out, "hidden ref") {
		t.Errorf("B's push onto proposals/%s: %s", propA, out)
	}
	// A itself, a fast-forward of its proposal's branch that would show reviewers who fetch
	// it something else than the proposal holds.
	gitOK(t, wa, "fetch", "-q", "origin", "refs/heads/proposals/"+propA)
	gitOK(t, wa, "checkout", "-q", "FETCH_HEAD")
	put(t, filepath.Join(wa, "a.md"), "harmless\n")
	gitOK(t, wa, "commit", "-qam", "looks harmless")
	if out := gitFails(t, wa, "push", "origin", "HEAD:proposals/"+propA); !strings.Contains(out, "proposals made through the API") {
		t.Errorf("A's push onto proposals/%s: %s", propA, out)
	}
	if out := gitFails(t, wa, "push", "origin", "HEAD:refs/heads/proposals/PROP_mine"); !strings.Contains(out, "proposals made through the API") {
		t.Errorf("A's push to proposals/PROP_mine: %s", out)
	}
	gitOK(t, wb, "push", "-q", "origin", "HEAD:proposals/b-own")
	if out := refs(b); !strings.Contains(out, "refs/heads/proposals/b-own") || strings.Contains(out, "proposals/vat") {
		t.Errorf("B's ls-remote after its own push:\n%s", out)
	}
}

// TestGitProposalBranchesBounded: a propose key's push that would open more proposals than
// its key has room for is refused before git makes its branches, so that none is left
// holding commits that nothing reviews; a push to a branch whose proposal is open updates it.
func TestGitProposalBranchesBounded(t *testing.T) {
	g := startGitServerLimited(t, GitOptions{HookProgram: fastHook}, Limits{MaxOpenProposalsPerKey: 2})
	rw, _, _, store, wa := proposerClone(t, g)
	commit := func(content string) {
		put(t, filepath.Join(wa, "idea.md"), content)
		gitOK(t, wa, "add", "-A")
		gitOK(t, wa, "commit", "-qm", content)
	}
	commit("one\n")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/one")
	if out := gitFails(t, wa, "push", "origin", "HEAD:proposals/two", "HEAD:proposals/three"); !strings.Contains(out, "has 1 open proposal in memory store "+store+" and this would open 2 more; 2 is the most one key may have") ||
		!strings.Contains(out, "push to a branch whose proposal is open, or ask a reviewer") {
		t.Errorf("a push of two new branches with room for one: %s", out)
	}
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/two")
	if out := gitFails(t, wa, "push", "origin", "HEAD:proposals/three"); !strings.Contains(out, "has 2 open proposals") {
		t.Errorf("a third branch past the key's 2: %s", out)
	}
	if out := gitOK(t, "", "ls-remote", g.repoURL(rw, store)); strings.Contains(out, "proposals/three") {
		t.Errorf("a refused branch is in the repository:\n%s", out)
	}
	commit("one, again\n")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/one")
	var list struct{ Data []struct{ ID string } }
	g.api(t, "GET", "/v1/memory_stores/"+store+"/proposals?state=open", rw, "", &list)
	if len(list.Data) != 2 {
		t.Errorf("open proposals: %+v", list.Data)
	}
}

// TestGitPushTakesOnlyItsBranches: a push opens proposals of the branches it moved only, not
// of one that another key's push made while it ran; and where it has no room, it removes
// none of those. Key A's push is played by hand: its snapshot of the branches, then B's
// push, then the end of A's push, which moved no branch.
func TestGitPushTakesOnlyItsBranches(t *testing.T) {
	for _, full := range []bool{false, true} {
		lim := Limits{}
		if full {
			lim.MaxOpenProposalsPerKey = 1
		}
		g := startGitServerLimited(t, GitOptions{HookProgram: fastHook}, lim)
		_, rw, _ := g.keys.Create("person", apikeys.ReadWrite, "")
		ka, a, _ := g.keys.Create("agent-a", apikeys.Propose, "")
		_, b, _ := g.keys.Create("agent-b", apikeys.Propose, "")
		store := g.createStore(t, rw, "team")
		g.write(t, rw, store, "/rules.md", "rules\n")
		ctx := context.Background()
		st, err := g.data.Store(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		if full {
			g.write(t, a, store, "/a.md", "A's\n") // A's one proposal
		}
		wb := filepath.Join(t.TempDir(), "b")
		gitOK(t, "", "clone", "-q", g.repoURL(b, store), wb)
		commitFile(t, wb, "secret.md", "B's secret\n", "B")
		gitOK(t, wb, "push", "-q", "origin", "HEAD:proposals/b")
		c := echo.New().NewContext(httptest.NewRequest("POST", "/", nil), httptest.NewRecorder())
		c.Set(callerKey, caller{key: &ka, actor: keyActor(ka)})
		g.srv.proposeBranches(ctx, c, st, nil)

		after, err := st.Branches(ctx, gitstore.ProposalBranches)
		if err != nil || after["refs/heads/proposals/b"] == "" {
			t.Errorf("full=%v: B's branch after A's push ended: %v %v", full, after, err)
		}
		var list struct{ Data []struct{ ID, Title string } }
		g.api(t, "GET", "/v1/memory_stores/"+store+"/proposals?state=open", a, "", &list)
		for _, p := range list.Data {
			if strings.Contains(p.Title, "Branch b") {
				t.Errorf("full=%v: A holds a proposal of B's branch: %+v", full, p)
			}
		}
	}
}

// TestGitPushUndoneWithoutRoom: where a push's branch can open no proposal after all (pushes
// at once took the room that each was checked to have), the push's move of the branch is
// undone, so that no branch holds commits that nothing reviews: an existing branch goes back
// to its commit, a new one away. The race is played by hand: the branches moved as git would,
// then the end of the push.
func TestGitPushUndoneWithoutRoom(t *testing.T) {
	g := startGitServerLimited(t, GitOptions{HookProgram: fastHook}, Limits{MaxOpenProposalsPerKey: 1})
	rw, ka, a, store, wa := proposerClone(t, g)
	commitFile(t, wa, "vat.md", "Prices include VAT.\n", "VAT")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/vat")
	id := onlyProposal(t, g, rw, store)
	if code := g.api(t, "POST", "/v1/memory_stores/"+store+"/proposals/"+id+"/approve", rw, "{}", nil); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	g.write(t, a, store, "/a.md", "A's\n") // the key's one open proposal
	ctx := context.Background()
	st, err := g.data.Store(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	const vat, fresh = gitstore.ProposalBranches + "vat", gitstore.ProposalBranches + "fresh"
	was, err := st.Branches(ctx, gitstore.ProposalBranches)
	if err != nil || was[vat] == "" {
		t.Fatalf("branches: %v %v", was, err)
	}
	// Git moved vat on, and made fresh, to a commit that no proposal reviews.
	unreviewed := st.Head()
	for _, ref := range []string{vat, fresh} {
		if err := st.SetBranch(ctx, ref, unreviewed); err != nil {
			t.Fatal(err)
		}
	}
	c := echo.New().NewContext(httptest.NewRequest("POST", "/", nil), httptest.NewRecorder())
	c.Set(callerKey, caller{key: &ka, actor: keyActor(ka)})
	g.srv.proposeBranches(ctx, c, st, map[string]gitserve.Move{vat: {From: was[vat], To: unreviewed}, fresh: {To: unreviewed}})
	now, err := st.Branches(ctx, gitstore.ProposalBranches)
	if err != nil || now[vat] != was[vat] || now[fresh] != "" {
		t.Errorf("branches after the push that opened no proposal: %v %v; want vat at %s and no fresh", now, err, was[vat])
	}
}

// TestGitPartialApprovalDropsBranch: a proposal approved in part no longer has a branch that
// holds the changes the reviewer dropped.
func TestGitPartialApprovalDropsBranch(t *testing.T) {
	g := startGitServer(t)
	rw, a, b, store := twoProposers(t, g)
	g.write(t, a, store, "/ok.md", "fine\n")
	g.write(t, a, store, "/dropped.md", "A's unapproved secret\n")
	id := onlyProposal(t, g, rw, store)
	if out := gitOK(t, "", "ls-remote", g.repoURL(rw, store)); !strings.Contains(out, "proposals/"+id) {
		t.Fatalf("the branch of %s was not made by a reviewer's read: the test shows nothing\n%s", id, out)
	}
	if code := g.api(t, "POST", "/v1/memory_stores/"+store+"/proposals/"+id+"/approve", rw, `{"paths":["/ok.md"]}`, nil); code != 200 {
		t.Fatalf("approve some: %d", code)
	}
	for _, key := range []string{rw, b} {
		if out := gitOK(t, "", "ls-remote", g.repoURL(key, store)); strings.Contains(out, "proposals/"+id) {
			t.Errorf("the branch of the partly approved %s is still there:\n%s", id, out)
		}
	}
}

// twoProposers makes a read_write key and two propose keys (agent-a, agent-b) on g, and a
// store with one memory; it returns the keys' secrets and the store's id.
func twoProposers(t *testing.T, g *gitSrv) (rw, a, b, store string) {
	t.Helper()
	_, rw, _ = g.keys.Create("person", apikeys.ReadWrite, "")
	_, a, _ = g.keys.Create("agent-a", apikeys.Propose, "")
	_, b, _ = g.keys.Create("agent-b", apikeys.Propose, "")
	store = g.createStore(t, rw, "team")
	g.write(t, rw, store, "/rules.md", "Review every change.\n")
	return rw, a, b, store
}

// proposerClone makes a read_write key rw, a propose key (ka, its secret a), a store that holds
// /rules.md, and the propose key's clone of it, wa.
func proposerClone(t *testing.T, g *gitSrv) (rw string, ka apikeys.Key, a, store, wa string) {
	t.Helper()
	_, rw, _ = g.keys.Create("person", apikeys.ReadWrite, "")
	ka, a, _ = g.keys.Create("agent", apikeys.Propose, "")
	store = g.createStore(t, rw, "team")
	g.write(t, rw, store, "/rules.md", "Review every change.\n")
	wa = filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", g.repoURL(a, store), wa)
	return rw, ka, a, store, wa
}

// onlyProposal returns the id of the store's one open proposal, read by the read_write key
// rw, which makes its branch proposals/<prop_id>.
func onlyProposal(t *testing.T, g *gitSrv, rw, store string) string {
	t.Helper()
	id := onlyOpenProposal(t, g.url+"/v1/memory_stores/"+store, rw).ID
	g.api(t, "GET", "/v1/memory_stores/"+store+"/proposals/"+id, rw, "", &struct{}{})
	return id
}

// TestGitProposalBranchQuota: a pushed proposal branch is held to the store's quotas as it
// would be once approved, as a write through the API to a proposal is: a propose key cannot
// park more than the quota on a branch to wait for review. A branch that frees space passes
// even while main is over a lowered quota.
func TestGitProposalBranchQuota(t *testing.T) {
	g := startGitServerLimited(t, GitOptions{HookProgram: fastHook}, Limits{})
	_, rw, _ := g.keys.Create("person", apikeys.ReadWrite, "")
	_, a, _ := g.keys.Create("agent", apikeys.Propose, "")
	store := g.createStore(t, rw, "team")
	g.write(t, rw, store, "/rules.md", "rules\n") // 6 bytes
	g.api(t, "POST", "/v1/memory_stores/"+store, rw, `{"policy":{"max_bytes":10}}`, &struct{}{})
	wa := filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", g.repoURL(a, store), wa)
	put(t, filepath.Join(wa, "big.md"), strings.Repeat("x", 99)+"\n")
	gitOK(t, wa, "add", "-A")
	gitOK(t, wa, "commit", "-qm", "too much")
	out := gitFails(t, wa, "push", "origin", "HEAD:proposals/big")
	mustHave(t, "over quota", out, "refs/heads/proposals/big: the branch would make the store hold, once approved, 106 bytes, past its quota max_bytes of 10")
	if out := gitOK(t, "", "ls-remote", g.repoURL(rw, store)); strings.Contains(out, "proposals/big") {
		t.Errorf("a refused branch is in the repository:\n%s", out)
	}
	var list struct{ Data []struct{ ID string } }
	g.api(t, "GET", "/v1/memory_stores/"+store+"/proposals", rw, "", &list)
	if len(list.Data) != 0 {
		t.Errorf("proposals after the refused push: %+v", list.Data)
	}

	// Within the quota, and then a branch that frees space under a lowered quota.
	gitOK(t, wa, "reset", "-q", "--hard", "origin/main")
	commitFile(t, wa, "ok.md", "ok\n", "fits")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/fits")
	g.api(t, "POST", "/v1/memory_stores/"+store, rw, `{"policy":{"max_bytes":4}}`, &struct{}{})
	gitOK(t, wa, "rm", "-q", "rules.md", "ok.md")
	gitOK(t, wa, "commit", "-qm", "frees space")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/fits")
}

// TestGitProposalBranchQuotaFromOldMain: a branch made from an older main is held to the
// quota as approving it would make the store: main now, with the branch's changes since
// it left main. Its tip alone is another store: one that a deletion in main since emptied
// would refuse a branch that fits, and one made before main filled up would let in a
// branch that does not.
func TestGitProposalBranchQuotaFromOldMain(t *testing.T) {
	g := startGitServerLimited(t, GitOptions{HookProgram: fastHook}, Limits{})
	_, rw, _ := g.keys.Create("person", apikeys.ReadWrite, "")
	_, a, _ := g.keys.Create("agent", apikeys.Propose, "")
	store := g.createStore(t, rw, "team")
	for _, p := range []string{"/a.md", "/b.md", "/c.md"} {
		g.write(t, rw, store, p, "x\n")
	}
	g.api(t, "POST", "/v1/memory_stores/"+store, rw, `{"policy":{"max_memories":3}}`, &struct{}{})
	wa := filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", g.repoURL(a, store), wa) // main full: a, b, c

	// main deletes two; the agent's branch from the full main adds one: 2 once approved.
	wr := filepath.Join(t.TempDir(), "rw")
	gitOK(t, "", "clone", "-q", g.repoURL(rw, store), wr)
	gitOK(t, wr, "rm", "-q", "b.md", "c.md")
	gitOK(t, wr, "commit", "-qm", "fewer")
	gitOK(t, wr, "push", "-q", "origin", "HEAD:main")
	roomy := g.head(t, store) // main with a only
	commitFile(t, wa, "d.md", "d\n", "one more")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/fits")

	// main fills up again; a branch from the roomy main adds two: 5 once approved.
	g.write(t, rw, store, "/e.md", "e\n")
	g.write(t, rw, store, "/f.md", "f\n")
	gitOK(t, wa, "fetch", "-q", "origin")
	gitOK(t, wa, "checkout", "-q", "-b", "late", roomy)
	put(t, filepath.Join(wa, "g.md"), "g\n")
	commitFile(t, wa, "h.md", "h\n", "two more")
	out := gitFails(t, wa, "push", "origin", "HEAD:proposals/late")
	mustHave(t, "over quota once approved", out, "refs/heads/proposals/late: the branch would make the store hold, once approved, 5 memories, past its quota max_memories of 3")
}

// TestGitProposeKeyPartialClone: a propose key's git speaks protocol v0, whose upload-pack
// serves no object by its hash, so the blobs that a partial clone fetches later by their hash
// could not come: its --filter is ignored, and it gets a whole clone that checks out, pulls
// and pushes a branch.
func TestGitProposeKeyPartialClone(t *testing.T) {
	g := startGitServer(t)
	rw, a, _, store := twoProposers(t, g)
	wa := filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", "--filter=blob:none", g.repoURL(a, store), wa)
	if out := gitOK(t, wa, "status", "--porcelain"); out != "" {
		t.Errorf("the partial clone's work tree is not main's:\n%s", out)
	}
	g.write(t, rw, store, "/later.md", "Written after the clone.\n")
	gitOK(t, wa, "pull", "-q")
	if b, err := os.ReadFile(filepath.Join(wa, "later.md")); err != nil || string(b) != "Written after the clone.\n" {
		t.Errorf("pulled later.md: %q %v", b, err)
	}
	commitFile(t, wa, "vat.md", "Prices include VAT.\n", "VAT")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/vat")
	onlyProposal(t, g, rw, store)
}

// TestGitPushOfStaleBranchOpensNothing: a push whose update of a proposal branch says that
// the branch is elsewhere than it is (here: makes it, though it is there, at the very commit
// the push names) is not the push that put the branch where it is: git refuses the update,
// and no proposal of the pusher's takes the branch (nor would its move be undone, were the
// proposal to find no room). The request is raw, as a client of its own would send it: git
// itself does not send an old value that the server did not advertise.
func TestGitPushOfStaleBranchOpensNothing(t *testing.T) {
	g := startGitServer(t)
	rw, a, b, store := twoProposers(t, g)
	wa := filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", g.repoURL(a, store), wa)
	commitFile(t, wa, "vat.md", "Prices include VAT.\n", "VAT")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/vat")
	id := onlyProposal(t, g, rw, store)
	if code := g.api(t, "POST", "/v1/memory_stores/"+store+"/proposals/"+id+"/approve", rw, "{}", nil); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	const vat = gitstore.ProposalBranches + "vat"
	was, err := st.Branches(context.Background(), gitstore.ProposalBranches)
	if err != nil || was[vat] == "" {
		t.Fatalf("branches: %v %v", was, err)
	}
	cmd := fmt.Sprintf("%s %s %s\x00report-status\n", strings.Repeat("0", 40), was[vat], vat)
	pack := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00")
	sum := sha1.Sum(pack)
	body := fmt.Sprintf("%04x%s0000%s%s", len(cmd)+4, cmd, pack, sum[:])
	if _, raw := g.rawGit(t, b, store, "receive-pack", body, ""); strings.Contains(raw, "ok "+vat) {
		t.Fatalf("git made %s, which is there: %q", vat, raw)
	}
	var list struct{ Data []struct{ ID, Title string } }
	g.api(t, "GET", "/v1/memory_stores/"+store+"/proposals?state=open", rw, "", &list)
	if len(list.Data) != 0 {
		t.Errorf("B's refused push opened %+v", list.Data)
	}
}

// rawGit sends body to the git service (upload-pack or receive-pack) of store with key, as a
// client of its own would, with the Git-Protocol header protocol if not "", and returns the
// answer's status and body.
func (g *gitSrv) rawGit(t *testing.T, key, store, service, body, protocol string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", g.url+"/git/"+store+".git/git-"+service, strings.NewReader(body))
	req.SetBasicAuth("gitmem", key)
	req.Header.Set("Content-Type", "application/x-git-"+service+"-request")
	if protocol != "" {
		req.Header.Set("Git-Protocol", protocol)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(raw)
}
