package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// NewPooled is New with a connection pool for conns concurrent callers: the default keeps
// two idle connections per host, and a load of more callers would open and close one per
// request.
func NewPooled(baseURL, key string, conns int) *Client {
	c := New(baseURL, key)
	tr := newTransport()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = conns, conns, conns
	c.http = &http.Client{Timeout: time.Minute, Transport: tr}
	return c
}

// CallTool calls one of the store's tools (the memory tool, "memory", or an agent tool) with
// a raw JSON input, as POST .../tools/{name} does: a call that its input fails is still an
// answer, with isError set.
func (s *Store) CallTool(ctx context.Context, name string, input json.RawMessage) (content string, isError bool, err error) {
	var w struct {
		Content string `json:"content"`
		IsError bool   `json:"is_error"`
	}
	if err := s.c.do(ctx, http.MethodPost, s.path("tools", name), nil, input, &w); err != nil {
		return "", false, err
	}
	return w.Content, w.IsError, nil
}

// Call sends one request to the API (body as JSON, if not nil) and decodes its answer into
// out, for routes that have no method of their own here.
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
	return c.do(ctx, method, path, nil, body, out)
}
