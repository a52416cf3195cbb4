package webui_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/proposals"
	"github.com/gitmem/gitmem/proposals/proposalstest"
)

// TestProposalsQueue: an agent's proposal is in the store's queue, shown as one diff across
// memories; a reader sees it and cannot decide; a person comments, approves one proposal,
// and rejects another with a reason; a conflicting approval is refused with nothing written.
func TestProposalsQueue(t *testing.T) {
	e := start(t)
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	agent, _ := e.key("agent", apikeys.Propose, "")
	reader, _ := e.key("reader", apikeys.ReadOnly, "")
	st := e.store(admin, "team")
	e.write(admin, st, "/rules.md", "Review every change.\n")
	e.write(agent, st, "/rules.md", "Review every change.\nShip on Fridays.\n")
	e.write(agent, st, "/idea.md", "<script>alert(1)</script>\n")

	br := e.browser()
	br.signIn(admin)
	q := br.get("/ui/stores/" + st + "/proposals")
	if q.status != 200 || !strings.Contains(q.body, `Changes by key &#34;agent&#34;`) || strings.Contains(q.body, "Nothing to review") {
		t.Fatalf("queue (%d): %.3000s", q.status, q.body)
	}
	id := regexpFind(t, `/proposals/(prop_[0-9A-Z]+)`, q.body)
	base := "/ui/stores/" + st + "/proposals/" + id
	p := br.get(base)
	for _, want := range []string{"2 changes against the store now", "modified</span> <code>/rules.md</code>", `<span class="add">&#43;Ship on Fridays.</span>`,
		"created</span> <code>/idea.md</code>", "&lt;script&gt;alert(1)&lt;/script&gt;", ">Approve<", ">Reject<"} {
		if p.status != 200 || !strings.Contains(p.body, want) {
			t.Fatalf("proposal page (%d) lacks %q: %.4000s", p.status, want, p.body)
		}
	}
	ro := e.browser()
	ro.signIn(reader)
	if p := ro.get(base); p.status != 200 || strings.Contains(p.body, ">Approve<") {
		t.Errorf("a reader's view (%d) offers a decision", p.status)
	}
	if p := ro.post(base+"/approve", url.Values{"csrf": {ro.csrf(base)}}); p.status != http.StatusForbidden {
		t.Errorf("a reader approves: %d", p.status)
	}

	if p := br.submit(base, base+"/comments", url.Values{"body": {"Fridays are quiet."}}); p.status != http.StatusSeeOther {
		t.Fatalf("comment: %d %.1000s", p.status, p.body)
	}
	if p := br.get(base); !strings.Contains(p.body, "Fridays are quiet.") {
		t.Errorf("the comment is not shown")
	}
	if p := br.submit(base, base+"/approve", nil); p.status != http.StatusSeeOther {
		t.Fatalf("approve: %d %.2000s", p.status, p.body)
	}
	if got := e.readPath(admin, st, "/rules.md"); got != "Review every change.\nShip on Fridays.\n" {
		t.Errorf("after approval main has %q", got)
	}
	if p := br.get(base); !strings.Contains(p.body, "approved") || !strings.Contains(p.body, "its changes are the store") {
		t.Errorf("approved page: %.2000s", p.body)
	}

	// A second proposal that conflicts: refused, nothing written; then rejected with a reason.
	e.write(agent, st, "/rules.md", "Ship on Mondays.\n")
	e.write(admin, st, "/rules.md", "Ship on Thursdays.\n")
	q = br.get("/ui/stores/" + st + "/proposals")
	second := regexpFind(t, `/proposals/(prop_[0-9A-Z]+)">Changes`, q.body)
	base2 := "/ui/stores/" + st + "/proposals/" + second
	if p := br.submit(base2, base2+"/approve", nil); p.status != http.StatusConflict || !strings.Contains(p.body, "conflicts with what the store holds now at <code>/rules.md</code>") || !strings.Contains(p.body, `name="allow_conflicts"`) {
		t.Fatalf("a conflicting approval (%d): %.3000s", p.status, p.body)
	}
	if got := e.readPath(admin, st, "/rules.md"); got != "Ship on Thursdays.\n" {
		t.Errorf("a refused approval wrote: %q", got)
	}
	if p := br.submit(base2, base2+"/reject", url.Values{"comment": {"We ship on Thursdays."}}); p.status != http.StatusSeeOther {
		t.Fatalf("reject: %d", p.status)
	}
	if p := br.get(base2); !strings.Contains(p.body, "rejected") || !strings.Contains(p.body, "We ship on Thursdays.") || strings.Contains(p.body, ">Approve<") {
		t.Errorf("rejected page: %.3000s", p.body)
	}
}

// readPath is the content of the memory at path in main ("" if none).
func (e *env) readPath(_ /* key */, store, path string) string {
	e.t.Helper()
	st, err := e.data.Store(context.Background(), store)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := st.GetByPath(context.Background(), path, true)
	if err != nil {
		return ""
	}
	return *m.Content
}

// regexpFind is the first group of pattern in s, or a failure.
func regexpFind(t *testing.T, pattern, s string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in %.2000s", pattern, s)
	}
	return m[1]
}

// TestProposalsApproveSome: unchecking a change approves the others only.
func TestProposalsApproveSome(t *testing.T) {
	e := start(t)
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	agent, _ := e.key("agent", apikeys.Propose, "")
	st := e.store(admin, "team")
	e.write(agent, st, "/yes.md", "yes\n")
	e.write(agent, st, "/no.md", "no\n")
	br := e.browser()
	br.signIn(admin)
	id := regexpFind(t, `/proposals/(prop_[0-9A-Z]+)`, br.get("/ui/stores/"+st+"/proposals").body)
	base := "/ui/stores/" + st + "/proposals/" + id
	if p := br.get(base); !strings.Contains(p.body, `name="path" value="/no.md" form="approve-form" checked`) {
		t.Fatalf("no checkbox per change: %.3000s", p.body)
	}
	if p := br.submit(base, base+"/approve", url.Values{"total": {"2"}, "path": {"/yes.md"}}); p.status != http.StatusSeeOther {
		t.Fatalf("approve some: %d %.2000s", p.status, p.body)
	}
	if got := e.readPath(admin, st, "/yes.md"); got != "yes\n" {
		t.Errorf("/yes.md = %q", got)
	}
	if got := e.readPath(admin, st, "/no.md"); got != "" {
		t.Errorf("/no.md was approved: %q", got)
	}
	if p := br.get(base); !strings.Contains(p.body, "Approved 1 of its 2 changes: /yes.md") {
		t.Errorf("the page does not say what was approved: %.3000s", p.body)
	}
}

// TestProposalsProposerSeesOwnOnly: a propose key signed in to the UI sees its own proposals
// in the queue and can open them, but not another key's, whose changes it may not read
// through the API either.
func TestProposalsProposerSeesOwnOnly(t *testing.T) {
	e := start(t)
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	agentA, _ := e.key("agent-a", apikeys.Propose, "")
	agentB, _ := e.key("agent-b", apikeys.Propose, "")
	st := e.store(admin, "team")
	e.write(agentA, st, "/a.md", "only for A's reviewer\n")
	e.write(agentB, st, "/b.md", "B's own\n")

	br := e.browser()
	br.signIn(admin)
	q := br.get("/ui/stores/" + st + "/proposals")
	idA := regexpFind(t, `/proposals/(prop_[0-9A-Z]+)">Changes by key &#34;agent-a`, q.body)
	idB := regexpFind(t, `/proposals/(prop_[0-9A-Z]+)">Changes by key &#34;agent-b`, q.body)

	b := e.browser()
	b.signIn(agentB)
	q = b.get("/ui/stores/" + st + "/proposals")
	if q.status != 200 || strings.Contains(q.body, idA) || !strings.Contains(q.body, idB) {
		t.Errorf("B's queue (%d) should list B's proposal only: %.3000s", q.status, q.body)
	}
	if p := b.get("/ui/stores/" + st + "/proposals/" + idA); p.status != http.StatusForbidden || strings.Contains(p.body, "only for A") {
		t.Errorf("B reads A's proposal: %d %.2000s", p.status, p.body)
	}
	if p := b.get("/ui/stores/" + st + "/proposals/" + idB); p.status != 200 || !strings.Contains(p.body, "B&#39;s own") {
		t.Errorf("B's own proposal (%d): %.2000s", p.status, p.body)
	}
}

// TestProposalsQueuePages: in headless Chromium, the queue of a store with more open and more
// decided proposals than a page of each (100) shows every one, newest first and once, in its
// section, through the sections' links to the next page.
func TestProposalsQueuePages(t *testing.T) {
	exe := chromium(t)
	e := start(t)
	admin, _ := e.key("reviewer", apikeys.ReadWrite, "")
	st := e.store(admin, "queue")
	agent := gitstore.Actor{Type: gitstore.APIActor, ID: "apikey_01M8A1ZCW3TN4QA7YRPCH6C3Y1", Name: "agent"}
	seeded := proposalstest.Decided(st, 360, agent, func(i int, p *proposals.Proposal) {
		if i%3 == 0 {
			p.State, p.Merge, p.DecidedBy, p.DecidedAt = proposals.Open, "", nil, nil
		}
	})
	if err := proposalstest.Write(e.data.Layout(), st, seeded); err != nil {
		t.Fatal(err)
	}
	var wantOpen, wantDecided []string // newest first
	for i := len(seeded) - 1; i >= 0; i-- {
		if seeded[i].State == proposals.Open {
			wantOpen = append(wantOpen, seeded[i].ID)
		} else {
			wantDecided = append(wantDecided, seeded[i].ID)
		}
	}

	ctx := tab(t, exe)
	runSteps(t, ctx, "sign in",
		chromedp.Navigate(e.url+"/ui/stores/"+st+"/proposals"),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), admin),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`table#open`)),
	)
	eval := func(expr string) string {
		t.Helper()
		return evaluate[string](t, ctx, expr)
	}
	// follow shows the pages of a section (its table and its link to more) from the one
	// shown, following the link as a reader clicks it, and returns the proposals they list.
	follow := func(table, more string) []string {
		t.Helper()
		var got []string
		for page := 1; ; page++ {
			ids := strings.Fields(eval(`[...document.querySelectorAll("table#` + table + ` a[href*='/proposals/prop_']")].map(a => a.pathname.split("/").pop()).join(" ")`))
			if len(ids) > 100 {
				t.Errorf("%s: page %d shows %d proposals; a page shows at most 100", table, page, len(ids))
			}
			got = append(got, ids...)
			if eval(`document.querySelector("#`+more+`") ? "more" : ""`) == "" {
				return got
			}
			if page > 10 {
				t.Fatalf("%s: the pages do not end", table)
			}
			eval(`document.body.dataset.shown = "yes"; ""`) // gone once the next page is shown
			runSteps(t, ctx, table+" page "+strconv.Itoa(page+1),
				chromedp.Click(chromedp.CSS(`#`+more)),
				chromedp.WaitNotPresent(chromedp.CSS(`body[data-shown]`)),
				chromedp.WaitVisible(chromedp.CSS(`table#`+table)),
			)
		}
	}
	if got := follow("open", "more-open"); !slices.Equal(got, wantOpen) {
		t.Errorf("open proposals shown: %d, want %d, newest first", len(got), len(wantOpen))
	}
	runSteps(t, ctx, "the queue again", chromedp.Navigate(e.url+"/ui/stores/"+st+"/proposals"), chromedp.WaitVisible(chromedp.CSS(`table#decided`)))
	if got := follow("decided", "more-decided"); !slices.Equal(got, wantDecided) {
		t.Errorf("decided proposals shown: %d, want %d, newest first", len(got), len(wantDecided))
	}
}
