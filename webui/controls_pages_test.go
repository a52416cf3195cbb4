package webui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/internal/suspect"
)

// hiddenContent is a memory's content that would reorder and hide what a reviewer reads: bidi
// controls (as they are and as a character reference, which Markdown resolves), control
// characters, a lone carriage return.
const hiddenContent = "# Plan \u202eeman\n\nPay \u2066monthly\u2069 in \x1b[31mred\x1b[0m; a\u0085NEL; a lone\rreturn; &#x202E; &rlm; referenced.\n\n" +
	"```\naccess = \"user\u202e \u2066// admin\u2069\u2066\"\n```\n"

// proposedLine is the line that the agent's proposal adds: it reads as a check of isAdmin
// with a comment after it, and hides an escape sequence.
const proposedLine = "if isAdmin \u202e } \u2066if (isAdmin)\u2069 \u2066 begin admins only \u202c\x1b[8mhidden\x1b[0m"

// othersText sets up a store where every text that a client or a pusher chose holds bidi
// controls and control characters: the store's name and description, memories' contents
// (main's, a conflict copy's, a proposal's), a pushed commit's author, a proposal's title and
// comment, a webhook's URL. It returns the store's id, a memory's id, the proposal's id, and
// a browser signed in with a read_write key.
func othersText(t *testing.T, e *env) (st, mem, prop string, admin string, b *browser) {
	t.Helper()
	admin, _ = e.key("admin", apikeys.ReadWrite, "")
	agent, _ := e.key("agent", apikeys.Propose, "")
	var s struct{ ID string }
	if status := e.api("POST", "/v1/memory_stores", admin, map[string]any{"name": "team \u202emaet", "description": "what \u202ewe learned\r\nand\tmore"}, &s); status != 200 {
		t.Fatalf("create store: %d", status)
	}
	st = s.ID
	m := e.write(admin, st, "/notes/plan.md", "# Plan\n\nPay monthly.\n", "x-gitmem-session-id", "sesn_a")
	e.write(admin, st, "/notes/plan.md", hiddenContent, "x-gitmem-session-id", "sesn_a")
	e.write(admin, st, "/notes/plan.conflict-1a2b3c4.md", "ours \u202eruo\n")
	e.write(admin, st, "/notes/other.md", "other\n")

	// A commit pushed with git, by an author whose name holds them.
	work := t.TempDir()
	remote := strings.Replace(e.url, "http://", "http://x:"+admin+"@", 1) + "/git/" + st + ".git"
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
			"GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@example.com", "GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=ann@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(work, "clone", "-q", remote, "team")
	wt := filepath.Join(work, "team")
	if err := os.WriteFile(filepath.Join(wt, "notes", "other.md"), []byte("pushed \u202edehsup\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(wt, "commit", "-qam", "pushed \u202e message", "--author", "Ev\x1b]0;owned\a\u202eli <ev@example.com>")
	git(wt, "push", "-q", "origin", "HEAD:main")

	// The agent's proposal: a diff line that reads as a comment but is code, its title, a comment.
	e.write(agent, st, "/notes/plan.md", hiddenContent+proposedLine+"\n")
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/proposals", admin, nil, &list)
	if len(list.Data) != 1 {
		t.Fatalf("proposals: %+v", list)
	}
	prop = list.Data[0].ID
	if status := e.api("PATCH", "/v1/memory_stores/"+st+"/proposals/"+prop, agent, map[string]any{"title": "Tidy \u202etxt.exe"}, nil); status != 200 {
		t.Fatalf("title: %d", status)
	}
	if status := e.api("POST", "/v1/memory_stores/"+st+"/proposals/"+prop+"/comments", agent, map[string]any{"body": "Harmless \u202eesolc\r\n\tsee above"}, nil); status != 201 {
		t.Fatalf("comment: %d", status)
	}
	if status := e.api("POST", "/v1/webhooks", admin, map[string]any{"url": e.url + "/hook/\u202e", "memory_store_id": st}, nil); status != 200 {
		t.Fatalf("webhook: %d", status)
	}
	b = e.browser()
	b.signIn(admin)
	return st, m.ID, prop, admin, b
}

// rawSuspects parses a page as a browser does and lists the suspect runes that it shows as
// they are, so that they act: in its text (a <textarea>'s excepted: a form's field keeps its
// text, to save it back) and its attributes (a form's value excepted). A lone carriage return
// is looked for in the page's bytes, since the parser makes it a line break.
func rawSuspects(body string) []string {
	var found []string
	look := func(where, s string) {
		for i, r := range s {
			if suspect.Rune(r) && !suspect.Layout(s, i, r) {
				found = append(found, fmt.Sprintf("U+%04X in %s %q", r, where, s))
			}
		}
	}
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		return []string{err.Error()}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			if n.Parent == nil || n.Parent.Data != "textarea" {
				look("the text of <"+n.Parent.Data+">", n.Data)
			}
		case html.ElementNode:
			for _, a := range n.Attr {
				if a.Key != "value" {
					look("attribute "+a.Key+" of <"+n.Data+">", a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	outside := regexp.MustCompile(`(?s)<textarea.*?</textarea>`).ReplaceAllString(body, "")
	if i := regexp.MustCompile(`\r[^\n]|\r$`).FindStringIndex(outside); i != nil {
		found = append(found, fmt.Sprintf("a lone carriage return at byte %d of %q", i[0], outside[max(i[0]-40, 0):min(i[1]+40, len(outside))]))
	}
	return found
}

// TestOthersControlsShown: every page that shows text a client or a pusher chose shows its
// bidi controls and control characters as marked escapes, never as they are: a proposal's
// title, comments and diff, a memory's content as Markdown and raw, paths, actors' names
// from a pushed commit, a store's name and description, history, diffs, blame, activity,
// search, conflicts, webhooks.
func TestOthersControlsShown(t *testing.T) {
	e := start(t)
	st, mem, prop, admin, b := othersText(t, e)
	base := "/ui/stores/" + st
	var vs struct {
		Data []struct{ ID string } `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memory_versions?memory_id="+mem, admin, nil, &vs)
	var other struct {
		Data []struct{ ID, Path string } `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memories?path_prefix=/notes/", admin, nil, &other)
	pushed := ""
	for _, m := range other.Data {
		if m.Path == "/notes/other.md" {
			pushed = m.ID
		}
	}
	var p page
	for i := 0; i < 200; i++ { // the index catches up in the background
		if p = b.get(base + "/search?q=monthly"); strings.Contains(p.body, "/notes/plan.md") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for path, shows := range map[string][]string{
		"/ui/":                   {`team <span class="ctl" title="U+202E`, `what <span class="ctl"`, "Ev" + `<span class="ctl" title="U+001B: a control character">\x1b</span>]0;owned`},
		base:                     {`\u202e`},
		base + "?prefix=/notes/": {`\u202e`},
		// (Markdown takes a lone \r for a line's end, as CommonMark says.)
		base + "/memories/" + mem:                         {`<h1>Plan <span class="ctl" title="U+202E: a bidirectional control, which would reorder the text around it">\u202e</span>eman</h1>`, `\u2066`, `\u2069`, `\x1b`, `\u0085`, `\u200f`},
		base + "/memories/" + mem + "?view=raw":           {`\u202e`, `\x1b`, `\r`},
		base + "/memories/" + mem + "/history":            {`\u202e`},
		base + "/memories/" + pushed + "/history":         {"Ev" + `<span class="ctl" title="U+001B: a control character">\x1b</span>]0;owned<span class="ctl" title="U+0007: a control character">\a</span><span class="ctl" title="U+202E`},
		base + "/memories/" + mem + "/diff":               {`\u202e`, `\x1b`},
		base + "/memories/" + mem + "/diff?view=unified":  {`\u202e`, `\x1b`},
		base + "/memories/" + mem + "/blame":              {`\u202e`},
		base + "/memories/" + pushed + "/blame":           {`\u202e`, `\x1b`},
		base + "/memories/" + mem + "/edit":               {`id="content-suspects"`},
		base + "/versions/" + vs.Data[0].ID:               {`\u202e`},
		base + "/versions/" + vs.Data[0].ID + "?view=raw": {`\u202e`},
		base + "/versions/" + vs.Data[0].ID + "/redact":   {`\u202e`},
		base + "/activity":                                {`\x1b`, `\u202e`},
		base + "/search?q=monthly":                        {`\u2066`},
		base + "/conflicts":                               {`\u202e`},
		base + "/proposals":                               {`Tidy <span class="ctl" title="U+202E`},
		base + "/proposals/" + prop:                       {`Tidy <span class="ctl" title="U+202E`, `Harmless <span class="ctl"`, `if isAdmin <span class="ctl"`},
		"/ui/webhooks":                                    {`/hook/<span class="ctl"`},
	} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Errorf("%s: %d %.500s", path, p.status, p.body)
			continue
		}
		for _, bad := range rawSuspects(p.body) {
			t.Errorf("%s shows %s", path, bad)
		}
		for _, s := range shows {
			if !strings.Contains(p.body, s) {
				t.Errorf("%s does not show %q: %.3000s", path, s, p.body)
			}
		}
	}

	// The editor holds the content as it is, so that saving it keeps it.
	if p := b.get(base + "/memories/" + mem + "/edit"); !strings.Contains(p.body, "\u202eeman") {
		t.Errorf("the editor changed the content: %.2000s", p.body)
	}

	// The UI's forms reach the same check as the API: a comment with a control character is
	// refused, nothing changed; one of lines (a textarea sends \r\n) is taken.
	from := base + "/proposals/" + prop
	if p := b.submit(from, from+"/comments", url.Values{"body": {"no\x1b[2J"}}); p.status != http.StatusBadRequest ||
		!strings.Contains(errorOf(p.body), "comment has a control character (U+001B)") {
		t.Errorf("a comment with ESC: %d %s", p.status, errorOf(p.body))
	}
	if p := b.submit(from, from+"/reject", url.Values{"comment": {"no\rway"}}); p.status != http.StatusBadRequest {
		t.Errorf("a rejection's comment with a lone CR: %d %s", p.status, errorOf(p.body))
	}
	if p := b.submit(base, base+"/settings", url.Values{"name": {"team"}, "description": {"bell\a"}}); p.status != http.StatusBadRequest ||
		!strings.Contains(errorOf(p.body), "description has a control character (U+0007)") {
		t.Errorf("a description with BEL: %d %s", p.status, errorOf(p.body))
	}
	var got struct {
		Comments []struct{ Body string }
	}
	e.api("GET", "/v1/memory_stores/"+st+"/proposals/"+prop, admin, nil, &got)
	if len(got.Comments) != 1 {
		t.Errorf("the refusals changed the thread: %+v", got.Comments)
	}
	if p := b.submit(from, from+"/comments", url.Values{"body": {"first line\r\nsecond\tline"}}); p.status != http.StatusSeeOther {
		t.Errorf("a comment of lines: %d %s", p.status, errorOf(p.body))
	}
	if p := b.get(from); !strings.Contains(p.body, "first line\r\nsecond\tline") && !strings.Contains(p.body, "first line\nsecond\tline") {
		t.Errorf("the comment of lines: %.3000s", p.body)
	}
}

// errorOf is the message of an error page, as text.
func errorOf(body string) string {
	if m := regexp.MustCompile(`(?s)<p class="error" role="alert">(.*?)</p>`).FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	return fmt.Sprintf("%.500s", body)
}

// TestFieldsSayTheirSuspects: a form's field keeps its text as it is, suspect runes too, so
// that sending it back keeps them; so each field that may hold others' text says, next to
// it, how many it holds, as the editor does: the memory editor's content, the store
// settings' description, the search box. A field without any says nothing. The description
// and the search box said nothing: a bidirectional control in them acted unseen.
func TestFieldsSayTheirSuspects(t *testing.T) {
	e := start(t)
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	var s struct{ ID string }
	if status := e.api("POST", "/v1/memory_stores", admin, map[string]any{"name": "team \u202emaet\u200b", "description": "what \u202ewe learned\u2066\r\nand\tmore"}, &s); status != 200 {
		t.Fatalf("create store: %d", status)
	}
	clean := e.store(admin, "clean")
	mem := e.write(admin, s.ID, "/notes/plan.md", "Pay \u202emonthly\x1b[0m\n")
	e.write(admin, clean, "/notes/plan.md", "Pay monthly\n")
	b := e.browser()
	b.signIn(admin)
	base, cleanBase := "/ui/stores/"+s.ID, "/ui/stores/"+clean
	notice := func(id, what string, n int) *regexp.Regexp {
		plural := map[bool]string{true: "s"}[n != 1]
		return regexp.MustCompile(`<p class="notice" id="` + id + `-suspects">This ` + what + ` holds ` + fmt.Sprint(n) +
			` control character` + plural + ` or bidirectional control` + plural + `, which its box shows as the browser does`)
	}
	for _, tc := range []struct {
		path   string
		notice *regexp.Regexp
		field  string // what the field holds, as it is
	}{
		{base + "/memories/" + mem.ID + "/edit", notice("content", "content", 2), "Pay \u202emonthly\x1b[0m"},
		{base, notice("sdesc", "description", 2), "what \u202ewe learned\u2066\r\nand\tmore"},
		{base, notice("sname", "name", 2), `value="team ` + "\u202emaet\u200b" + `"`},
		{base + "/search?q=" + url.QueryEscape("pay \u202emonthly"), notice("sq", "search", 1), `value="pay ` + "\u202e" + `monthly"`},
	} {
		p := b.get(tc.path)
		if p.status != http.StatusOK {
			t.Errorf("%s: %d %.500s", tc.path, p.status, p.body)
			continue
		}
		if !tc.notice.MatchString(p.body) {
			t.Errorf("%s does not say %s: %.3000s", tc.path, tc.notice, p.body)
		}
		if !strings.Contains(p.body, tc.field) {
			t.Errorf("%s changed its field's text %q", tc.path, tc.field)
		}
		for _, bad := range rawSuspects(p.body) {
			t.Errorf("%s shows %s", tc.path, bad)
		}
	}
	for _, path := range []string{cleanBase + "/memories/" + e.write(admin, clean, "/a.md", "plain\r\ntext\n").ID + "/edit", cleanBase, cleanBase + "/search?q=pay"} {
		if p := b.get(path); p.status != http.StatusOK || strings.Contains(p.body, "-suspects") {
			t.Errorf("%s, without suspect runes: %d, says %q", path, p.status, regexp.MustCompile(`[^>]*-suspects[^<]*`).FindString(p.body))
		}
	}
}
