package webui

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
)

// pageError is an error of the UI's own, with the status and message to show.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func badRequest(msg string) error { return &pageError{status: http.StatusBadRequest, msg: msg} }
func forbidden(msg string) error  { return &pageError{status: http.StatusForbidden, msg: msg} }
func notFound(msg string) error   { return &pageError{status: http.StatusNotFound, msg: msg} }

// errSignIn: keys are in force, and the request has no current session.
var errSignIn = errors.New("sign in with an API key")

// fail answers an error: a sign-in for a reader without a session, else an error page with
// the status and message that the API would give (an internal error's text is logged,
// never shown).
func (u *UI) fail(w http.ResponseWriter, r *http.Request, q *request, err error) {
	if errors.Is(err, errSignIn) {
		if r.Method == http.MethodGet {
			http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		err = &pageError{status: http.StatusUnauthorized, msg: "your session has ended: sign in again, then send the form again"}
	}
	status, msg := http.StatusInternalServerError, ""
	var pe *pageError
	if errors.As(err, &pe) {
		status, msg = pe.status, pe.msg
	} else {
		status, _, msg = httpapi.ErrorStatus(gitstore.NoSpace(err, u.opts.Data.Dir()))
	}
	if status >= 500 {
		u.log.Error("ui page failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if !retryAfter(w, err) && status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	u.render(w, r, q, status, "error", map[string]any{"Status": status, "StatusText": http.StatusText(status), "Message": msg})
}

// statusOf is the status and message that the API answers err with.
func statusOf(err error) (int, string) {
	status, _, msg := httpapi.ErrorStatus(err)
	return status, msg
}

// retryAfter gives the answer to err the Retry-After that the API gives it (a 429 past a
// rate limit), and tells whether there was one.
func retryAfter(w http.ResponseWriter, err error) bool {
	secs := httpapi.RetryAfter(err)
	if secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	return secs > 0
}
