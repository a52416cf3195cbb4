package tooladapter

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// Tool is a tool's definition as an agent sees it: its name, what it does, and the JSON
// schema of its input.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

// The agent tools' names.
const (
	ListTool    = "memory_list"
	SearchTool  = "memory_search"
	ReadTool    = "memory_read"
	WriteTool   = "memory_write"
	EditTool    = "memory_edit"
	DeleteTool  = "memory_delete"
	ChangesTool = "memory_changes"
)

func object(required []string, props map[string]any) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

const pathDesc = "Path of the memory, under /memories/ (for example /memories/projects/acme.md)."

var viewRangeSchema = map[string]any{
	"type": "array", "items": map[string]any{"type": "integer"}, "minItems": 2, "maxItems": 2,
	"description": "Optional [start, end] line numbers, 1-based and inclusive, to read part of the memory; end -1 means to the last line.",
}

// Tools returns the definitions of every tool a Session answers: the memory tool first
// (for clients that take it as a plain tool; the Messages API declares it by its type,
// memory_20250818), then the seven agent tools.
func Tools() []Tool {
	return []Tool{
		{Name: MemoryToolName,
			Description: "Your persistent memory: a folder /memories that keeps files across conversations. " +
				"Commands: view (a folder two levels deep, or a file with line numbers), create (a new file), " +
				"str_replace (replace one unique piece of text), insert (text after a line; 0 = top), delete and rename " +
				"(files or folders). Check /memories before a task, and record progress and what you learn as you go.",
			InputSchema: object([]string{"command"}, map[string]any{
				"command":     map[string]any{"type": "string", "enum": []string{"view", "create", "str_replace", "insert", "delete", "rename"}},
				"path":        str("A path under /memories, for every command but rename."),
				"view_range":  viewRangeSchema,
				"file_text":   str("create: the content of the new file."),
				"old_str":     str("str_replace: the exact text to replace; it must occur exactly once."),
				"new_str":     str("str_replace: the text that replaces it."),
				"insert_line": map[string]any{"type": "integer", "description": "insert: the line after which to insert (0 = at the top)."},
				"insert_text": str("insert: the text to insert."),
				"old_path":    str("rename: the file or folder to move."),
				"new_path":    str("rename: where it goes."),
			})},
		{Name: ListTool,
			Description: "List the memories in a folder of your memory under /memories/, with each one's size and the time it last " +
				"changed. Start here to see what you already know before you read or write. depth 1 lists only the folder's own " +
				"entries and shows each subfolder as one line ending in /; depth 0 (the default) lists every memory below.",
			InputSchema: object(nil, map[string]any{
				"path_prefix": str("The folder to list, such as /memories/projects/. Default /memories/, everything."),
				"depth":       map[string]any{"type": "integer", "minimum": 0, "description": "0 for every memory below (default), 1 for the folder's direct entries."},
				"limit":       map[string]any{"type": "integer", "minimum": 1, "maximum": maxListLimit, "description": "At most this many lines (default 200)."},
			})},
		{Name: SearchTool,
			Description: "Search the content and paths of your memories by meaning-bearing words, ranked best first. Each hit gives " +
				"the memory's path and its matching lines with line numbers, so you can read just that part with memory_read and " +
				"view_range. Query syntax: plain words (all should match, typos are tolerated), \"an exact phrase\", prefix*, " +
				"-excluded. Use path_prefix to search one folder.",
			InputSchema: object([]string{"query"}, map[string]any{
				"query":       str(fmt.Sprintf("What to look for: at most %d bytes, %d words and %d prefix* terms.", search.MaxQueryBytes, search.MaxQueryWords, search.MaxPrefixes)),
				"path_prefix": str("Only search below this folder, such as /memories/projects/."),
				"limit":       map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "description": "At most this many memories (default 10)."},
			})},
		{Name: ReadTool,
			Description: "Read a memory: its content with line numbers (a number, a tab, the line). Long memories are shown in part; " +
				"pass view_range to read the rest.",
			InputSchema: object([]string{"path"}, map[string]any{"path": str(pathDesc), "view_range": viewRangeSchema})},
		{Name: WriteTool,
			Description: "Write a memory: create it, or replace its whole content if it exists. Folders are made as needed. Use " +
				"memory_edit to change part of a memory you have read. At most 100 KB of UTF-8 text.",
			InputSchema: object([]string{"path", "content"}, map[string]any{"path": str(pathDesc), "content": str("The full content of the memory.")})},
		{Name: EditTool,
			Description: "Edit a memory in place: replace old_string, copied exactly from the memory (without the line numbers " +
				"that memory_read shows), by new_string. old_string must occur exactly once, unless replace_all is true.",
			InputSchema: object([]string{"path", "old_string", "new_string"}, map[string]any{
				"path": str(pathDesc), "old_string": str("The exact text to replace."), "new_string": str("The text that replaces it."),
				"replace_all": map[string]any{"type": "boolean", "description": "Replace every occurrence instead of exactly one (default false)."},
			})},
		{Name: DeleteTool,
			Description: "Delete a memory, or a folder with every memory in it. Deleted memories stay in the store's history and " +
				"can be restored by a person, but are gone for you.",
			InputSchema: object([]string{"path"}, map[string]any{"path": str("The memory or folder to delete, under /memories/.")})},
		{Name: ChangesTool,
			Description: "See what changed in your memory: memories created, modified and deleted, by whom (other agents, people, " +
				"you) and when, oldest first. The answer ends with a cursor: pass it as since next time to get only what changed " +
				"after it. Without since, the last 24 hours. Use it to notice what others learned before you rely on what you " +
				"read earlier; with wait_seconds it waits for the next change.",
			InputSchema: object(nil, map[string]any{
				"since":        str("The cursor line of an earlier memory_changes answer (evc_...), or a time: " + gitstore.TimeFormHint + ". Default: 24 hours ago."),
				"limit":        map[string]any{"type": "integer", "minimum": 1, "maximum": maxChangesLimit, "description": fmt.Sprintf("At most this many changes (default %d).", defaultChangesLimit)},
				"wait_seconds": map[string]any{"type": "integer", "minimum": 0, "maximum": maxChangesWait, "description": "If nothing changed yet, wait up to this many seconds for a change (default 0: answer at once)."},
			})},
	}
}

// Call runs the tool with the given name on the raw JSON input of a tool call. For an
// unknown name it returns an error for which IsUnknownTool is true; any other error is
// internal. Answer is the form for callers that must answer the model whatever happens.
func (s *Session) Call(ctx context.Context, name string, raw []byte) (Result, error) {
	var out string
	var err error
	switch name {
	case MemoryToolName:
		out, err = s.memory(ctx, raw)
	case ListTool:
		out, err = s.list(ctx, raw)
	case SearchTool:
		out, err = s.searchTool(ctx, raw)
	case ReadTool:
		out, err = s.read(ctx, raw)
	case WriteTool:
		out, err = s.write(ctx, raw)
	case EditTool:
		out, err = s.editTool(ctx, raw)
	case DeleteTool:
		out, err = s.deleteTool(ctx, raw)
	case ChangesTool:
		out, err = s.changes(ctx, raw)
	default:
		return Result{}, notFoundTool(name)
	}
	return finish(out, err)
}

// Answer runs a tool as Call does, for a caller that must answer the model whatever
// happens (an agent loop, an MCP server): an unknown tool is an error result, and an
// internal failure is logged to log and answered as an error result that does not show
// its cause.
func (s *Session) Answer(ctx context.Context, name string, raw []byte, log *slog.Logger) Result {
	res, err := s.Call(ctx, name, raw)
	switch {
	case IsUnknownTool(err):
		return Result{Content: "Error: " + err.Error(), IsError: true}
	case err != nil:
		log.ErrorContext(ctx, "tool call failed", "tool", name, "session", s.id, "err", err)
		return Result{Content: internalMessage, IsError: true}
	}
	return res
}

// internalMessage is what the model reads when a tool failed inside gitmem.
const internalMessage = "Error: gitmem could not complete this tool call because of an internal error; try again"

func notFoundTool(name string) error {
	return &unknownToolError{name: name}
}

// unknownToolError is the error of Call for a tool name it does not know.
type unknownToolError struct{ name string }

func (e *unknownToolError) Error() string {
	return fmt.Sprintf("there is no tool named %q; the tools are memory, memory_list, memory_search, memory_read, memory_write, memory_edit, memory_delete and memory_changes", e.name)
}

// IsUnknownTool tells whether err is Call's error for a tool name it does not know.
func IsUnknownTool(err error) bool {
	_, ok := err.(*unknownToolError)
	return ok
}
