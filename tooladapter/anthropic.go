package tooladapter

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
)

// HandleMemoryCommand runs a memory tool command as anthropic-sdk-go parsed it from a
// tool_use block, and returns the tool_result block for toolUseID. The command's raw JSON
// is used when it has one (it was unmarshalled), so that a missing field is reported as
// missing rather than read as empty.
func (s *Session) HandleMemoryCommand(ctx context.Context, toolUseID string, cmd anthropic.BetaMemoryTool20250818CommandUnion) anthropic.BetaToolResultBlockParam {
	raw := []byte(cmd.RawJSON())
	if len(raw) == 0 {
		raw = commandJSON(cmd)
	}
	return s.ToolResult(ctx, toolUseID, MemoryToolName, raw)
}

// ToolResult runs any tool of the session on the raw input of a tool_use block and returns
// its tool_result block. An internal failure is logged with slog's default logger and
// answered as an error result.
func (s *Session) ToolResult(ctx context.Context, toolUseID, name string, input []byte) anthropic.BetaToolResultBlockParam {
	res := s.Answer(ctx, name, input, slog.Default())
	return anthropic.NewBetaToolResultTextBlockParam(toolUseID, res.Content, res.IsError)
}

// commandJSON rebuilds the input of a command that was built in Go rather than parsed:
// the fields its command takes.
func commandJSON(cmd anthropic.BetaMemoryTool20250818CommandUnion) []byte {
	m := map[string]any{"command": cmd.Command}
	switch cmd.Command {
	case "view":
		m["path"] = cmd.Path
		if cmd.ViewRange != nil {
			m["view_range"] = cmd.ViewRange
		}
	case "create":
		m["path"], m["file_text"] = cmd.Path, cmd.FileText
	case "str_replace":
		m["path"], m["old_str"], m["new_str"] = cmd.Path, cmd.OldStr, cmd.NewStr
	case "insert":
		m["path"], m["insert_line"], m["insert_text"] = cmd.Path, cmd.InsertLine, cmd.InsertText
	case "delete":
		m["path"] = cmd.Path
	case "rename":
		m["old_path"], m["new_path"] = cmd.OldPath, cmd.NewPath
	}
	raw, _ := json.Marshal(m)
	return raw
}

// BetaTools returns the seven agent tools bound to the session as values for
// anthropic-sdk-go's tool runner (client.Beta.Messages.NewToolRunner).
func (s *Session) BetaTools() []anthropic.BetaTool {
	var out []anthropic.BetaTool
	for _, t := range Tools() {
		if t.Name != MemoryToolName {
			out = append(out, betaTool{s: s, def: t})
		}
	}
	return out
}

// BetaToolParams returns the agent tools' definitions for a Messages API request.
func BetaToolParams() []anthropic.BetaToolUnionParam {
	var out []anthropic.BetaToolUnionParam
	for _, t := range Tools() {
		if t.Name != MemoryToolName {
			out = append(out, anthropic.BetaToolUnionParam{OfTool: &anthropic.BetaToolParam{
				Name: t.Name, Description: anthropic.String(t.Description), InputSchema: inputSchema(t)}})
		}
	}
	return out
}

func inputSchema(t Tool) anthropic.BetaToolInputSchemaParam {
	p := anthropic.BetaToolInputSchemaParam{Properties: t.InputSchema["properties"], ExtraFields: map[string]any{"additionalProperties": false}}
	if req, ok := t.InputSchema["required"].([]string); ok {
		p.Required = req
	}
	return p
}

// betaTool is one agent tool as anthropic.BetaTool.
type betaTool struct {
	s   *Session
	def Tool
}

func (t betaTool) Name() string        { return t.def.Name }
func (t betaTool) Description() string { return t.def.Description }
func (t betaTool) InputSchema() anthropic.BetaToolInputSchemaParam {
	return inputSchema(t.def)
}

// Execute runs the tool. A tool error is returned as an error, which the runner sends to
// the model as "Error: " + its message with is_error set.
func (t betaTool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	res, err := t.s.Call(ctx, t.def.Name, input)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, errors.New(strings.TrimPrefix(res.Content, "Error: "))
	}
	return []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: res.Content}}}, nil
}
