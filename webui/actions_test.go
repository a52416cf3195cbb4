package webui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
)

// TestEditNeverClobbers: an agent writes while a person edits; saving shows both sides and
// writes nothing, and only a second, informed save replaces the agent's version.
func TestEditNeverClobbers(t *testing.T) {
	e := start(t)
	admin, adminID := e.key("reviewer", apikeys.ReadWrite, "")
	st := e.store(admin, "notes")
	m := e.write(admin, st, "/plan.md", "step one\n")
	b := e.browser()
	b.signIn(admin)
	memURL := "/ui/stores/" + st + "/memories/" + m.ID
	form := url.Values{"path": {"/plan.md"}, "from_path": {"/plan.md"}, "content": {"step one\nmine\n"}, "sha256": {m.ContentSHA256}}
	form.Set("csrf", b.csrf(memURL+"/edit"))

	agent := e.write(admin, st, "/plan.md", "step one\nagent's\n", "x-gitmem-session-id", "sesn_agent")
	p := b.post(memURL, form)
	if p.status != http.StatusConflict || !strings.Contains(p.body, "changed this memory while you edited it") ||
		!strings.Contains(p.body, "agent&#39;s") || !strings.Contains(p.body, "mine") {
		t.Fatalf("a save over a concurrent write: %d %.1500s", p.status, p.body)
	}
	if got := e.read(admin, st, m.ID).Content; got != "step one\nagent's\n" {
		t.Fatalf("the agent's write was clobbered: %q", got)
	}
	// The page carries the agent's hash now: saving again is a decision made having seen it.
	if !strings.Contains(p.body, `name="sha256" value="`+agent.ContentSHA256+`"`) {
		t.Fatal("the conflict form does not build on the agent's version")
	}
	form.Set("sha256", agent.ContentSHA256)
	form.Set("csrf", b.csrf(memURL+"/edit"))
	if p := b.post(memURL, form); p.status != http.StatusSeeOther {
		t.Fatalf("second save: %d %.300s", p.status, p.body)
	}
	if got := e.read(admin, st, m.ID).Content; got != "step one\nmine\n" {
		t.Fatalf("content %q", got)
	}
	// The version records the signed-in key as its actor.
	var vs struct {
		Data []struct {
			CreatedBy map[string]string `json:"created_by"`
		} `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memory_versions?memory_id="+m.ID+"&limit=1", admin, nil, &vs)
	if len(vs.Data) != 1 || vs.Data[0].CreatedBy["api_key_id"] != adminID {
		t.Fatalf("actor of the UI's write: %+v", vs.Data)
	}
	// A rename through the form keeps the id; a bad path shows the form again with the
	// store's own message and what was typed, and changes nothing.
	cur := e.read(admin, st, m.ID)
	bad := url.Values{"path": {"/bad/../x.md"}, "from_path": {"/plan.md"}, "content": {"typed text"}, "sha256": {cur.ContentSHA256}}
	p = b.submit(memURL+"/edit", memURL, bad)
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "typed text") || !strings.Contains(p.body, `class="error"`) {
		t.Fatalf("bad path: %d %.800s", p.status, p.body)
	}
	ren := url.Values{"path": {"/plans/plan.md"}, "from_path": {"/plan.md"}, "content": {cur.Content}, "sha256": {cur.ContentSHA256}}
	if p := b.submit(memURL+"/edit", memURL, ren); p.status != http.StatusSeeOther {
		t.Fatalf("rename: %d", p.status)
	}
	if got := e.read(admin, st, m.ID); got.Path != "/plans/plan.md" || got.Content != cur.Content {
		t.Fatalf("after rename: %+v", got)
	}
	// Creating at a taken path is refused with the form kept.
	p = b.submit("/ui/stores/"+st+"/new", "/ui/stores/"+st+"/memories", url.Values{"path": {"/plans/plan.md"}, "content": {"dup"}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "dup") {
		t.Fatalf("create at a taken path: %d %.500s", p.status, p.body)
	}
	// Deleting with a stale hash is refused; with the current one it deletes, and the
	// memory's page then says so and keeps its history.
	if p := b.submit(memURL, memURL+"/delete", url.Values{"sha256": {m.ContentSHA256}}); p.status != http.StatusConflict {
		t.Fatalf("delete with a stale hash: %d", p.status)
	}
	if p := b.submit(memURL, memURL+"/delete", url.Values{"sha256": {cur.ContentSHA256}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.status)
	}
	if p := b.get(memURL); p.status != 200 || !strings.Contains(p.body, "was deleted") {
		t.Fatalf("a deleted memory's page: %d", p.status)
	}
}

func TestHistoryDiffRestoreRedact(t *testing.T) {
	e := start(t)
	st := e.store("", "notes")
	v1 := e.write("", st, "/a.md", "alpha\nbeta\n")
	e.write("", st, "/a.md", "alpha\nBETA\ngamma\n", "x-gitmem-session-id", "sesn_one")
	b := e.browser()
	base := "/ui/stores/" + st
	var vs struct {
		Data []struct{ ID string } `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memory_versions?memory_id="+v1.ID, "", nil, &vs)
	if len(vs.Data) != 2 {
		t.Fatalf("versions %+v", vs)
	}
	newest, oldest := vs.Data[0].ID, vs.Data[1].ID
	hist := b.get(base + "/memories/" + v1.ID + "/history")
	if hist.status != 200 || !strings.Contains(hist.body, "sesn_one") || !strings.Contains(hist.body, "local user") {
		t.Fatalf("history: %d", hist.status)
	}
	split := b.get(base + "/memories/" + v1.ID + "/diff?from=" + oldest + "&to=" + newest)
	if split.status != 200 || !strings.Contains(split.body, `class="del"><span class="sr-only">removed: </span>beta`) ||
		!strings.Contains(split.body, `class="add"><span class="sr-only">added: </span>BETA`) {
		t.Fatalf("side by side diff: %d %.2000s", split.status, split.body)
	}
	uni := b.get(base + "/memories/" + v1.ID + "/diff?view=unified&from=" + oldest + "&to=" + newest)
	if !strings.Contains(uni.body, `<span class="del">-beta</span>`) || !strings.Contains(uni.body, `<span class="add">&#43;gamma</span>`) {
		t.Fatalf("unified diff: %.2000s", uni.body)
	}
	blame := b.get(base + "/memories/" + v1.ID + "/blame")
	if !strings.Contains(blame.body, "sesn_one") || !strings.Contains(blame.body, ">alpha<") {
		t.Fatalf("blame: %.2000s", blame.body)
	}
	// Restore the first version: a new version with its content.
	if p := b.submit(base+"/versions/"+oldest, base+"/versions/"+oldest+"/restore", nil); p.status != http.StatusSeeOther {
		t.Fatalf("restore: %d %.300s", p.status, p.body)
	}
	if got := e.read("", st, v1.ID).Content; got != "alpha\nbeta\n" {
		t.Fatalf("after restore: %q", got)
	}
	// Redact the second: the confirmation page says what it does; without the word typed
	// nothing happens.
	confirm := b.get(base + "/versions/" + newest + "/redact")
	if !strings.Contains(confirm.body, "cannot be undone") {
		t.Fatalf("redact confirmation: %.1000s", confirm.body)
	}
	if p := b.submit(base+"/versions/"+newest+"/redact", base+"/versions/"+newest+"/redact", url.Values{"confirm": {"yes"}}); p.status != http.StatusBadRequest {
		t.Fatalf("redact without the word: %d", p.status)
	}
	if p := b.submit(base+"/versions/"+newest+"/redact", base+"/versions/"+newest+"/redact", url.Values{"confirm": {"redact"}}); p.status != http.StatusSeeOther {
		t.Fatalf("redact: %d %.300s", p.status, p.body)
	}
	var v struct {
		Content    *string `json:"content"`
		RedactedAt *string `json:"redacted_at"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memory_versions/"+newest+"?view=full", "", nil, &v)
	if v.RedactedAt == nil || v.Content != nil {
		t.Fatalf("version after redaction: %+v", v)
	}
	if p := b.get(base + "/memories/" + v1.ID + "/history"); !strings.Contains(p.body, "redacted") || strings.Contains(p.body, "gamma") {
		t.Fatalf("history after redaction: %.1500s", p.body)
	}
}

func TestActivityAndRevert(t *testing.T) {
	e := start(t)
	st := e.store("", "notes")
	keep := e.write("", st, "/keep.md", "by a person\n")
	e.write("", st, "/keep.md", "rewritten by the agent\n", "x-gitmem-session-id", "sesn_bad")
	e.write("", st, "/junk/new.md", "agent junk\n", "x-gitmem-session-id", "sesn_bad")
	e.write("", st, "/other.md", "another agent\n", "x-gitmem-session-id", "sesn_good")
	b := e.browser()
	base := "/ui/stores/" + st
	all := b.get(base + "/activity")
	if strings.Count(all.body, "/diff?to=") != 4 {
		t.Fatalf("activity lists %d changes", strings.Count(all.body, "/diff?to="))
	}
	for q, want := range map[string]int{
		"session=sesn_bad": 2, "actor=sesn_good": 1, "actor=user_local": 1, "op=created": 3, "prefix=/junk/": 1,
		"prefix=/junk": 1, "since=today": 4, "until=today": 4, "until=yesterday": 0, "until=" + url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)): 0,
	} {
		p := b.get(base + "/activity?" + q)
		if p.status != 200 || strings.Count(p.body, "/diff?to=") != want {
			t.Errorf("activity?%s: %d, %d changes, want %d", q, p.status, strings.Count(p.body, "/diff?to="), want)
		}
	}
	if p := b.get(base + "/activity?since=someday"); p.status != http.StatusBadRequest {
		t.Errorf("a time nobody can read: %d", p.status)
	}
	// The dry run changes nothing and lists what would change.
	dry := b.get(base + "/revert?session=sesn_bad")
	if dry.status != 200 || !strings.Contains(dry.body, "dry run") || !strings.Contains(dry.body, "/keep.md") || !strings.Contains(dry.body, "/junk/new.md") {
		t.Fatalf("dry run: %d %.1500s", dry.status, dry.body)
	}
	if got := e.read("", st, keep.ID).Content; got != "rewritten by the agent\n" {
		t.Fatalf("the dry run changed %q", got)
	}
	if p := b.get(base + "/revert"); p.status != http.StatusBadRequest {
		t.Errorf("a revert without a session or key: %d", p.status)
	}
	p := b.submit(base+"/revert?session=sesn_bad", base+"/revert", url.Values{"session": {"sesn_bad"}})
	if p.status != 200 || !strings.Contains(p.body, "Reverted") {
		t.Fatalf("revert: %d %.1000s", p.status, p.body)
	}
	if got := e.read("", st, keep.ID).Content; got != "by a person\n" {
		t.Fatalf("after the revert: %q", got)
	}
	var list struct {
		Data []struct{ Path string } `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memories", "", nil, &list)
	if len(list.Data) != 2 {
		t.Fatalf("memories after the revert: %+v", list.Data)
	}
}

func TestSearchConflictsAsOf(t *testing.T) {
	e := start(t)
	st := e.store("", "notes")
	a := e.write("", st, "/notes/a.md", "the billing plan is monthly\n")
	base := "/ui/stores/" + st
	b := e.browser()
	var p page
	for i := 0; i < 100; i++ { // the index catches up in the background
		if p = b.get(base + "/search?q=billing"); strings.Contains(p.body, "/notes/a.md") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(p.body, "<mark>billing</mark>") {
		t.Fatalf("search: %d %.1500s", p.status, p.body)
	}
	if p := b.get(base + "/search?q=" + url.QueryEscape(strings.Repeat("x", 2000))); p.status != http.StatusBadRequest {
		t.Errorf("an over-long query: %d", p.status)
	}

	// As of: the store as it was before a change.
	before := time.Now().UTC().Format(time.RFC3339Nano)
	time.Sleep(5 * time.Millisecond)
	e.write("", st, "/notes/a.md", "the billing plan is yearly\n")
	e.write("", st, "/notes/b.md", "later\n")
	past := b.get(base + "/memories/" + a.ID + "?at=" + url.QueryEscape(before))
	if !strings.Contains(past.body, "monthly") || !strings.Contains(past.body, "as of") || strings.Contains(past.body, ">Edit<") {
		t.Fatalf("memory as of: %.1500s", past.body)
	}
	if p := b.get(base + "?prefix=/notes/&at=" + url.QueryEscape(before)); strings.Contains(p.body, "b.md") || !strings.Contains(p.body, "a.md") {
		t.Fatalf("folder as of: %.1500s", p.body)
	}
	if p := b.get(base + "?at=someday"); p.status != http.StatusBadRequest {
		t.Errorf("as of a time nobody can read: %d", p.status)
	}

	// A sync conflict: the remote's memory at the path, this store's copy beside it.
	orig := e.write("", st, "/plan.md", "remote's plan\n")
	cp := e.write("", st, "/plan.conflict-1a2b3c4.md", "our plan\n")
	c := b.get(base + "/conflicts")
	if !strings.Contains(c.body, "remote&#39;s plan") || !strings.Contains(c.body, "our plan") {
		t.Fatalf("conflicts: %.2000s", c.body)
	}
	form := url.Values{"keep": {"copy"}, "copy_sha256": {cp.ContentSHA256}, "original_sha256": {orig.ContentSHA256}}
	if p := b.submit(base+"/conflicts", base+"/conflicts/"+cp.ID, form); p.status != http.StatusSeeOther {
		t.Fatalf("resolve: %d %.500s", p.status, p.body)
	}
	if got := e.read("", st, orig.ID).Content; got != "our plan\n" {
		t.Fatalf("kept the copy: %q", got)
	}
	if st := e.api("GET", "/v1/memory_stores/"+st+"/memories/"+cp.ID, "", nil, nil); st != http.StatusNotFound {
		t.Fatalf("the copy is still there: %d", st)
	}
	if p := b.get(base + "/conflicts"); !strings.Contains(p.body, "No conflict") {
		t.Fatalf("after resolving: %.1000s", p.body)
	}
}
