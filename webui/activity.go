package webui

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// activityFilter is what the activity feed and the revert form select by, as typed.
type activityFilter struct {
	Actor, Session, Key, Op, Prefix, Since, Until string
}

func filterOf(v url.Values) activityFilter {
	g := func(k string) string { return strings.TrimSpace(v.Get(k)) }
	return activityFilter{Actor: g("actor"), Session: g("session"), Key: g("key"), Op: g("op"), Prefix: g("prefix"), Since: g("since"), Until: g("until")}
}

// Query is the filter as a query string, to carry it to the next page or to a revert
// (typed as a URL, so that pages insert it as it is: it is encoded here).
func (f activityFilter) Query() template.URL {
	v := url.Values{}
	for k, s := range map[string]string{"actor": f.Actor, "session": f.Session, "key": f.Key, "op": f.Op, "prefix": f.Prefix, "since": f.Since, "until": f.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return template.URL(v.Encode())
}

// versions turns the filter into a version filter, with its times read as people type them
// (gitstore.ParseTime: "today", "2h", "2026-11-01", RFC 3339).
func (f activityFilter) versions(now time.Time) (gitstore.VersionFilter, error) {
	vf := gitstore.VersionFilter{ActorID: f.Actor, SessionID: f.Session, APIKeyID: f.Key, Operation: gitstore.Operation(f.Op), PathPrefix: f.Prefix}
	if f.Prefix != "" {
		if !strings.HasSuffix(vf.PathPrefix, "/") {
			vf.PathPrefix += "/"
		}
		if err := gitstore.ValidatePathPrefix(vf.PathPrefix); err != nil {
			return vf, err
		}
	}
	var err error
	if f.Since != "" {
		if vf.CreatedAtGTE, err = gitstore.ParseTime(f.Since, now); err != nil {
			return vf, badRequest("since: " + err.Error())
		}
	}
	if f.Until != "" {
		if vf.CreatedAtLTE, err = gitstore.ParseUntil(f.Until, now); err != nil { // today's versions too
			return vf, badRequest("until: " + err.Error())
		}
	}
	return vf, nil
}

type activityPage struct {
	Filter   activityFilter
	Versions []gitstore.Version
	Next     string
	// CanRevert: the filter names a session or a key, which a revert needs.
	CanRevert bool
}

const activityPageSize = 50

// activity is the store's feed of changes, newest first, filtered; each entry links to the
// diff of what it did.
func (u *UI) activity(w http.ResponseWriter, r *http.Request, q *request) error {
	f := filterOf(r.URL.Query())
	vf, err := f.versions(time.Now())
	if err != nil {
		return err
	}
	vf.Limit, vf.Cursor = activityPageSize, r.URL.Query().Get("cursor")
	vs, err := q.store.Versions(r.Context(), vf)
	if err != nil {
		return err
	}
	u.render(w, r, q, http.StatusOK, "activity", activityPage{Filter: f, Versions: vs.Versions, Next: vs.NextCursor,
		CanRevert: (f.Session != "") != (f.Key != "")})
	return nil
}

type revertPage struct {
	Filter activityFilter
	Result gitstore.RevertResult
	Done   bool
}

// revertPreview shows what reverting a session's or a key's changes in a range would do: a
// dry run, with the button that does it.
func (u *UI) revertPreview(w http.ResponseWriter, r *http.Request, q *request) error {
	return u.doRevert(w, r, q, filterOf(r.URL.Query()), true)
}

func (u *UI) revert(w http.ResponseWriter, r *http.Request, q *request) error {
	return u.doRevert(w, r, q, filterOf(r.PostForm), false)
}

func (u *UI) doRevert(w http.ResponseWriter, r *http.Request, q *request, f activityFilter, dry bool) error {
	vf, err := f.versions(time.Now())
	if err != nil {
		return err
	}
	if (f.Session == "") == (f.Key == "") {
		return badRequest("a revert undoes what one session or one API key changed: filter the activity by a session or by a key (not both)")
	}
	res, err := q.store.Revert(r.Context(), gitstore.RevertInput{SessionID: vf.SessionID, APIKeyID: vf.APIKeyID,
		Since: vf.CreatedAtGTE, Until: vf.CreatedAtLTE, DryRun: dry, Actor: q.caller.Actor})
	if err != nil {
		return err
	}
	u.render(w, r, q, http.StatusOK, "revert", revertPage{Filter: f, Result: res, Done: !dry})
	return nil
}

type searchPage struct {
	Query, Prefix string
	Result        *search.Result
}

func (u *UI) search(w http.ResponseWriter, r *http.Request, q *request) error {
	if u.opts.Search == nil {
		return &pageError{status: http.StatusNotImplemented, msg: "search is not enabled on this server"}
	}
	page := searchPage{Query: r.URL.Query().Get("q"), Prefix: r.URL.Query().Get("prefix")}
	if page.Query != "" {
		res, err := u.opts.Search.Search(r.Context(), q.storeID, search.Request{Query: page.Query, PathPrefix: page.Prefix, Limit: 50, Snippets: 3})
		if err != nil {
			return err
		}
		page.Result = res
	}
	u.render(w, r, q, http.StatusOK, "search", page)
	return nil
}
