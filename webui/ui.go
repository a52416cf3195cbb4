// Package webui is gitmem's review UI: server-rendered pages under /ui/ to see what agents
// remembered, who changed what, and put it right. Pages are html/template, embedded in the
// binary; they need no JavaScript, and none runs on them (the Content-Security-Policy
// allows no script). Every action calls the same store operations as the API, as the
// signed-in key.
package webui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/proposals"
	"github.com/gitmem/gitmem/search"
	"github.com/gitmem/gitmem/webhooks"
)

// Prefix is where the UI is served.
const Prefix = "/ui/"

// Auth decides who a request comes from, by the API's rules, and limits how often it may
// ask, in the API's token buckets (httpapi.Server has both).
type Auth interface {
	KeysInForce() (bool, error)
	Identify(r *http.Request, secret string) (httpapi.Caller, error)
	// LimitRate takes a page's request from its key's bucket (gitmem serve --rate-limit),
	// shared with the key's API, MCP and git requests.
	LimitRate(c httpapi.Caller) error
	// LimitSignIn takes a sign-in attempt from its client address's bucket.
	LimitSignIn(r *http.Request) error
}

// Options configure the UI.
type Options struct {
	Data   *gitstore.DataDir
	Keys   *apikeys.Keys
	Auth   Auth
	Search *search.Service // nil: no search page
	// Webhooks is the registry the webhooks page shows (nil: the page says there are none).
	Webhooks *webhooks.Registry
	// Proposals is what the review queue shows and decides (nil: the queue says it is off).
	Proposals *proposals.Manager
	Logger    *slog.Logger
	// SessionTTL is how long a sign-in lasts (default 12 hours).
	SessionTTL time.Duration
}

// UI serves the pages.
type UI struct {
	opts     Options
	log      *slog.Logger
	sessions *sessions
	pages    *pages
	mux      *http.ServeMux
}

//go:embed static
var static embed.FS

// New builds the UI over a data directory.
func New(opts Options) (*UI, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	secret, err := loadSecret(opts.Data.Layout().UISessionKeyFile())
	if err != nil {
		return nil, err
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	u := &UI{opts: opts, log: opts.Logger, sessions: &sessions{secret: secret, ttl: opts.SessionTTL}, pages: pg, mux: http.NewServeMux()}
	u.routes()
	return u, nil
}

func (u *UI) routes() {
	m := u.mux
	sub, _ := fs.Sub(static, "static")
	m.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(sub)))
	m.HandleFunc("GET /ui/login", u.page(u.loginForm, anyone))
	m.HandleFunc("POST /ui/login", u.page(u.login, anyone))
	m.HandleFunc("POST /ui/logout", u.page(u.logout, leaving))

	m.HandleFunc("GET /ui/{$}", u.page(u.storeList, reader))
	m.HandleFunc("POST /ui/stores", u.page(u.createStore, writer))
	m.HandleFunc("GET /ui/stores/{store}", u.page(u.browse, reader))
	m.HandleFunc("POST /ui/stores/{store}/settings", u.page(u.updateStore, writer))
	m.HandleFunc("POST /ui/stores/{store}/archive", u.page(u.archiveStore, writer))
	m.HandleFunc("GET /ui/stores/{store}/new", u.page(u.newMemoryForm, writer))
	m.HandleFunc("POST /ui/stores/{store}/memories", u.page(u.createMemory, writer))
	m.HandleFunc("GET /ui/stores/{store}/memories/{id}", u.page(u.memory, reader))
	m.HandleFunc("GET /ui/stores/{store}/memories/{id}/edit", u.page(u.editForm, writer))
	m.HandleFunc("POST /ui/stores/{store}/memories/{id}", u.page(u.saveMemory, writer))
	m.HandleFunc("POST /ui/stores/{store}/memories/{id}/delete", u.page(u.deleteMemory, writer))
	m.HandleFunc("GET /ui/stores/{store}/memories/{id}/history", u.page(u.history, reader))
	m.HandleFunc("GET /ui/stores/{store}/memories/{id}/diff", u.page(u.diff, reader))
	m.HandleFunc("GET /ui/stores/{store}/memories/{id}/blame", u.page(u.blame, reader))
	m.HandleFunc("GET /ui/stores/{store}/versions/{vid}", u.page(u.version, reader))
	m.HandleFunc("POST /ui/stores/{store}/versions/{vid}/restore", u.page(u.restore, writer))
	m.HandleFunc("GET /ui/stores/{store}/versions/{vid}/redact", u.page(u.redactForm, writer))
	m.HandleFunc("POST /ui/stores/{store}/versions/{vid}/redact", u.page(u.redact, writer))
	m.HandleFunc("GET /ui/stores/{store}/activity", u.page(u.activity, reader))
	m.HandleFunc("GET /ui/stores/{store}/revert", u.page(u.revertPreview, writer))
	m.HandleFunc("POST /ui/stores/{store}/revert", u.page(u.revert, writer))
	m.HandleFunc("GET /ui/stores/{store}/search", u.page(u.search, reader))
	m.HandleFunc("GET /ui/stores/{store}/conflicts", u.page(u.conflicts, reader))
	m.HandleFunc("GET /ui/webhooks", u.page(u.webhooks, writer))
	m.HandleFunc("GET /ui/stores/{store}/proposals", u.page(u.proposalsQueue, reader))
	m.HandleFunc("GET /ui/stores/{store}/proposals/{prop}", u.page(u.proposal, reader))
	m.HandleFunc("POST /ui/stores/{store}/proposals/{prop}/approve", u.page(u.approveProposal, writer))
	m.HandleFunc("POST /ui/stores/{store}/proposals/{prop}/reject", u.page(u.rejectProposal, writer))
	m.HandleFunc("POST /ui/stores/{store}/proposals/{prop}/comments", u.page(u.commentProposal, writer))
	m.HandleFunc("POST /ui/stores/{store}/conflicts/{id}", u.page(u.resolveConflict, writer))
	m.HandleFunc("/ui/", u.page(func(w http.ResponseWriter, r *http.Request, q *request) error {
		if p := r.URL.Path; p != "/ui/" && strings.HasSuffix(p, "/") {
			// A pasted address with a slash at its end (/ui/stores/notes/).
			return notFound(fmt.Sprintf("no such page: %s ends in a slash, which no page's address has; try %s", p, strings.TrimRight(p, "/")))
		}
		return notFound("no such page")
	}, anyone))
}

// ServeHTTP serves a request for a page. Every answer forbids scripts, framing and
// sniffing: memory content is shown, and it is written by agents.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	u.mux.ServeHTTP(w, r)
}

// need is what a page needs of its caller.
type need int

const (
	anyone  need = iota // the sign-in pages
	leaving             // signing out: anyone, and never refused past the key's rate
	reader              // any signed-in key
	writer              // a key that can write (POST pages, and forms that only write)
)

// request is what a page handler knows of its request.
type request struct {
	caller  httpapi.Caller
	keys    bool   // keys are in force: there is a sign-in
	csrf    string // the token that the page's forms carry
	store   *gitstore.Store
	info    gitstore.StoreInfo
	storeID string
}

type handler func(w http.ResponseWriter, r *http.Request, q *request) error

// maxForm bounds a form's body: a memory is at most 100 KB, and form encoding can triple it.
const maxForm = 1 << 20

// page wraps a handler with what every page does first: find the caller, take the request
// from its key's rate, check that it may do what the page does, check the CSRF token of a
// POST, and resolve the store it names. (Static files are served without it, and count
// against no rate.)
func (u *UI) page(h handler, n need) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := &request{}
		err := u.prepare(w, r, q, n)
		if err == nil {
			err = h(w, r, q)
		}
		if err != nil {
			u.fail(w, r, q, err)
		}
	}
}

func (u *UI) prepare(w http.ResponseWriter, r *http.Request, q *request, n need) error {
	var err error
	if q.keys, err = u.opts.Auth.KeysInForce(); err != nil {
		return err
	}
	q.csrf = u.sessions.csrfToken(w, r) // the error pages' forms (sign out) carry it too
	// The session's key, from its cookie alone, so that a request past the key's rate is
	// refused before its form is read or anything done.
	var identifyErr error
	q.caller, identifyErr = u.identify(r, q.keys)
	if q.caller.Key != nil && n != leaving {
		if err := u.opts.Auth.LimitRate(q.caller); err != nil {
			return err
		}
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return &pageError{status: http.StatusRequestEntityTooLarge, msg: "the form is too large: at most 1 MB"}
			}
			return badRequest("the form could not be read: " + err.Error())
		}
	}
	if r.Method == http.MethodPost && !u.sessions.checkCSRF(r, r.PostFormValue("csrf")) {
		return &pageError{status: http.StatusForbidden, msg: "this form has expired or did not come from this page (CSRF check failed): go back, reload the page and send it again"}
	}
	if n == anyone || n == leaving {
		return nil
	}
	if identifyErr != nil {
		return identifyErr
	}
	if n == writer && !q.caller.CanWrite() {
		return forbidden("this API key (" + q.caller.Key.ID + ") is read_only: it can look, not change anything")
	}
	if ref := r.PathValue("store"); ref != "" {
		return u.openStore(r.Context(), q, ref)
	}
	return nil
}

// identify finds the caller: without keys in force, the local user (for loopback only, as
// the API decides); with keys, the key of the session cookie.
func (u *UI) identify(r *http.Request, keys bool) (httpapi.Caller, error) {
	if !keys {
		return u.opts.Auth.Identify(r, "")
	}
	keyID, ok := u.sessions.signedIn(r)
	if !ok {
		return httpapi.Caller{}, errSignIn
	}
	all, err := u.opts.Keys.List()
	if err != nil {
		return httpapi.Caller{}, err
	}
	for _, k := range all {
		if k.ID == keyID && k.Active() {
			return httpapi.KeyCaller(k), nil
		}
	}
	return httpapi.Caller{}, errSignIn // revoked since
}

// openStore resolves the store a page names by id or name, for a caller that may see it. A
// key limited to one store is refused alike for a store that exists and one that does not,
// as git and MCP refuse it: it learns nothing of the others.
func (u *UI) openStore(ctx context.Context, q *request, ref string) error {
	id, err := u.opts.Data.ResolveStore(ctx, ref)
	if k := q.caller.Key; k != nil && k.StoreID != "" && (err != nil || id != k.StoreID) {
		return forbidden("this API key (" + k.ID + ") is limited to another memory store")
	}
	if err != nil {
		return err
	}
	if !q.caller.CanSee(id) {
		return forbidden("this API key (" + q.caller.Key.ID + ") is limited to another memory store")
	}
	if q.store, err = u.opts.Data.Store(ctx, id); err != nil {
		return err
	}
	q.storeID = id
	q.info, err = q.store.Info(ctx)
	return err
}

// storeURL is the URL of a page of the request's store: /ui/stores/<id> + rest.
func (q *request) storeURL(rest string) string {
	return Prefix + "stores/" + url.PathEscape(q.storeID) + rest
}

// redirect answers a POST with a redirect to a page (303: the browser GETs it).
func redirect(w http.ResponseWriter, r *http.Request, to string) error {
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// formValue is a form field with its line ends as typed in a browser's textarea (CRLF)
// made LF, as memories keep them.
func formText(r *http.Request, name string) string {
	return strings.ReplaceAll(r.PostFormValue(name), "\r\n", "\n")
}
