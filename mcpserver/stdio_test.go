package mcpserver

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gitmem/gitmem/internal/testlog"
)

// serveLines runs a real SDK server, with a tool "slow" that takes 300 ms, over the stdio
// transport on input, and returns what it wrote once stdin's end was drained.
func serveLines(t *testing.T, input string) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	type none struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	out := &testlog.Buffer{}
	if err := srv.Run(context.Background(), newDrainingTransport(io.NopCloser(strings.NewReader(input)), nopCloser{out})); err != nil {
		t.Fatalf("the session ended with %v; it wrote:\n%s", err, out)
	}
	return out.String()
}

const (
	init0326 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
`
	lastPing = `{"jsonrpc":"2.0","id":"last","method":"ping"}
`
)

// TestStdioRefusals: the lines that the SDK would end the session for, or answer wrongly,
// are answered here, and the session goes on to answer the last ping.
func TestStdioRefusals(t *testing.T) {
	nested := func(n int) string {
		return `[{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}}}]\n"
	}
	for _, c := range []struct {
		name, input string
		want        []string // in what the session wrote
		not         []string
	}{{
		// The SDK keeps the version of the first initialize and refuses the second.
		name: "a second initialize",
		input: init0326 + `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
[{"jsonrpc":"2.0","id":3,"method":"ping"}]
`,
		want: []string{`[{"jsonrpc":"2.0","id":3,"result":{}}]`},
		not:  []string{"batches are not part of MCP"},
	}, {
		// The SDK fails an initialize whose version is not a string, and sets no version.
		name: "an initialize the SDK fails",
		input: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":7}}
[{"jsonrpc":"2.0","id":3,"method":"ping"}]
`,
		want: []string{`"id":3,"result"`},
		not:  []string{"batches are not part of MCP"},
	}, {
		// An answer's id is one of the server's calls, not the client's.
		name:  "a malformed answer",
		input: init0326 + `{"id":9,"result":{}}` + "\n",
		want:  []string{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600`},
		not:   []string{`"id":9`},
	}, {
		name:  "a batch at the SDK's depth",
		input: init0326 + nested(996),
		want:  []string{`[{"jsonrpc":"2.0","id":5,"result":{}}]`},
	}, {
		name:  "a batch past the SDK's depth",
		input: init0326 + nested(997),
		want:  []string{"nests deeper than 1000 levels"},
		not:   []string{`"id":5,"result"`},
	}, {
		name: "a batch with the id of a call not answered",
		input: init0326 + `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}}}]
[{"jsonrpc":"2.0","id":7,"method":"ping"}]
`,
		want: []string{"the id 7 of another call not answered yet", `"text":"done"`},
	}} {
		t.Run(c.name, func(t *testing.T) {
			out := serveLines(t, c.input+lastPing)
			for _, w := range append(c.want, `"id":"last","result"`) {
				if !strings.Contains(out, w) {
					t.Errorf("no %s in:\n%s", w, out)
				}
			}
			for _, n := range c.not {
				if strings.Contains(out, n) {
					t.Errorf("%s in:\n%s", n, out)
				}
			}
		})
	}
}
