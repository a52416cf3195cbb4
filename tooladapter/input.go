package tooladapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gitmem/gitmem/gitstore"
)

// Result is what a tool answers: the text of the tool_result block, and whether it
// reports an error.
type Result struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

// finish turns a tool's outcome into its Result. Errors the model caused become an
// "Error: ..." result; any other error is internal and is returned as is, for the caller
// to log and answer as a failure of the server, never shown to the model verbatim.
// Every answer, of every tool on every surface, is bounded here (see capAnswer).
func finish(out string, err error) (Result, error) {
	if err == nil {
		return Result{Content: capAnswer(out)}, nil
	}
	var te *toolError
	if errors.As(err, &te) {
		return Result{Content: capAnswer("Error: " + te.msg), IsError: true}, nil
	}
	var se *gitstore.Error
	if errors.As(err, &se) && se.Kind != gitstore.KindInternal {
		return Result{Content: capAnswer("Error: " + se.Message), IsError: true}, nil
	}
	return Result{}, err
}

// capAnswer cuts an answer longer than MaxAnswerChars characters, and says so at its end.
// Answers within the bound are left as they are (byte for byte the reference's, where the
// memory tool follows it).
func capAnswer(s string) string {
	if len(s) <= MaxAnswerChars || utf8.RuneCountInString(s) <= MaxAnswerChars {
		return s
	}
	note := fmt.Sprintf("\n\n[This answer is %d characters long and is cut here: a tool answer shows at most %d characters.]",
		utf8.RuneCountInString(s), MaxAnswerChars)
	return truncateRunes(s, MaxAnswerChars-utf8.RuneCountInString(note)) + note
}

// input is a tool call's input object, read field by field so that a missing field and a
// field of the wrong type each get an error that names it.
type input struct {
	tool   string // "the view command", "memory_read"
	fields map[string]json.RawMessage
}

// parseInput reads the input of a tool. Text that JSON decoding would change (bytes that
// are not UTF-8, halves of UTF-16 surrogate pairs) is refused. An agent tool refuses fields
// its input schema does not have; the memory tool ignores them, as the reference
// implementation does.
func parseInput(tool string, raw []byte) (input, error) {
	in := input{tool: tool}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return in, toolErrorf("The input of %s must be a JSON object", tool)
	}
	if err := gitstore.ValidateJSONText("the input of "+tool, raw); err != nil {
		return in, toolErrorf("%s", storeMessage(err))
	}
	if err := json.Unmarshal(raw, &in.fields); err != nil {
		return in, toolErrorf("The input of %s is not valid JSON: %v", tool, err)
	}
	if props := toolFields()[tool]; props != nil {
		for k := range in.fields {
			if !slices.Contains(props, k) {
				return in, toolErrorf("Unknown parameter %q for %s; it takes: %s", k, tool, strings.Join(props, ", "))
			}
		}
	}
	return in, nil
}

// toolFields is the properties of each agent tool's input schema, sorted, by tool name.
var toolFields = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, t := range Tools() {
		if t.Name == MemoryToolName {
			continue
		}
		props, _ := t.InputSchema["properties"].(map[string]any)
		m[t.Name] = slices.Sorted(maps.Keys(props))
	}
	return m
})

func (in input) has(name string) bool {
	v, ok := in.fields[name]
	return ok && !bytes.Equal(v, []byte("null"))
}

func (in input) missing(name string) error {
	return toolErrorf("Missing required parameter %q for %s", name, in.tool)
}

func (in input) wrongType(name, want string) error {
	return toolErrorf("Parameter %q of %s must be %s", name, in.tool, want)
}

// str returns a required string field.
func (in input) str(name string) (string, error) {
	if !in.has(name) {
		return "", in.missing(name)
	}
	return in.optStr(name, "")
}

// optStr returns a string field, or def if it is absent.
func (in input) optStr(name, def string) (string, error) {
	if !in.has(name) {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(in.fields[name], &s); err != nil {
		return "", in.wrongType(name, "a string")
	}
	return s, nil
}

// integer returns a required integer field.
func (in input) integer(name string) (int, error) {
	if !in.has(name) {
		return 0, in.missing(name)
	}
	return in.optInt(name, 0)
}

// optInt returns an integer field, or def if it is absent. 3.0 is an integer; 3.5 is not.
func (in input) optInt(name string, def int) (int, error) {
	if !in.has(name) {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(in.fields[name], &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<40 {
		return 0, in.wrongType(name, "an integer")
	}
	return int(f), nil
}

// optBool returns a boolean field, or false if it is absent.
func (in input) optBool(name string) (bool, error) {
	if !in.has(name) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(in.fields[name], &b); err != nil {
		return false, in.wrongType(name, "true or false")
	}
	return b, nil
}

// optInts returns an array of integers, or nil if it is absent.
func (in input) optInts(name string) ([]int, error) {
	if !in.has(name) {
		return nil, nil
	}
	var fs []float64
	if err := json.Unmarshal(in.fields[name], &fs); err != nil {
		return nil, in.wrongType(name, "an array of integers")
	}
	out := make([]int, len(fs))
	for i, f := range fs {
		if f != math.Trunc(f) || math.Abs(f) > 1<<40 {
			return nil, in.wrongType(name, "an array of integers")
		}
		out[i] = int(f)
	}
	return out, nil
}

// MaxAnswerChars bounds the text of every tool answer to a model: view's MaxViewChars and
// room for its header and notes.
const MaxAnswerChars = MaxViewChars + 4000
