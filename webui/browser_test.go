package webui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gitmem/gitmem/apikeys"
)

// chromium finds the headless browser: Debian's chromium, which .ci/run installs.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on this machine: .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium on this machine (apt-get install chromium): the browser tests need it")
	return ""
}

// shots is where the browser test leaves its screenshots: $GITMEM_SCREENSHOTS, or a
// temporary directory.
func shots(t *testing.T) string {
	if d := os.Getenv("GITMEM_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// screenshot saves the whole page as dir/name.png.
func screenshot(dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		buf, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
	})
}

// tab starts headless Chromium exe for test t and returns the context of its tab, which
// closes when t ends or 90 s have passed.
func tab(t *testing.T, exe string) context.Context {
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel)

	// The first action starts the browser and its tab on ctx itself: a context derived
	// from it and cancelled later would close them.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// runSteps does steps in the tab of ctx, each within 20 s, and fails t at the first that
// fails, saying where the tab was.
func runSteps(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for i, step := range steps {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Do(sctx, step)
		cancel()
		if err != nil {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Fatalf("%s, step %d (at %s): %v", what, i+1, loc, err)
		}
	}
}

// evaluate evaluates expr in the tab of ctx, and fails t if it cannot.
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// TestBrowser drives the UI in headless Chromium as a reviewer would: sign in, browse, open
// a memory, see its history, diff two versions, restore, redact, revert a session, edit
// against a concurrent agent write, and search.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	dir := shots(t)
	e := start(t)
	admin, _ := e.key("reviewer", apikeys.ReadWrite, "")
	st := e.store(admin, "team-notes")
	e.api("POST", "/v1/memory_stores/"+st, admin, map[string]any{"description": "what the support agents learned"}, nil)
	plan := e.write(admin, st, "/billing/plan.md", "# Billing plan\n\nCustomers pay **monthly**.\n\n- invoices on the 1st\n- net 30\n", "x-gitmem-session-id", "sesn_billing")
	e.write(admin, st, "/billing/plan.md", "# Billing plan\n\nCustomers pay **yearly**, with a discount.\n\n- invoices on the 1st\n- net 30\n- refunds within 14 days\n", "x-gitmem-session-id", "sesn_billing")
	e.write(admin, st, "/support/tone.md", "Be brief and kind.\n", "x-gitmem-session-id", "sesn_support")
	e.write(admin, st, "/support/escalation.md", "Escalate outages to the on-call engineer.\n", "x-gitmem-session-id", "sesn_support")
	e.write(admin, st, "/support/junk.md", "lorem ipsum from a confused agent\n", "x-gitmem-session-id", "sesn_confused")
	e.write(admin, st, "/support/tone.md", "Be curt.\n", "x-gitmem-session-id", "sesn_confused")

	ctx := tab(t, exe)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		runSteps(t, ctx, what, steps...)
	}
	shot := func(name string) chromedp.Action[chromedp.Void] { return screenshot(dir, name) }
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	eval := func(expr string) any {
		t.Helper()
		return evaluate[any](t, ctx, expr)
	}
	base := e.url + "/ui/stores/" + st

	// Sign in: a page asks for the key and comes back to where the reviewer was going.
	run("sign in",
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), admin),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`ul.tree`)),
	)
	run("stores", chromedp.Navigate(e.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS(`table.list`)), shot("stores"))
	if s := text("table.list"); !strings.Contains(s, "team-notes") || !strings.Contains(s, "sesn_confused") {
		t.Fatalf("stores page shows %q", s)
	}

	// Browse into a folder and open a memory.
	run("browse",
		chromedp.Navigate(base),
		chromedp.Click(chromedp.CSS(`li.folder a[href$="prefix=%2fbilling%2f"]`)),
		chromedp.WaitVisible(chromedp.CSS(`li.file a`)),
		chromedp.Click(chromedp.CSS(`li.file a`)),
		chromedp.WaitVisible(chromedp.CSS(`article.content h1`)),
		shot("memory"),
	)
	if s := text("article.content"); !strings.Contains(s, "yearly") {
		t.Fatalf("memory page shows %q", s)
	}

	// History, and a diff of the two versions (the page preselects the newest two).
	run("history",
		chromedp.Click(chromedp.CSS(`.toolbar a[href$="/history"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table.timeline`)),
		shot("history"),
		chromedp.Click(chromedp.CSS(`#compare`)),
		chromedp.WaitVisible(chromedp.CSS(`table.diff.split`)),
		shot("diff"),
	)
	if s := text("table.diff"); !strings.Contains(s, "monthly") || !strings.Contains(s, "refunds within 14 days") {
		t.Fatalf("diff shows %q", s)
	}

	// Restore the first version from its page.
	var vs struct {
		Data []struct{ ID string } `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memory_versions?memory_id="+plan.ID, admin, nil, &vs)
	first := vs.Data[len(vs.Data)-1].ID
	run("restore",
		chromedp.Navigate(base+"/versions/"+first),
		chromedp.Click(chromedp.CSS(`#restore`)),
		// The memory's page, where the restore leads (the version's page has no blame link).
		chromedp.WaitVisible(chromedp.CSS(`.toolbar a[href$="/blame"]`)),
	)
	if got := e.read(admin, st, plan.ID).Content; !strings.Contains(got, "monthly") {
		t.Fatalf("after restore: %q", got)
	}

	// Redact the yearly version: the confirmation says it cannot be undone.
	second := vs.Data[0].ID
	run("redact",
		chromedp.Navigate(base+"/versions/"+second),
		chromedp.Click(chromedp.CSS(`#redact-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
		shot("redact"),
	)
	if s := text("main"); !strings.Contains(s, "cannot be undone") {
		t.Fatalf("redact confirmation shows %q", s)
	}
	run("confirm redaction",
		chromedp.SendKeys(chromedp.CSS(`#confirm`), "redact"),
		chromedp.Click(chromedp.CSS(`#redact-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`table.timeline`)),
	)
	if s := text("table.timeline"); !strings.Contains(s, "redacted") {
		t.Fatalf("timeline after redaction: %q", s)
	}

	// Activity: filter by the confused session, look at the dry run, revert.
	run("activity",
		chromedp.Navigate(base+"/activity"),
		chromedp.WaitVisible(chromedp.CSS(`#f-session`)),
		chromedp.SendKeys(chromedp.CSS(`#f-session`), "sesn_confused"),
		chromedp.SendKeys(chromedp.CSS(`#f-since`), "today"),
		chromedp.Click(chromedp.CSS(`#filter`)),
		chromedp.WaitVisible(chromedp.CSS(`#revert-link`)),
		shot("activity"),
		chromedp.Click(chromedp.CSS(`#revert-link`)),
		chromedp.WaitVisible(chromedp.CSS(`h1.dry-run`)),
		shot("revert-dry-run"),
	)
	if got := e.read(admin, st, plan.ID).Content; got == "" {
		t.Fatal("unreachable")
	}
	run("revert",
		chromedp.Click(chromedp.CSS(`#revert-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`h1.reverted`)),
	)
	var list struct {
		Data []struct{ Path, ID string } `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memories?path_prefix=/support/", admin, nil, &list)
	var tone string
	for _, m := range list.Data {
		if m.Path == "/support/junk.md" {
			t.Fatal("the reverted session's new memory is still there")
		}
		if m.Path == "/support/tone.md" {
			tone = m.ID
		}
	}
	if got := e.read(admin, st, tone).Content; got != "Be brief and kind.\n" {
		t.Fatalf("tone after the revert: %q", got)
	}

	// Edit while an agent writes: the save shows the conflict; a second save wins.
	run("edit",
		chromedp.Navigate(base+"/memories/"+tone+"/edit"),
		chromedp.WaitVisible(chromedp.CSS(`#content`)),
		chromedp.SetValue(chromedp.CSS(`#content`), "Be brief, kind and concrete.\n"),
	)
	e.write(admin, st, "/support/tone.md", "Be brief and kind. Sign with the team name.\n", "x-gitmem-session-id", "sesn_support")
	run("save over a concurrent write",
		chromedp.Click(chromedp.CSS(`#save`)),
		chromedp.WaitVisible(chromedp.CSS(`section.conflict`)),
		shot("edit-conflict"),
	)
	if got := e.read(admin, st, tone).Content; got != "Be brief and kind. Sign with the team name.\n" {
		t.Fatalf("the agent's write was clobbered: %q", got)
	}
	run("save again",
		chromedp.Click(chromedp.CSS(`#save`)),
		chromedp.WaitVisible(chromedp.CSS(`article.content`)),
	)
	if got := e.read(admin, st, tone).Content; got != "Be brief, kind and concrete.\n" {
		t.Fatalf("after the second save: %q", got)
	}

	// Search, with the match marked.
	deadline := time.Now().Add(10 * time.Second)
	for {
		run("search",
			chromedp.Navigate(base+"/search"),
			chromedp.WaitVisible(chromedp.CSS(`#sq`)),
			chromedp.SendKeys(chromedp.CSS(`#sq`), "escalate"),
			chromedp.Submit(chromedp.CSS(`#sq`)),
			chromedp.WaitVisible(chromedp.CSS(`p.total`)),
		)
		if n, _ := eval(`document.querySelectorAll("ol.hits mark").length`).(float64); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("search never found the memory")
		}
		time.Sleep(100 * time.Millisecond)
	}
	run("search shot", shot("search"))

	// The review queue: an agent with a propose key proposed two changes; the reviewer reads
	// them as one diff across memories and approves.
	agent, _ := e.key("billing-agent", apikeys.Propose, "")
	e.write(agent, st, "/billing/plan.md", "# Billing plan\n\nCustomers pay **yearly**, with a discount.\n\n- invoices on the 1st\n- net 45\n- refunds within 14 days\n")
	e.write(agent, st, "/billing/vat.md", "Prices include VAT in the EU.\n")
	run("proposals",
		chromedp.Navigate(base+"/proposals"),
		chromedp.WaitVisible(chromedp.CSS(`a.proposal`)),
		shot("proposals"),
		chromedp.Click(chromedp.CSS(`a.proposal`)),
		chromedp.WaitVisible(chromedp.CSS(`section.change pre.diff`)),
		shot("proposal"),
	)
	if s := text("main"); !strings.Contains(s, "2 changes against the store now") || !strings.Contains(s, "+- net 45") || !strings.Contains(s, "/billing/vat.md") {
		t.Fatalf("proposal page shows %q", s)
	}
	// Each change's approve box sits on its heading's line, not alone below it.
	if v := eval(`(() => {
		const box = document.querySelector('section.change label.pick').getBoundingClientRect();
		const path = document.querySelector('section.change h3 code').getBoundingClientRect();
		return box.top < path.bottom && path.top < box.bottom;
	})()`); v != true {
		t.Errorf("the approve box is not on its change's heading line")
	}
	run("approve",
		chromedp.Click(chromedp.CSS(`#approve`)),
		chromedp.WaitVisible(chromedp.CSS(`#approved`)), // the next page's: the badge is on both
	)
	if s := text("h1 .badge"); s != "approved" {
		t.Fatalf("after approve the proposal is %q", s)
	}
	if got := e.read(admin, st, plan.ID).Content; !strings.Contains(got, "net 45") {
		t.Fatalf("after approval the plan is %q", got)
	}

	// On a phone the pages reflow: no horizontal scrolling on the store list.
	run("phone",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(e.url+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(`table.list`)),
	)
	for i := 0; ; i++ { // the emulated width applies with the next layout
		if w, _ := eval(`window.innerWidth`).(float64); w == 390 || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	run("phone shot", shot("stores-phone"))
	if wide, _ := eval(`document.documentElement.scrollWidth + " " + window.innerWidth`).(string); func() bool {
		var sw, iw int
		fmt.Sscan(wide, &sw, &iw)
		return sw > iw+1
	}() {
		t.Errorf("the store list scrolls sideways on a phone (scroll width, window width: %s)", wide)
	}
}

// TestBrowserShowsControls: in headless Chromium, a proposal whose title, comment and diff
// line hold bidirectional controls (U+202E) and control characters (ESC), and a memory whose
// Markdown holds them, show each as its escape in a marked span: the page's text holds the
// escape, never the rune, so nothing is reordered or hidden from the reviewer.
func TestBrowserShowsControls(t *testing.T) {
	exe := chromium(t)
	dir := shots(t)
	e := start(t)
	st, mem, prop, admin, _ := othersText(t, e)
	ctx := tab(t, exe)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		runSteps(t, ctx, what, steps...)
	}
	shot := func(name string) chromedp.Action[chromedp.Void] { return screenshot(dir, name) }
	base := e.url + "/ui/stores/" + st
	run("sign in",
		chromedp.Navigate(base+"/proposals/"+prop),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), admin),
		chromedp.Submit(chromedp.CSS(`#key`)),
		chromedp.WaitVisible(chromedp.CSS(`section.change pre.diff`)),
		shot("proposal-controls"),
	)
	text := func(sel string) string {
		t.Helper()
		return evaluate[string](t, ctx, `document.querySelector(`+fmt.Sprintf("%q", sel)+`).innerText`)
	}
	page := evaluate[string](t, ctx, `document.body.innerText`)
	if i := strings.IndexFunc(page, func(r rune) bool { return r == 0x202e || r == 0x2066 || r == 0x2069 || r == 0x202c || r == 0x1b }); i >= 0 {
		t.Errorf("the proposal's page shows U+%04X as it is: %q", []rune(page[i:])[0], page[max(i-60, 0):min(i+60, len(page))])
	}
	for sel, want := range map[string]string{
		"h1":             `Tidy \u202etxt.exe`,
		"div.comment":    `Harmless \u202eesolc`,
		"section.change": `+if isAdmin \u202e } \u2066if (isAdmin)\u2069 \u2066 begin admins only \u202c\x1b[8mhidden\x1b[0m`,
		"header nav":     `team \u202emaet`,
	} {
		if got := text(sel); !strings.Contains(got, want) {
			t.Errorf("%s reads %q, want it to hold %q", sel, got, want)
		}
	}
	// Each escape is a marked span that the reviewer sees: laid out in the line, as wide as
	// its few letters (not stretched over the rest of a diff's line), in the warning colours.
	if n := evaluate[float64](t, ctx, `[...document.querySelectorAll("main span.ctl")].filter(s => {
		const r = s.getBoundingClientRect(), c = getComputedStyle(s);
		return r.width > 0 && r.width < 100 && r.height > 0 && c.borderTopStyle === "solid" && c.backgroundColor !== "rgba(0, 0, 0, 0)";
	}).length`); n != 13 {
		t.Errorf("%v marked escapes laid out in the proposal's page, want 13 (1 in the title, 1 in the comment, 11 in the diff)", n)
	}
	// The diff's added line keeps its text after the escapes on its one line.
	if v := evaluate[bool](t, ctx, `(() => {
		const line = [...document.querySelectorAll("pre.diff > span.add")].pop(), r = line.getBoundingClientRect();
		const spans = [...line.querySelectorAll("span.ctl")].map(s => s.getBoundingClientRect());
		return spans.every(s => s.top >= r.top && s.bottom <= r.bottom + 1) && r.height < 40;
	})()`); !v {
		t.Errorf("the diff's added line is not one line with its escapes")
	}

	// A memory whose Markdown holds them: rendered, with each shown escaped.
	run("memory", chromedp.Navigate(base+"/memories/"+mem), chromedp.WaitVisible(chromedp.CSS(`article.content h1`)), shot("memory-controls"))
	if got := text("article.content h1"); got != `Plan \u202eeman` {
		t.Errorf("the memory's heading reads %q", got)
	}
	if got := text("article.content"); !strings.Contains(got, `Pay \u2066monthly\u2069 in \x1b[31mred\x1b[0m`) || !strings.Contains(got, `\u202e \u200f referenced`) ||
		!strings.Contains(got, `access = "user\u202e \u2066// admin\u2069\u2066"`) || strings.ContainsAny(got, "\u202e\u2066\u2069\u200f\x1b") {
		t.Errorf("the memory reads %q", got)
	}
}
