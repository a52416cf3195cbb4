package webui

import (
	"net/http"
	"strings"
	"time"

	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/internal/english"
)

func (u *UI) loginForm(w http.ResponseWriter, r *http.Request, q *request) error {
	if !q.keys {
		return redirect(w, r, Prefix) // no keys, no sign-in
	}
	u.render(w, r, q, http.StatusOK, "login", loginPage{Next: safeNext(r.URL.Query().Get("next")), TTL: humanDuration(u.opts.SessionTTL)})
	return nil
}

type loginPage struct{ Next, Error, TTL string }

func (u *UI) login(w http.ResponseWriter, r *http.Request, q *request) error {
	next := safeNext(r.PostFormValue("next"))
	if !q.keys {
		return redirect(w, r, next)
	}
	// Every attempt counts against its address, before its key is checked: a guesser past
	// the rate learns nothing more of its guesses (httpapi's limitSignIn).
	err := u.opts.Auth.LimitSignIn(r)
	var cl httpapi.Caller
	if err == nil {
		cl, err = u.opts.Auth.Identify(r, strings.TrimSpace(r.PostFormValue("key")))
	}
	if err != nil {
		status, _, msg := httpapi.ErrorStatus(err)
		retryAfter(w, err)
		u.render(w, r, q, status, "login", loginPage{Next: next, Error: msg, TTL: humanDuration(u.opts.SessionTTL)})
		return nil
	}
	u.sessions.signIn(w, r, cl.Key.ID)
	return redirect(w, r, next)
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request, q *request) error {
	u.sessions.signOut(w, r)
	return redirect(w, r, Prefix+"login")
}

// safeNext keeps a redirect after sign-in on the UI's own pages: never to another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

// humanDuration says a session's length as people do: "12 hours", "30 minutes".
func humanDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return english.Count(int(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return english.Count(int(d/time.Minute), "minute")
	default:
		return d.String()
	}
}
