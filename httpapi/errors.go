package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// apiError is an error answered in the SDKs' envelope. Handlers return it (or a gitstore
// error, which errorFor maps) and the error handler writes it.
type apiError struct {
	status  int
	typ     string
	message string
	// For path conflicts: the memory in the way.
	conflictingID, conflictingPath string
	rule                           gitstore.Rule
	// retryAfter, if above 0, is the Retry-After of the answer, in seconds: when a retry
	// may find room (a 429 of a key's rate or of what it holds open).
	retryAfter int
}

// errorJSON is the error object inside the envelope.
type errorJSON struct {
	Type                string `json:"type"`
	Message             string `json:"message"`
	ConflictingMemoryID string `json:"conflicting_memory_id,omitempty"`
	ConflictingPath     string `json:"conflicting_path,omitempty"`
	// Rule names the rule an invalid request broke, where gitmem names it (too_large,
	// secret, quota): a gitmem extension.
	Rule string `json:"rule,omitempty"`
}

type envelopeJSON struct {
	Type      string    `json:"type"`
	Error     errorJSON `json:"error"`
	RequestID string    `json:"request_id"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.typ, e.message) }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *apiError {
	return &apiError{status: http.StatusForbidden, typ: "permission_error", message: fmt.Sprintf(format, args...)}
}

func unsupportedMediaType(format string, args ...any) *apiError {
	return &apiError{status: http.StatusUnsupportedMediaType, typ: "invalid_request_error", message: fmt.Sprintf(format, args...)}
}

func unauthorized(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", message: msg}
}

// kindStatus maps each gitstore error kind to its status and error type: the one table.
var kindStatus = map[gitstore.Kind]struct {
	status int
	typ    string
}{
	gitstore.KindInvalid:            {http.StatusBadRequest, "invalid_request_error"},
	gitstore.KindArchived:           {http.StatusBadRequest, "invalid_request_error"},
	gitstore.KindNotFound:           {http.StatusNotFound, "not_found_error"},
	gitstore.KindPreconditionFailed: {http.StatusConflict, "memory_precondition_failed_error"},
	gitstore.KindPathConflict:       {http.StatusConflict, "memory_path_conflict_error"},
	gitstore.KindConflict:           {http.StatusConflict, "conflict_error"},
	// Soon over (a store closing, main.lock held by git, an index rebuilding): 503 with the
	// type the SDKs retry, after Retry-After.
	gitstore.KindUnavailable: {http.StatusServiceUnavailable, "overloaded_error"},
	// This installation cannot do it (no git): retrying does not help.
	gitstore.KindUnsupported: {http.StatusNotImplemented, "api_error"},
	// A full disk: 507 Insufficient Storage, which names the cause, and not 503, which the
	// SDKs would retry twice within seconds, which a full disk does not outlast.
	gitstore.KindStorage: {http.StatusInsufficientStorage, "storage_full_error"},
}

// echoStatus maps the errors echo itself returns (no route, body too large, ...).
var echoStatus = map[int]string{
	http.StatusNotFound:              "not_found_error",
	http.StatusMethodNotAllowed:      "invalid_request_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusUnsupportedMediaType:  "invalid_request_error",
	http.StatusBadRequest:            "invalid_request_error",
}

// errorFor turns any error a handler returns into the error to answer.
func errorFor(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		typ, ok := echoStatus[he.Code]
		if !ok {
			typ = "api_error"
		}
		msg := http.StatusText(he.Code)
		if he.Code == http.StatusRequestEntityTooLarge {
			msg = "request body too large: the limit is " + bodyLimit
		}
		if he.Code == http.StatusNotFound {
			msg = "no such route; the API lives under /v1/memory_stores"
		}
		return &apiError{status: he.Code, typ: typ, message: msg}
	}
	// By gitstore.ErrorKind, as the CLI: an ErrNoGit that no *gitstore.Error wraps is a 501
	// as well, with its own text (it says what needed git). Other errors show only the
	// message of their *gitstore.Error, never a cause's text.
	kind := gitstore.ErrorKind(err)
	if m, ok := kindStatus[kind]; ok {
		ae := &apiError{status: m.status, typ: m.typ}
		var ge *gitstore.Error
		switch {
		case errors.As(err, &ge) && ge.Kind == kind:
			ae.message, ae.rule = ge.Message, ge.Rule
			if kind == gitstore.KindPathConflict {
				ae.conflictingID, ae.conflictingPath = ge.ConflictingMemoryID, ge.ConflictingPath
			}
			return ae
		case errors.Is(err, gitstore.ErrNoGit):
			ae.message = err.Error()
			return ae
		}
	}
	return &apiError{status: http.StatusInternalServerError, typ: "api_error", message: "internal error"}
}

// handleError writes an error in the SDKs' envelope. Deterministic conflicts say
// x-should-retry: false, or the SDKs would send them twice more. Internal errors are
// logged, never shown.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	// Any error of a full disk, whichever write met it, is a storage error.
	err = gitstore.NoSpace(err, s.data.Dir())
	ae := errorFor(err)
	var he *echo.HTTPError
	if path := c.Request().URL.Path; errors.As(err, &he) && he.Code == http.StatusNotFound && len(path) > 1 && strings.HasSuffix(path, "/") {
		// A pasted URL with a trailing slash: say so, as "lives under /v1/memory_stores"
		// alone reads as if the path were right.
		ae = &apiError{status: ae.status, typ: ae.typ, message: fmt.Sprintf("no such route: %s ends in a slash, which no route of the API has; try %s", path, strings.TrimRight(path, "/"))}
	}
	rid := requestID(c)
	if ae.status == http.StatusInternalServerError || ae.status == http.StatusInsufficientStorage {
		s.log.Error("request failed", "request_id", rid, "method", c.Request().Method, "path", c.Request().URL.Path, "err", err, "cause", errors.Unwrap(err))
	}
	if ae.status == http.StatusInternalServerError {
		ae = &apiError{status: ae.status, typ: ae.typ, message: fmt.Sprintf("%s; the server's log has the details of request %s", ae.message, rid)}
	}
	if ae.status == http.StatusUnauthorized {
		closeAfter(c) // a client without a valid key keeps no connection open
	}
	if ae.retryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	// Deterministic conflicts, and a full disk, which an immediate retry does not cure.
	switch ae.status {
	case http.StatusConflict, http.StatusNotImplemented, http.StatusInsufficientStorage:
		c.Response().Header().Set("x-should-retry", "false")
	case http.StatusServiceUnavailable:
		c.Response().Header().Set("x-should-retry", "true")
		if c.Response().Header().Get("Retry-After") == "" {
			c.Response().Header().Set("Retry-After", "1")
		}
	}
	body := errorJSON{Type: ae.typ, Message: ae.message, ConflictingMemoryID: ae.conflictingID, ConflictingPath: ae.conflictingPath, Rule: string(ae.rule)}
	if err := c.JSON(ae.status, envelopeJSON{Type: "error", Error: body, RequestID: rid}); err != nil {
		s.log.Warn("write error response", "request_id", rid, "err", err)
	}
}
