package httpapi

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

// TestGitProposalBranchesOfOthers: a propose key's git sees neither another key's proposal
// made through the API nor its pushed branch (the API refuses it both), and cannot push onto
// them; the branches that gitmem keeps of the API's proposals (proposals/prop_...) take no
// push from anyone, so that what a reviewer fetches there is what the proposal holds. The
// proposer sees its own; a read_write key sees them all.
func TestGitProposalBranchesOfOthers(t *testing.T) {
	g := startGitServer(t)
	_, rw, _ := g.keys.Create("person", apikeys.ReadWrite, "")
	_, a, _ := g.keys.Create("agent-a", apikeys.Propose, "")
	_, b, _ := g.keys.Create("agent-b", apikeys.Propose, "")
	store := g.createStore(t, rw, "team")
	g.write(t, rw, store, "/rules.md", "Review every change.\n")

	// A proposes through the API; a reviewer's read makes its branch proposals/<prop_id>.
	g.write(t, a, store, "/a.md", "for A's reviewer only\n")
	var list struct{ Data []struct{ ID string } }
	g.api(t, "GET", "/v1/memory_stores/"+store+"/proposals?state=open", rw, "", &list)
	if len(list.Data) != 1 {
		t.Fatalf("open proposals: %+v", list.Data)
	}
	propA := list.Data[0].ID
	g.api(t, "GET", "/v1/memory_stores/"+store+"/proposals/"+propA, rw, "", &struct{}{})
	// A pushes a branch too.
	wa := filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", g.repoURL(a, store), wa)
	put(t, filepath.Join(wa, "vat.md"), "Prices include VAT.\n")
	gitOK(t, wa, "add", "-A")
	gitOK(t, wa, "commit", "-qm", "VAT")
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
	wb := filepath.Join(t.TempDir(), "b")
	gitOK(t, "", "clone", "-q", g.repoURL(b, store), wb)
	gitFails(t, wb, "fetch", "-q", "origin", "refs/heads/proposals/"+propA)
	gitFails(t, wb, "fetch", "-q", "origin", "refs/heads/proposals/vat")

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
	_, rw, _ := g.keys.Create("person", apikeys.ReadWrite, "")
	_, a, _ := g.keys.Create("agent", apikeys.Propose, "")
	store := g.createStore(t, rw, "team")
	g.write(t, rw, store, "/rules.md", "Review every change.\n")
	wa := filepath.Join(t.TempDir(), "a")
	gitOK(t, "", "clone", "-q", g.repoURL(a, store), wa)
	commit := func(content string) {
		put(t, filepath.Join(wa, "idea.md"), content)
		gitOK(t, wa, "add", "-A")
		gitOK(t, wa, "commit", "-qm", content)
	}
	commit("one\n")
	gitOK(t, wa, "push", "-q", "origin", "HEAD:proposals/one")
	if out := gitFails(t, wa, "push", "origin", "HEAD:proposals/two", "HEAD:proposals/three"); !strings.Contains(out, "open proposals") {
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
