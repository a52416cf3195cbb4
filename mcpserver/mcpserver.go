// Package mcpserver serves the tools of a tooladapter.Session as an MCP server, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): the memory tool and the seven
// agent tools, each with its description and JSON input schema, and the session's system
// prompt as the server's instructions. "gitmem mcp" runs it over stdio; "gitmem serve"
// serves it over streamable HTTP at /mcp (package httpapi).
package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gitmem/gitmem/internal/buildinfo"
	"github.com/gitmem/gitmem/tooladapter"
)

// Name is the server's name in the MCP initialize result.
const Name = "gitmem"

// readOnlyTools change nothing; MCP clients may call them with less ceremony.
var readOnlyTools = map[string]bool{
	tooladapter.ListTool: true, tooladapter.SearchTool: true, tooladapter.ReadTool: true,
	tooladapter.ChangesTool: true,
}

// New returns an MCP server whose tools are sess's tools. Each call answers one text
// content, the tool's result, with IsError set as the tool set it. A call that fails inside
// gitmem is logged to log and answered as an error result that does not show the cause.
// The SDK's own logs go to log at debug level.
func New(sess *tooladapter.Session, log *slog.Logger) *mcp.Server {
	if log == nil {
		log = slog.Default()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "gitmem memory", Version: version()}, &mcp.ServerOptions{
		Instructions: sess.SystemPrompt(),
		Logger:       slog.New(debugHandler{log.Handler()}),
		// The tools never change while a session lasts, and the server sends no log
		// messages: advertise tools only (the SDK's default would add logging).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, t := range tooladapter.Tools() {
		tool := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnlyTools[t.Name], OpenWorldHint: new(false)}}
		srv.AddTool(tool, handler(sess, t.Name, log))
	}
	return srv
}

func handler(sess *tooladapter.Session, name string, log *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}") // a tool called without arguments
		}
		res := sess.Answer(ctx, name, args, log)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}, nil
	}
}

// version is gitmem's module version as the build recorded it.
func version() string { return buildinfo.Read().String() }

// debugHandler logs every record at debug level: the SDK logs each connection and session
// at info, which is noise next to gitmem's own logs.
type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{d.h.WithAttrs(attrs)}
}

func (d debugHandler) WithGroup(name string) slog.Handler { return debugHandler{d.h.WithGroup(name)} }
