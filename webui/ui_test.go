package webui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
	"golang.org/x/net/html"
)

func TestWithoutKeysNoSignIn(t *testing.T) {
	e := start(t)
	st := e.store("", "notes")
	b := e.browser()
	if p := b.get("/"); p.status != http.StatusFound || p.header.Get("Location") != "/ui/" {
		t.Fatalf("/ answers %d %s", p.status, p.header.Get("Location"))
	}
	p := b.get("/ui/")
	if p.status != 200 || !strings.Contains(p.body, "notes") || !strings.Contains(p.body, st) {
		t.Fatalf("stores page: %d %.500s", p.status, p.body)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"} {
		if p.header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	if !strings.Contains(p.header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("CSP %q allows more than it should", p.header.Get("Content-Security-Policy"))
	}
	// A page that reaches gitmem through a name of its own (DNS rebinding) is refused, as
	// the API refuses it.
	req, _ := http.NewRequest("GET", e.url+"/ui/", nil)
	req.Host = "evil.example:80"
	if p := b.do(req); p.status != http.StatusForbidden {
		t.Errorf("a request addressed to another host without keys: %d", p.status)
	}
	// The UI's writes are the local user's.
	p = b.submit("/ui/stores/"+st+"/new", "/ui/stores/"+st+"/memories", url.Values{"path": {"/a.md"}, "content": {"hello\r\nworld\r\n"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("create: %d %.300s", p.status, p.body)
	}
	var vs struct {
		Data []struct {
			CreatedBy map[string]string `json:"created_by"`
			Content   string            `json:"content"`
		} `json:"data"`
	}
	e.api("GET", "/v1/memory_stores/"+st+"/memory_versions?view=full", "", nil, &vs)
	if len(vs.Data) != 1 || vs.Data[0].CreatedBy["user_id"] != "user_local" || vs.Data[0].Content != "hello\nworld\n" {
		t.Fatalf("versions after a UI write: %+v", vs.Data)
	}
	if p := b.get("/ui/nope"); p.status != http.StatusNotFound {
		t.Errorf("unknown page: %d", p.status)
	}
	if p := b.get("/ui/stores/memstore_doesnotexist"); p.status != http.StatusNotFound {
		t.Errorf("unknown store: %d", p.status)
	}
	// A store is named by its name as well.
	if p := b.get("/ui/stores/notes"); p.status != 200 || !strings.Contains(p.body, "a.md") {
		t.Errorf("store by name: %d", p.status)
	}
	// A pasted address with a slash at its end is told where the page is.
	if p := b.get("/ui/stores/notes/"); p.status != http.StatusNotFound || !strings.Contains(p.body, "ends in a slash") || !strings.Contains(p.body, "try /ui/stores/notes") {
		t.Errorf("a store's page with a trailing slash: %d %.500s", p.status, p.body)
	}
}

func TestSignIn(t *testing.T) {
	e := start(t)
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	st := e.store(admin, "notes")
	b := e.browser()
	p := b.get("/ui/stores/" + st)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/login?next=") {
		t.Fatalf("a page without a session: %d %s", p.status, p.header.Get("Location"))
	}
	if p := b.submit("/ui/login", "/ui/login", url.Values{"key": {"sk-gitmem-wrong"}}); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "invalid API key") {
		t.Fatalf("a wrong key: %d %.300s", p.status, p.body)
	}
	p = b.submit("/ui/login", "/ui/login", url.Values{"key": {admin}, "next": {"/ui/stores/" + st}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/stores/"+st {
		t.Fatalf("sign in: %d %s", p.status, p.header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == "gitmem_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.MaxAge <= 0 || session.Path != "/ui/" {
		t.Fatalf("session cookie %+v", session)
	}
	if strings.Contains(session.Value, admin) {
		t.Fatal("the session cookie holds the key's secret")
	}
	if p := b.get("/ui/stores/" + st); p.status != 200 || !strings.Contains(p.body, "Sign out") {
		t.Fatalf("signed in: %d", p.status)
	}
	// A redirect after sign-in stays on the UI.
	for _, next := range []string{"https://evil.example/", "//evil.example/ui/", "/v1/memory_stores"} {
		p := b.submit("/ui/login", "/ui/login", url.Values{"key": {admin}, "next": {next}})
		if p.header.Get("Location") != "/ui/" {
			t.Errorf("next %q led to %q", next, p.header.Get("Location"))
		}
	}
	// A forged or altered cookie is no session.
	for _, v := range []string{session.Value + "x", "apikey_x.9999999999.abc", strings.Replace(session.Value, ".", ".1", 1)} {
		req, _ := http.NewRequest("GET", e.url+"/ui/", nil)
		req.AddCookie(&http.Cookie{Name: "gitmem_session", Value: v})
		if p := (&browser{e: e, c: &http.Client{CheckRedirect: b.c.CheckRedirect}}).do(req); p.status != http.StatusSeeOther {
			t.Errorf("cookie %q: %d", v, p.status)
		}
	}
	// Revoking the key ends its sessions at once.
	if _, err := e.keys.Revoke("admin"); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/ui/"); p.status != http.StatusSeeOther {
		t.Fatalf("after revoking the key: %d", p.status)
	}
	// Signing out ends the session.
	other, _ := e.key("other", apikeys.ReadWrite, "")
	b.signIn(other)
	b.submit("/ui/", "/ui/logout", nil)
	if p := b.get("/ui/"); p.status != http.StatusSeeOther {
		t.Fatalf("after signing out: %d", p.status)
	}
}

func TestCSRF(t *testing.T) {
	e := start(t)
	st := e.store("", "notes")
	m := e.write("", st, "/a.md", "one")
	b := e.browser()
	edit := "/ui/stores/" + st + "/memories/" + m.ID
	form := url.Values{"path": {"/a.md"}, "from_path": {"/a.md"}, "content": {"changed"}, "sha256": {m.ContentSHA256}}
	// No token, a made-up token, another browser's token: refused, nothing changes.
	other := e.browser().csrf("/ui/")
	for _, tok := range []string{"", "made-up", other} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		if tok != "" {
			f.Set("csrf", tok)
		}
		b.get("/ui/") // the browser has its csrf cookie
		if p := b.post(edit, f); p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF") {
			t.Errorf("token %q: %d %.200s", tok, p.status, p.body)
		}
	}
	if got := e.read("", st, m.ID).Content; got != "one" {
		t.Fatalf("a refused form changed the memory: %q", got)
	}
	// A form posted from another origin's page is refused before anything else.
	f := url.Values{"csrf": {b.csrf("/ui/")}}
	for k, v := range form {
		f[k] = v
	}
	req, _ := http.NewRequest("POST", e.url+edit, strings.NewReader(f.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := b.do(req); p.status != http.StatusForbidden {
		t.Errorf("cross-site form: %d", p.status)
	}
	// The right token from this browser works.
	if p := b.submit(edit+"/edit", edit, form); p.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %.300s", p.status, p.body)
	}
	if got := e.read("", st, m.ID).Content; got != "changed" {
		t.Fatalf("content %q", got)
	}
	// A form larger than any memory can need is refused whole.
	big := url.Values{"csrf": {b.csrf("/ui/")}, "content": {strings.Repeat("x", 2<<20)}}
	if p := b.post(edit, big); p.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MB form: %d", p.status)
	}
}

func TestReadOnlyAndStoreLimitedKeys(t *testing.T) {
	e := start(t)
	admin, _ := e.key("admin", apikeys.ReadWrite, "")
	mine := e.store(admin, "mine")
	theirs := e.store(admin, "theirs")
	m := e.write(admin, mine, "/a.md", "one")
	t2 := e.write(admin, theirs, "/secret.md", "theirs")

	ro, _ := e.key("reader", apikeys.ReadOnly, "")
	b := e.browser()
	b.signIn(ro)
	page := b.get("/ui/stores/" + mine + "/memories/" + m.ID)
	if page.status != 200 || !strings.Contains(page.body, "one") {
		t.Fatalf("read-only key reads: %d", page.status)
	}
	for _, control := range []string{">Edit<", "Delete memory", "/delete", "New memory"} {
		if strings.Contains(page.body, control) {
			t.Errorf("a read-only key sees the control %q", control)
		}
	}
	if p := b.get("/ui/stores/" + mine + "/memories/" + m.ID + "/edit"); p.status != http.StatusForbidden {
		t.Errorf("edit form for a read-only key: %d", p.status)
	}
	// The server refuses its writes anyway.
	tok := b.csrf("/ui/")
	writes := map[string]url.Values{
		"/ui/stores/" + mine + "/memories/" + m.ID:             {"path": {"/a.md"}, "from_path": {"/a.md"}, "content": {"x"}, "sha256": {m.ContentSHA256}},
		"/ui/stores/" + mine + "/memories/" + m.ID + "/delete": {"sha256": {m.ContentSHA256}},
		"/ui/stores/" + mine + "/memories":                     {"path": {"/b.md"}, "content": {"x"}},
		"/ui/stores":                                           {"name": {"new"}},
		"/ui/stores/" + mine + "/archive":                      {"confirm": {"mine"}},
	}
	for path, f := range writes {
		f.Set("csrf", tok)
		if p := b.post(path, f); p.status != http.StatusForbidden || !strings.Contains(p.body, "read_only") {
			t.Errorf("POST %s with a read-only key: %d", path, p.status)
		}
	}
	if got := e.read(admin, mine, m.ID).Content; got != "one" {
		t.Fatalf("a read-only key changed a memory: %q", got)
	}

	limited, _ := e.key("limited", apikeys.ReadWrite, mine)
	b = e.browser()
	b.signIn(limited)
	list := b.get("/ui/")
	if !strings.Contains(list.body, mine) || strings.Contains(list.body, theirs) {
		t.Errorf("a store-limited key's store list: %.600s", list.body)
	}
	// A store that does not exist is refused alike: the key learns nothing of the others.
	for _, path := range []string{"/ui/stores/" + theirs, "/ui/stores/theirs", "/ui/stores/nosuchstore", "/ui/stores/memstore_01M83BB1KXF10C9EEWAJM0FBRY", "/ui/stores/" + theirs + "/memories/" + t2.ID, "/ui/stores/" + theirs + "/activity", "/ui/stores/" + theirs + "/search?q=theirs"} {
		if p := b.get(path); p.status != http.StatusForbidden || strings.Contains(p.body, "secret.md") {
			t.Errorf("GET %s with another store's key: %d", path, p.status)
		}
	}
	f := url.Values{"path": {"/x.md"}, "content": {"x"}, "csrf": {b.csrf("/ui/")}}
	if p := b.post("/ui/stores/"+theirs+"/memories", f); p.status != http.StatusForbidden {
		t.Errorf("write to another store: %d", p.status)
	}
	if p := b.post("/ui/stores", url.Values{"name": {"more"}, "csrf": {b.csrf("/ui/")}}); p.status != http.StatusForbidden {
		t.Errorf("a store-limited key creates a store: %d", p.status)
	}
}

func TestHostileContentIsEscaped(t *testing.T) {
	e := start(t)
	st := e.store("", `<b>store</b>`)
	hostile := "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[click](javascript:alert(3))\n\n" +
		"<a href=\"javascript:alert(4)\">a</a>\n\n<iframe src=\"https://evil.example\"></iframe>\n\n![i](https://tracker.example/p.gif)\n"
	// Paths cannot hold < > or " (names that break clones are refused), but ' and & can.
	m := e.write("", st, "/it's & co/a=b.md", hostile)
	b := e.browser()
	pages := []string{
		"/ui/", "/ui/stores/" + st, "/ui/stores/" + st + "?prefix=" + url.QueryEscape("/it's & co/"),
		"/ui/stores/" + st + "/memories/" + m.ID, "/ui/stores/" + st + "/memories/" + m.ID + "?view=raw",
		"/ui/stores/" + st + "/memories/" + m.ID + "/history", "/ui/stores/" + st + "/memories/" + m.ID + "/diff",
		"/ui/stores/" + st + "/memories/" + m.ID + "/diff?view=unified", "/ui/stores/" + st + "/memories/" + m.ID + "/blame",
		"/ui/stores/" + st + "/memories/" + m.ID + "/edit", "/ui/stores/" + st + "/activity",
	}
	for _, path := range pages {
		p := b.get(path)
		if p.status != 200 {
			t.Errorf("%s: %d %.300s", path, p.status, p.body)
			continue
		}
		for _, bad := range unsafeMarkup(p.body) {
			t.Errorf("%s: %s", path, bad)
		}
		if strings.Contains(p.body, "<b>store") || strings.Contains(p.body, "it's & co") {
			t.Errorf("%s shows a name unescaped", path)
		}
	}
	// The rendered page still shows the content's text.
	if p := b.get("/ui/stores/" + st + "/memories/" + m.ID); !strings.Contains(p.body, "<h1>Title</h1>") {
		t.Errorf("markdown not rendered: %.2000s", p.body)
	}
	// An error page shows a hostile name escaped too.
	if p := b.get("/ui/stores/" + url.PathEscape("<script>x</script>")); strings.Contains(strings.ToLower(p.body), "<script>x") {
		t.Errorf("error page echoes markup: %d", p.status)
	}
}

// unsafeMarkup parses a page as a browser would and lists what could run a script or load
// from elsewhere: script, iframe, object and embed elements, on* attributes, and links or
// sources to javascript:, vbscript: or data: URLs. Hostile text shown as text is fine.
func unsafeMarkup(body string) []string {
	var bad []string
	z := html.NewTokenizer(strings.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return bad
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "script", "iframe", "object", "embed", "base":
				bad = append(bad, "element <"+tok.Data+">")
			}
			for _, a := range tok.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(a.Key, "on") {
					bad = append(bad, "attribute "+a.Key+" on <"+tok.Data+">")
				}
				if (a.Key == "href" || a.Key == "src" || a.Key == "action") &&
					(strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "vbscript:") || strings.HasPrefix(v, "data:")) {
					bad = append(bad, a.Key+"="+a.Val+" on <"+tok.Data+">")
				}
			}
		}
	}
}

func TestStorePages(t *testing.T) {
	e := start(t)
	b := e.browser()
	if p := b.get("/ui/login"); p.status != http.StatusSeeOther {
		t.Errorf("the sign-in page without keys: %d", p.status)
	}
	p := b.submit("/ui/", "/ui/stores", url.Values{"name": {"team"}, "description": {"shared"}})
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/stores/memstore_") {
		t.Fatalf("create: %d %s", p.status, p.header.Get("Location"))
	}
	st := strings.TrimPrefix(p.header.Get("Location"), "/ui/stores/")
	// Names are unique: a second store of the same name is refused with the store's message.
	if p := b.submit("/ui/", "/ui/stores", url.Values{"name": {"team"}}); p.status != http.StatusConflict || !strings.Contains(p.body, "team") {
		t.Fatalf("a duplicate name: %d %.300s", p.status, p.body)
	}
	if p := b.submit("/ui/stores/team", "/ui/stores/team/settings", url.Values{"name": {"crew"}, "description": {"the crew's notes"}}); p.status != http.StatusSeeOther {
		t.Fatalf("settings: %d %.300s", p.status, p.body)
	}
	if p := b.get("/ui/stores/crew"); p.status != 200 || !strings.Contains(p.body, "the crew&#39;s notes") {
		t.Fatalf("after the rename: %d", p.status)
	}
	if p := b.get("/ui/stores/" + st + "/new?prefix=/a/"); p.status != 200 || !strings.Contains(p.body, `value="/a/"`) {
		t.Fatalf("new memory form: %d", p.status)
	}
	// Archiving needs the name typed; then the store is read-only, in the pages and in fact.
	if p := b.submit("/ui/stores/"+st, "/ui/stores/"+st+"/archive", url.Values{"confirm": {"team"}}); p.status != http.StatusBadRequest {
		t.Fatalf("archive with the wrong name: %d", p.status)
	}
	if p := b.submit("/ui/stores/"+st, "/ui/stores/"+st+"/archive", url.Values{"confirm": {"crew"}}); p.status != http.StatusSeeOther {
		t.Fatalf("archive: %d %.300s", p.status, p.body)
	}
	page := b.get("/ui/stores/" + st)
	if !strings.Contains(page.body, "archived") || strings.Contains(page.body, "New memory here") {
		t.Fatalf("an archived store's page: %.1500s", page.body)
	}
	if p := b.submit("/ui/", "/ui/stores/"+st+"/memories", url.Values{"path": {"/x.md"}, "content": {"x"}}); p.status != http.StatusBadRequest || !strings.Contains(p.body, "archived") {
		t.Fatalf("a write to an archived store: %d %.300s", p.status, p.body)
	}
	if p := b.get("/ui/"); strings.Contains(p.body, "crew") {
		t.Error("an archived store is listed without asking")
	}
	if p := b.get("/ui/?archived=1"); !strings.Contains(p.body, "crew") {
		t.Error("archived stores are not listed when asked")
	}
}
