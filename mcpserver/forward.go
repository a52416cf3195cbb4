package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Forward serves on t the tools of remote, an MCP session with a running gitmem server's
// /mcp?store=…, forwarding each call to it: so an MCP client that starts "gitmem mcp" as a
// subprocess works while the server holds the data directory. Instructions and tools are
// the remote server's, read once at start; a call that the remote refuses is answered with
// its error.
func Forward(ctx context.Context, remote *mcp.ClientSession, t mcp.Transport, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	tools, err := remote.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list the tools of the server: %w", err)
	}
	var instructions string
	if init := remote.InitializeResult(); init != nil {
		instructions = init.Instructions
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "gitmem memory", Version: version()}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       slog.New(debugHandler{log.Handler()}),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, tool := range tools.Tools {
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args json.RawMessage
			if req.Params != nil {
				args = req.Params.Arguments
			}
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			return remote.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: args})
		})
	}
	return srv.Run(ctx, t)
}
