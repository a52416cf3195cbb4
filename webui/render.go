package webui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

//go:embed templates
var templateFS embed.FS

// pages holds one template set per page: the layout with that page's blocks.
type pages struct{ byName map[string]*template.Template }

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"ago":       ago,
	"bytes":     humanBytes,
	"short":     func(s string) string { return shortID(s) },
	"markdown":  markdown,
	"actor":     actorName,
	"base":      func(p string) string { return path.Base(strings.TrimSuffix(p, "/")) },
	"crumbs":    crumbs,
	"list":      func(s ...string) []string { return s },
	"highlight": highlight,
	"suspects":  countSuspects,
	"field":     suspectField,
}

// fieldSuspects is what the partial "suspects" says of a form's field whose text holds runes
// that a page shows escaped (countSuspects): the field keeps them as they are, to send them
// back (showControls), so the page says, next to it, that they are there.
type fieldSuspects struct {
	ID   string // the field's id; the notice's is ID-suspects
	What string // what the field holds: "content", "description"
	Then string // what becomes of them: where they show escaped, what sending keeps
	Text string
}

func suspectField(id, what, then, text string) fieldSuspects {
	return fieldSuspects{ID: id, What: what, Then: then, Text: text}
}

// highlight shows a search snippet with its matches marked, every byte of it escaped.
func highlight(s search.Snippet) template.HTML {
	return template.HTML(s.MarkedFunc("<mark>", "</mark>", template.HTMLEscapeString))
}

func parsePages() (*pages, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, err
	}
	files, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+f.Name())
		if err != nil {
			return nil, err
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what every page's template gets: the page's own data in P, and what the layout
// shows around it.
type view struct {
	Keys     bool   // keys are in force: show who is signed in, and sign-out
	KeyID    string // the signed-in key
	KeyName  string
	Access   string
	CanWrite bool
	CSRF     string
	Store    *gitstore.StoreInfo // the page's store, if it has one
	Base     string              // /ui/stores/<id>: the store's pages
	At       string              // browsing the store as of this time or commit
	P        any
}

func (u *UI) render(w http.ResponseWriter, r *http.Request, q *request, status int, name string, data any) {
	t := u.pages.byName[name]
	v := view{CSRF: q.csrf, Keys: q.keys, CanWrite: q.caller.CanWrite() && (!q.keys || q.caller.Key != nil), P: data,
		At: r.URL.Query().Get("at")}
	if k := q.caller.Key; k != nil {
		v.KeyID, v.KeyName, v.Access = k.ID, k.Name, string(k.Access)
	}
	if q.store != nil {
		v.Store, v.Base = &q.info, q.storeURL("")
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		u.log.Error("render page", "page", name, "err", err)
		http.Error(w, "the page could not be shown; the server's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(showControls(buf.Bytes())) // others' control characters and bidi controls, shown (controls.go)
}

func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%d days ago", int(d.Hours()/24))
	}
}

func humanBytes(n any) string {
	var b float64
	switch v := n.(type) {
	case int:
		b = float64(v)
	case int64:
		b = float64(v)
	}
	switch {
	case b < 1024:
		return fmt.Sprintf("%.0f B", b)
	case b < 1024*1024:
		return fmt.Sprintf("%.1f KB", b/1024)
	default:
		return fmt.Sprintf("%.1f MB", b/1024/1024)
	}
}

// shortID cuts a long id or hash for display; the full one is in the title or link.
func shortID(s string) string {
	if i := strings.IndexByte(s, '_'); i > 0 && len(s) > i+9 {
		return s[:i+1] + "…" + s[len(s)-6:]
	}
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// actorName is how an actor is shown: its name, else its id.
func actorName(a gitstore.Actor) string {
	switch {
	case a.Type == gitstore.SessionActor && a.APIKeyID != "":
		return a.ID + " (key " + a.APIKeyID + ")"
	case a.Name != "" && a.Name != a.ID:
		return a.Name + " (" + a.ID + ")"
	default:
		return a.ID
	}
}

// crumb is one folder of a path, linked to its listing.
type crumb struct{ Name, Prefix string }

// crumbs splits a folder prefix ("/a/b/") or a memory path ("/a/b/c.md") into its folders.
func crumbs(p string) []crumb {
	out := []crumb{{Name: "/", Prefix: "/"}}
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if !strings.HasSuffix(p, "/") {
		segs = segs[:len(segs)-1] // the memory's own name is not a folder
	}
	prefix := "/"
	for _, s := range segs {
		if s == "" {
			continue
		}
		prefix += s + "/"
		out = append(out, crumb{Name: s, Prefix: prefix})
	}
	return out
}
