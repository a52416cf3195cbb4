package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gitmem/gitmem/internal/buildinfo"
	"github.com/gitmem/gitmem/tooladapter"
)

// SessionHeader names the session a caller writes for (httpapi.SessionHeader).
const SessionHeader = "x-gitmem-session-id"

// ProposalHeader names the proposal that a write went to (httpapi.ProposalHeader).
const ProposalHeader = "x-gitmem-proposal"

// ProposalReadsHeader says whether the caller's reads see the proposal that a write went to
// (httpapi.ProposalReadsHeader).
const ProposalReadsHeader = "x-gitmem-proposal-reads"

// UnchangedHeader says that a memory write made no version (httpapi.UnchangedHeader).
const UnchangedHeader = "x-gitmem-unchanged"

// IncludeVersionHeader asks for the version a memory write made in its answer
// (httpapi.IncludeVersionHeader).
const IncludeVersionHeader = "x-gitmem-include-version"

// ToolStore attaches a store to a session's tools on the server.
type ToolStore struct {
	ID     string
	Access tooladapter.Access
	// Prompt says what the store is for in this session; it goes into the instructions.
	Prompt string
}

// Tools is the memory tool and the agent tools of one session, run by the server: an MCP
// session with its /mcp, the tools bound to the attached stores as a local session binds
// them, and every write a version by the session's session_actor (and the key).
type Tools struct {
	*mcp.ClientSession
	endpoint string
	tr       *toolsTransport
}

// ConnectTools connects to the server's /mcp with stores attached, as the session
// sessionID (sesn_…). The instructions of the session (InitializeResult) are its system
// prompt, the stores' prompts included.
func (c *Client) ConnectTools(ctx context.Context, stores []ToolStore, sessionID string) (*Tools, error) {
	q := url.Values{}
	for _, s := range stores {
		v := s.ID + ":" + string(s.Access)
		if s.Prompt != "" {
			v += ":" + s.Prompt
		}
		q.Add("store", v)
	}
	endpoint := c.base + "/mcp?" + q.Encode()
	header := http.Header{SessionHeader: {sessionID}}
	if c.key != "" {
		header.Set("x-api-key", c.key)
	}
	tr := &toolsTransport{c: c, header: header, next: c.http.Transport}
	hc := &http.Client{Timeout: c.http.Timeout, Transport: tr}
	mc := mcp.NewClient(&mcp.Implementation{Name: "gitmem", Version: buildinfo.Read().String()}, nil)
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, tr.explain(fmt.Errorf("gitmem server %s: connect to /mcp: %w", c.base, err))
	}
	return &Tools{ClientSession: cs, endpoint: c.base + "/mcp", tr: tr}, nil
}

// Call runs the tool name on the raw JSON input of a tool call and returns its result, as
// tooladapter.Session.Answer would here. The error is for a call the server did not
// answer.
func (t *Tools) Call(ctx context.Context, name string, input json.RawMessage) (tooladapter.Result, error) {
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}") // a tool called without arguments
	}
	res, err := t.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: input})
	if err != nil {
		return tooladapter.Result{}, t.tr.explain(fmt.Errorf("%s: tool %s: %w", t.endpoint, name, err))
	}
	var out tooladapter.Result
	for _, c := range res.Content {
		if text, ok := c.(*mcp.TextContent); ok {
			out.Content += text.Text
		}
	}
	out.IsError = res.IsError
	return out, nil
}

// toolsTransport adds the key and the session to every request, and keeps the error that
// the server answered last: the MCP client reports only the status, and the answer says
// what to do (a key to set, a store not found).
type toolsTransport struct {
	c      *Client
	header http.Header
	next   http.RoundTripper

	mu   sync.Mutex
	last error
}

func (t *toolsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	resp, err := t.next.RoundTrip(r)
	// 405 is the answer to the stream that the client asks for and a server without
	// sessions does not keep.
	if err != nil || resp.StatusCode < 400 || resp.StatusCode == http.StatusMethodNotAllowed {
		return resp, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	t.mu.Lock()
	t.last = t.c.answerError(resp.StatusCode, raw)
	t.mu.Unlock()
	return resp, nil
}

// explain returns the error that the server answered, if there was one, for err.
func (t *toolsTransport) explain(err error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		return err
	}
	last := t.last
	t.last = nil
	return last
}
