package webui

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

type historyPage struct {
	MemoryID string
	Path     string
	Versions []gitstore.Version
	Next     string
}

// history is a memory's timeline, newest first, with a form to compare any two versions.
func (u *UI) history(w http.ResponseWriter, r *http.Request, q *request) error {
	id := r.PathValue("id")
	vs, err := q.store.Versions(r.Context(), gitstore.VersionFilter{MemoryID: id, Limit: 100, Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		return err
	}
	if len(vs.Versions) == 0 && r.URL.Query().Get("cursor") == "" {
		return notFound("memory " + id + " has no history in this store")
	}
	page := historyPage{MemoryID: id, Versions: vs.Versions, Next: vs.NextCursor}
	for _, v := range vs.Versions {
		if v.Path != "" {
			page.Path = v.Path
			break
		}
	}
	u.render(w, r, q, http.StatusOK, "history", page)
	return nil
}

type diffPage struct {
	Diff    gitstore.MemoryDiff
	Split   bool
	Rows    []diffRow
	Lines   []unifiedLine
	Renamed bool
}

// diff shows the change between two versions of a memory (by default, what its latest
// version changed), side by side or unified.
func (u *UI) diff(w http.ResponseWriter, r *http.Request, q *request) error {
	qs := r.URL.Query()
	d, err := q.store.DiffMemory(r.Context(), r.PathValue("id"), qs.Get("from"), qs.Get("to"))
	if err != nil {
		return err
	}
	page := diffPage{Diff: d, Split: qs.Get("view") != "unified",
		Renamed: d.From.ID != "" && d.From.Path != "" && d.To.Path != "" && d.From.Path != d.To.Path}
	if page.Split {
		page.Rows = splitRows(d.Diff)
	} else {
		page.Lines = unifiedLines(d.Diff)
	}
	u.render(w, r, q, http.StatusOK, "diff", page)
	return nil
}

type blamePage struct {
	Memory gitstore.Memory
	Lines  []gitstore.BlameLine
}

func (u *UI) blame(w http.ResponseWriter, r *http.Request, q *request) error {
	ctx := r.Context()
	m, err := q.store.Get(ctx, r.PathValue("id"), false)
	if err != nil {
		return err
	}
	lines, err := q.store.Blame(ctx, m.ID)
	if err != nil {
		return err
	}
	u.render(w, r, q, http.StatusOK, "blame", blamePage{Memory: m, Lines: lines})
	return nil
}

type versionPage struct {
	Version gitstore.Version
	Raw     bool
}

func (u *UI) version(w http.ResponseWriter, r *http.Request, q *request) error {
	v, err := q.store.Version(r.Context(), r.PathValue("vid"), true)
	if err != nil {
		return err
	}
	u.render(w, r, q, http.StatusOK, "version", versionPage{Version: v, Raw: r.URL.Query().Get("view") == "raw"})
	return nil
}

func (u *UI) restore(w http.ResponseWriter, r *http.Request, q *request) error {
	res, err := q.store.Restore(r.Context(), gitstore.RestoreInput{VersionID: r.PathValue("vid"), Actor: q.caller.Actor})
	if err != nil {
		return err
	}
	return redirect(w, r, q.storeURL("/memories/"+res.Memory.ID))
}

func (u *UI) redactForm(w http.ResponseWriter, r *http.Request, q *request) error {
	v, err := q.store.Version(r.Context(), r.PathValue("vid"), false)
	if err != nil {
		return err
	}
	u.render(w, r, q, http.StatusOK, "redact", versionPage{Version: v})
	return nil
}

func (u *UI) redact(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.PostFormValue("confirm") != "redact" {
		return badRequest(`to redact, type the word redact in the box: a redaction cannot be undone`)
	}
	res, err := q.store.Redact(r.Context(), gitstore.RedactInput{VersionID: r.PathValue("vid"), Actor: q.caller.Actor})
	if err != nil {
		return err
	}
	return redirect(w, r, q.storeURL("/memories/"+res.Version.MemoryID+"/history"))
}

func queryEscape(s string) string { return url.QueryEscape(s) }

// parentOf is the folder that holds a memory path, as a listing prefix.
func parentOf(p string) string {
	d := path.Dir(p)
	if d == "/" || d == "." {
		return "/"
	}
	return strings.TrimSuffix(d, "/") + "/"
}
