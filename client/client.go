// Package client talks to a running gitmem server over its HTTP API and answers in
// gitstore's types, so that the CLI prints the same output whether it opened the data
// directory itself or a server holds it (here or elsewhere). Errors come back as
// *gitstore.Error of the kind the server answered, or as ErrAuth.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// ErrAuth is the error when the server refuses the request's key (or that it has none).
var ErrAuth = errors.New("the server refused the API key")

// authError is an ErrAuth that says what to do.
type authError struct{ msg string }

func (e *authError) Error() string        { return e.msg }
func (e *authError) Is(target error) bool { return target == ErrAuth }

// ErrUnreachable is the error when the server does not answer at all.
var ErrUnreachable = errors.New("the server does not answer")

// unreachableError is an ErrUnreachable that names the server and says why, once.
type unreachableError struct {
	base string
	err  error // the transport's
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("gitmem server %s does not answer: %v", e.base, e.err)
}
func (e *unreachableError) Unwrap() []error { return []error{e.err, ErrUnreachable} }

// Client is a gitmem server at a base URL, with an API key (or none).
type Client struct {
	base    string
	key     string
	session string // sent as SessionHeader, if set
	http    *http.Client
}

// New returns a client of the server at baseURL (http://host:port), sending key as
// x-api-key when it is not empty.
func New(baseURL, key string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), key: key, http: &http.Client{Timeout: 5 * time.Minute, Transport: newTransport()}}
}

// idleConnTimeout is how long the client keeps a connection that it is not using: less than
// the server's default (a minute, httpapi.DefaultLimits), so that the client closes it
// first. Go's default is 90 s, and a request sent on a connection as the server closed it
// failed with EOF (a POST is not sent again): the update workload of `gitmem bench`, which
// came a minute after its connections' last requests, failed so.
const idleConnTimeout = 30 * time.Second

// newTransport returns Go's default transport with the client's idle timeout.
func newTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.IdleConnTimeout = idleConnTimeout
	return tr
}

// WithSession returns a client of the same server whose requests are made for the session
// id (sesn_…): the server records their writes as versions by that session (and the key).
func (c *Client) WithSession(id string) *Client {
	cp := *c
	cp.session = id
	return &cp
}

// HasKey tells whether the client sends an API key.
func (c *Client) HasKey() bool { return c.key != "" }

// Session is the session the client's requests are made for ("" for none).
func (c *Client) Session() string { return c.session }

// URL is the server's base URL.
func (c *Client) URL() string { return c.base }

// maxAnswer bounds what the client reads of one answer: a page of 1,000 memories with their
// metadata, or one memory of the largest size, fits easily.
const maxAnswer = 64 << 20

// do sends one request and decodes a 2xx answer's JSON into out (if out is not nil).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	_, err := c.doHeader(ctx, method, path, q, body, out, nil)
	return err
}

// doHeader is do with the request's headers extra added, and returns the answer's header.
func (c *Client) doHeader(ctx context.Context, method, path string, q url.Values, body, out any, extra http.Header) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("gitmem server %s: %w", c.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("x-api-key", c.key)
	}
	if c.session != "" {
		req.Header.Set(SessionHeader, c.session)
	}
	for k, v := range extra {
		req.Header[k] = slices.Clone(v) // extra may be shared (includeVersion)
	}
	resp, err := c.http.Do(req)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("gitmem server %s: %w", c.base, ctx.Err()) // the caller gave up, not the server
	}
	if err != nil {
		return nil, &unreachableError{c.base, err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("gitmem server %s: read the answer: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.Header, c.answerError(resp.StatusCode, raw)
	}
	if out == nil {
		return resp.Header, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return resp.Header, fmt.Errorf("gitmem server %s: unexpected answer to %s %s: %w", c.base, method, path, err)
	}
	return resp.Header, nil
}

// kindOf is the gitstore kind of an error answer, by the error type the server names.
var kindOf = map[string]gitstore.Kind{
	"invalid_request_error":            gitstore.KindInvalid,
	"not_found_error":                  gitstore.KindNotFound,
	"memory_precondition_failed_error": gitstore.KindPreconditionFailed,
	"memory_path_conflict_error":       gitstore.KindPathConflict,
	"conflict_error":                   gitstore.KindConflict,
	"overloaded_error":                 gitstore.KindUnavailable,
	"storage_full_error":               gitstore.KindStorage,
	"request_too_large":                gitstore.KindInvalid,
}

// answerError turns an error answer into the error the store would have returned.
func (c *Client) answerError(status int, raw []byte) error {
	var env struct {
		Error struct {
			Type                string `json:"type"`
			Message             string `json:"message"`
			ConflictingMemoryID string `json:"conflicting_memory_id"`
			ConflictingPath     string `json:"conflicting_path"`
			Rule                string `json:"rule"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &env)
	msg := env.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	switch {
	case status == http.StatusUnauthorized && c.key == "":
		return &authError{fmt.Sprintf("gitmem server %s requires an API key; set GITMEM_API_KEY", c.base)}
	case status == http.StatusUnauthorized:
		return &authError{fmt.Sprintf("gitmem server %s refused the API key: %s (check GITMEM_API_KEY)", c.base, msg)}
	case status == http.StatusForbidden:
		return &authError{fmt.Sprintf("gitmem server %s: %s", c.base, msg)}
	case status == http.StatusNotImplemented:
		return &gitstore.Error{Kind: gitstore.KindUnsupported, Message: msg}
	}
	if k, ok := kindOf[env.Error.Type]; ok {
		return &gitstore.Error{Kind: k, Message: msg, ConflictingMemoryID: env.Error.ConflictingMemoryID,
			ConflictingPath: env.Error.ConflictingPath, Rule: gitstore.Rule(env.Error.Rule)}
	}
	return fmt.Errorf("gitmem server %s answered %d: %s", c.base, status, msg)
}

// Version is the server's version: its module version and VCS revision.
func (c *Client) Version(ctx context.Context) (map[string]string, error) {
	var v map[string]string
	err := c.do(ctx, http.MethodGet, "/v1/version", nil, nil, &v)
	return v, err
}
