package tooladapter

import (
	"maps"
	"strings"
	"testing"
)

const (
	l5  = "Line 1\nLine 2\nLine 3\nLine 4\nLine 5"
	ten = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10"
)

// TestMemoryCommands holds every message of the memory tool: the reference's where gitmem
// keeps them, and gitmem's own where README.md lists a deliberate difference.
func TestMemoryCommands(t *testing.T) {
	const (
		viewHead = "Here's the content of "
		dirHead  = "Here're the files and directories up to 2 levels deep in "
		dirTail  = ", excluding hidden items and node_modules:"
		edited   = "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
	)
	tests := []struct {
		name  string
		files map[string]string
		in    string
		want  string // "Error: ..." for an error result
		after map[string]string
	}{
		{"view file", map[string]string{"a.txt": "Line 1\nLine 2\nLine 3"}, `{"command":"view","path":"/memories/a.txt"}`,
			viewHead + "/memories/a.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLine 3", nil},
		{"view trailing newline", map[string]string{"a.txt": "a\nb\n"}, `{"command":"view","path":"/memories/a.txt"}`,
			viewHead + "/memories/a.txt with line numbers:\n     1\ta\n     2\tb\n     3\t", nil},
		{"view empty file", map[string]string{"e.txt": ""}, `{"command":"view","path":"/memories/e.txt"}`,
			viewHead + "/memories/e.txt with line numbers:\n     1\t", nil},
		{"view range", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[2,4]}`,
			viewHead + "/memories/r.txt with line numbers:\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4", nil},
		{"view range to end", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[4,-1]}`,
			viewHead + "/memories/r.txt with line numbers:\n     4\tLine 4\n     5\tLine 5", nil},
		{"view range from 0", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[0,2]}`,
			viewHead + "/memories/r.txt with line numbers:\n     1\tLine 1\n     2\tLine 2", nil},
		{"view range past end", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[7,9]}`,
			viewHead + "/memories/r.txt with line numbers:\n", nil},
		{"view range clamped", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[4,99]}`,
			viewHead + "/memories/r.txt with line numbers:\n     4\tLine 4\n     5\tLine 5", nil},
		{"view range reversed", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[4,2]}`,
			viewHead + "/memories/r.txt with line numbers:\n", nil},
		{"view range of one number is ignored", map[string]string{"r.txt": "a\nb"}, `{"command":"view","path":"/memories/r.txt","view_range":[2]}`,
			viewHead + "/memories/r.txt with line numbers:\n     1\ta\n     2\tb", nil},
		{"view range negative end", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[1,-3]}`,
			viewHead + "/memories/r.txt with line numbers:\n     1\tLine 1\n     2\tLine 2", nil},
		{"view range not integers", map[string]string{"r.txt": l5}, `{"command":"view","path":"/memories/r.txt","view_range":[1.5,2]}`,
			`Error: Parameter "view_range" of the view command must be an array of integers`, nil},
		{"view missing", nil, `{"command":"view","path":"/memories/nope.txt"}`,
			"Error: The path /memories/nope.txt does not exist. Please provide a valid path.", nil},
		{"view unicode", map[string]string{"u.md": "héllo 世界 🎉\nzweite Zeile"}, `{"command":"view","path":"/memories/u.md"}`,
			viewHead + "/memories/u.md with line numbers:\n     1\théllo 世界 🎉\n     2\tzweite Zeile", nil},
		{"view crlf kept", map[string]string{"c.txt": "a\r\nb\r\n"}, `{"command":"view","path":"/memories/c.txt"}`,
			viewHead + "/memories/c.txt with line numbers:\n     1\ta\r\n     2\tb\r\n     3\t", nil},
		{"view tree", map[string]string{"a.txt": "12345", "notes/b.md": strings.Repeat("x", 1536), "notes/deep/c.md": "c",
			"notes/deep/deeper/d.md": "d", ".hidden": "h", "notes/.secret": "s", "node_modules/pkg.js": "p", "big.bin": strings.Repeat("y", 1280)},
			`{"command":"view","path":"/memories"}`,
			dirHead + "/memories" + dirTail + "\n2.8K\t/memories\n5B\t/memories/a.txt\n1.3K\t/memories/big.bin\n1.5K\t/memories/notes/\n" +
				"1.5K\t/memories/notes/b.md\n2B\t/memories/notes/deep/", nil},
		{"view root with trailing slash", map[string]string{"a.txt": "12345"}, `{"command":"view","path":"/memories/"}`,
			dirHead + "/memories/" + dirTail + "\n5B\t/memories/\n5B\t/memories//a.txt", nil},
		{"view folder", map[string]string{"notes/b.md": "bb"}, `{"command":"view","path":"/memories/notes"}`,
			dirHead + "/memories/notes" + dirTail + "\n2B\t/memories/notes\n2B\t/memories/notes/b.md", nil},
		{"view empty store", nil, `{"command":"view","path":"/memories"}`,
			dirHead + "/memories" + dirTail + "\n0B\t/memories", nil},

		{"create", nil, `{"command":"create","path":"/memories/n.txt","file_text":"Hello, World!"}`,
			"File created successfully at: /memories/n.txt", map[string]string{"n.txt": "Hello, World!"}},
		{"create exists", map[string]string{"n.txt": "old"}, `{"command":"create","path":"/memories/n.txt","file_text":"new"}`,
			"Error: File /memories/n.txt already exists", nil},
		{"create over a folder", map[string]string{"d/n.txt": "old"}, `{"command":"create","path":"/memories/d","file_text":"new"}`,
			"Error: File /memories/d already exists", nil},
		{"create nested", nil, `{"command":"create","path":"/memories/deep/nested/f.txt","file_text":"Nested"}`,
			"File created successfully at: /memories/deep/nested/f.txt", map[string]string{"deep/nested/f.txt": "Nested"}},
		{"create empty", nil, `{"command":"create","path":"/memories/empty.txt","file_text":""}`,
			"File created successfully at: /memories/empty.txt", map[string]string{"empty.txt": ""}},
		{"create root", nil, `{"command":"create","path":"/memories","file_text":"x"}`, "Error: File /memories already exists", nil},
		{"create below a file", map[string]string{"a.txt": "x"}, `{"command":"create","path":"/memories/a.txt/b.txt","file_text":"x"}`,
			"Error: Cannot create /memories/a.txt/b.txt: /memories/a.txt is a file, so it cannot hold other files", nil},
		{"create escape", nil, `{"command":"create","path":"/memories/../../../etc/passwd","file_text":"x"}`,
			"Error: Path /memories/../../../etc/passwd would escape /memories directory", nil},
		{"create sibling escape", nil, `{"command":"create","path":"/memories/../memories_backup/x.txt","file_text":"x"}`,
			"Error: Path /memories/../memories_backup/x.txt would escape /memories directory", nil},
		{"create dotdot inside", nil, `{"command":"create","path":"/memories/a/../b.txt","file_text":"x"}`,
			"Error: Path /memories/a/../b.txt has a .. segment; name the path without it", nil},
		{"create outside", nil, `{"command":"create","path":"/etc/passwd","file_text":"x"}`,
			"Error: Path must start with /memories, got: /etc/passwd", nil},
		{"create relative", nil, `{"command":"create","path":"memories/x.txt","file_text":"x"}`,
			"Error: Path must start with /memories, got: memories/x.txt", nil},
		{"create empty path", nil, `{"command":"create","path":"","file_text":"x"}`,
			"Error: Path must start with /memories, got: ", nil},
		{"create prefix confusion", nil, `{"command":"create","path":"/memoriesX/foo.txt","file_text":"x"}`,
			"Error: Path must be /memories or start with /memories/, got: /memoriesX/foo.txt", nil},
		{"create url-encoded dots", nil, `{"command":"create","path":"/memories/%2e%2e/x.txt","file_text":"x"}`,
			`Error: Path /memories/%2e%2e/x.txt has a URL-encoded dot or separator in "%2e%2e"; paths are not URL-decoded, so name the path plainly`, nil},
		{"create url-encoded slash", nil, `{"command":"create","path":"/memories/a%2Fb.txt","file_text":"x"}`,
			`Error: Path /memories/a%2Fb.txt has a URL-encoded dot or separator in "a%2Fb.txt"; paths are not URL-decoded, so name the path plainly`, nil},
		{"create harmless percent", nil, `{"command":"create","path":"/memories/100%25 sure.md","file_text":"x"}`,
			"File created successfully at: /memories/100%25 sure.md", map[string]string{"100%25 sure.md": "x"}},
		{"create backslash", nil, `{"command":"create","path":"/memories/a\\..\\b","file_text":"x"}`,
			`Error: Path /memories/a\..\b has a backslash (\); folders are separated by /`, nil},
		{"create NUL", nil, `{"command":"create","path":"/memories/a\u0000b","file_text":"x"}`,
			`Error: Invalid path "/memories/a\x00b": path "/a\x00b" has a control character (U+0000) at byte 2`, nil},
		{"create not NFC", nil, `{"command":"create","path":"/memories/cafe\u0301.md","file_text":"x"}`,
			"Error: Invalid path \"/memories/cafe\u0301.md\": path \"/cafe\u0301.md\" is not in Unicode normal form C (NFC); normalize it first", nil},
		{"create reserved", nil, `{"command":"create","path":"/memories/.gitmem/x","file_text":"x"}`,
			`Error: Invalid path "/memories/.gitmem/x": path "/.gitmem/x" is under /.gitmem/, which is reserved for the store's own metadata`, nil},
		{"create double slash", nil, `{"command":"create","path":"/memories//x.txt","file_text":"x"}`,
			"File created successfully at: /memories//x.txt", map[string]string{"x.txt": "x"}},
		{"create unicode", nil, `{"command":"create","path":"/memories/Ünï 世界.md","file_text":"日本語\n"}`,
			"File created successfully at: /memories/Ünï 世界.md", map[string]string{"Ünï 世界.md": "日本語\n"}},
		{"create too large", nil, `{"command":"create","path":"/memories/big.txt","file_text":"` + strings.Repeat("x", 102401) + `"}`,
			"Error: Cannot create /memories/big.txt: content is 102401 bytes; the limit is 102400 bytes", nil},
		{"create missing file_text", nil, `{"command":"create","path":"/memories/a.txt"}`,
			`Error: Missing required parameter "file_text" for the create command`, nil},
		{"create path of wrong type", nil, `{"command":"create","path":7,"file_text":"x"}`,
			`Error: Parameter "path" of the create command must be a string`, nil},

		{"str_replace", map[string]string{"r.txt": "Line 1\nOld Text\nLine 3"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"Old Text","new_str":"New Text"}`,
			edited + "     1\tLine 1\n     2\tNew Text\n     3\tLine 3", map[string]string{"r.txt": "Line 1\nNew Text\nLine 3"}},
		{"str_replace not found", map[string]string{"r.txt": "Hello, World!"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"NotFound","new_str":"x"}`,
			"Error: No replacement was performed, old_str `NotFound` did not appear verbatim in /memories/r.txt.", nil},
		{"str_replace twice", map[string]string{"r.txt": "Hello\nMiddle\nHello"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"Hello","new_str":"Hi"}`,
			"Error: No replacement was performed. Multiple occurrences of old_str `Hello` in lines: 1, 3. Please ensure it is unique", nil},
		{"str_replace twice on one line", map[string]string{"r.txt": "foo foo\nbar"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"foo","new_str":"baz"}`,
			"Error: No replacement was performed. Multiple occurrences of old_str `foo` in lines: 1, 1. Please ensure it is unique", nil},
		{"str_replace multi-line", map[string]string{"r.txt": "a\nb\nc"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"a\nb","new_str":"X"}`,
			edited + "     1\tX\n     2\tc", map[string]string{"r.txt": "X\nc"}},
		{"str_replace removes a line", map[string]string{"r.txt": "keep\ndrop me\nkeep2"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"drop me\n","new_str":""}`,
			edited + "     1\tkeep\n     2\tkeep2", map[string]string{"r.txt": "keep\nkeep2"}},
		{"str_replace last of ten", map[string]string{"r.txt": ten}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"l10","new_str":"L10"}`,
			edited + "     8\tl8\n     9\tl9\n    10\tL10", map[string]string{"r.txt": strings.Replace(ten, "l10", "L10", 1)}},
		{"str_replace middle of ten", map[string]string{"r.txt": ten}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"l5","new_str":"L5a\nL5b\nL5c"}`,
			edited + "     3\tl3\n     4\tl4\n     5\tL5a\n     6\tL5b\n     7\tL5c", map[string]string{"r.txt": strings.Replace(ten, "l5", "L5a\nL5b\nL5c", 1)}},
		{"str_replace literal dollars", map[string]string{"r.txt": "price"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"price","new_str":"$& costs $$5"}`,
			edited + "     1\t$& costs $$5", map[string]string{"r.txt": "$& costs $$5"}},
		{"str_replace empty old_str", map[string]string{"r.txt": "ab"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"","new_str":"X"}`,
			"Error: No replacement was performed: old_str is empty. Give the exact text to replace, as it appears in /memories/r.txt.", nil},
		{"str_replace on a folder", map[string]string{"d/f": "x"}, `{"command":"str_replace","path":"/memories/d","old_str":"a","new_str":"b"}`,
			"Error: The path /memories/d is not a file.", nil},
		{"str_replace on the root", nil, `{"command":"str_replace","path":"/memories","old_str":"a","new_str":"b"}`,
			"Error: The path /memories is not a file.", nil},
		{"str_replace missing file", nil, `{"command":"str_replace","path":"/memories/x","old_str":"a","new_str":"b"}`,
			"Error: The path /memories/x does not exist. Please provide a valid path.", nil},
		{"str_replace missing new_str", map[string]string{"r.txt": "a"}, `{"command":"str_replace","path":"/memories/r.txt","old_str":"a"}`,
			`Error: Missing required parameter "new_str" for the str_replace command`, nil},

		{"insert", map[string]string{"i.txt": "Line 1\nLine 2"}, `{"command":"insert","path":"/memories/i.txt","insert_line":1,"insert_text":"Inserted Line"}`,
			"The file /memories/i.txt has been edited.", map[string]string{"i.txt": "Line 1\nInserted Line\nLine 2"}},
		{"insert at top", map[string]string{"i.txt": "Line 1\nLine 2"}, `{"command":"insert","path":"/memories/i.txt","insert_line":0,"insert_text":"First"}`,
			"The file /memories/i.txt has been edited.", map[string]string{"i.txt": "First\nLine 1\nLine 2"}},
		{"insert at end", map[string]string{"i.txt": "Line 1\nLine 2"}, `{"command":"insert","path":"/memories/i.txt","insert_line":2,"insert_text":"Last"}`,
			"The file /memories/i.txt has been edited.", map[string]string{"i.txt": "Line 1\nLine 2\nLast"}},
		{"insert out of range", map[string]string{"i.txt": "Line 1\nLine 2"}, `{"command":"insert","path":"/memories/i.txt","insert_line":10,"insert_text":"x"}`,
			"Error: Invalid `insert_line` parameter: 10. It should be within the range of lines of the file: [0, 2]", nil},
		{"insert negative", map[string]string{"i.txt": "Line 1\nLine 2"}, `{"command":"insert","path":"/memories/i.txt","insert_line":-1,"insert_text":"x"}`,
			"Error: Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 2]", nil},
		{"insert after trailing newline", map[string]string{"i.txt": "a\nb\n"}, `{"command":"insert","path":"/memories/i.txt","insert_line":3,"insert_text":"X"}`,
			"The file /memories/i.txt has been edited.", map[string]string{"i.txt": "a\nb\n\nX"}},
		{"insert in empty file", map[string]string{"i.txt": ""}, `{"command":"insert","path":"/memories/i.txt","insert_line":0,"insert_text":"X"}`,
			"The file /memories/i.txt has been edited.", map[string]string{"i.txt": "X\n"}},
		{"insert strips one newline", map[string]string{"i.txt": "a\nb"}, `{"command":"insert","path":"/memories/i.txt","insert_line":1,"insert_text":"X\n\n"}`,
			"The file /memories/i.txt has been edited.", map[string]string{"i.txt": "a\nX\n\nb"}},
		{"insert missing file", nil, `{"command":"insert","path":"/memories/nope.txt","insert_line":0,"insert_text":"x"}`,
			"Error: The path /memories/nope.txt does not exist. Please provide a valid path.", nil},
		{"insert line not integer", map[string]string{"i.txt": "a"}, `{"command":"insert","path":"/memories/i.txt","insert_line":"1","insert_text":"x"}`,
			`Error: Parameter "insert_line" of the insert command must be an integer`, nil},
		{"insert missing line", map[string]string{"i.txt": "a"}, `{"command":"insert","path":"/memories/i.txt","insert_text":"x"}`,
			`Error: Missing required parameter "insert_line" for the insert command`, nil},

		{"delete file", map[string]string{"d.txt": "x", "k.txt": "k"}, `{"command":"delete","path":"/memories/d.txt"}`,
			"Successfully deleted /memories/d.txt", map[string]string{"k.txt": "k"}},
		{"delete folder", map[string]string{"sub/f.txt": "x", "sub/g/h.txt": "y", "subway.txt": "z"}, `{"command":"delete","path":"/memories/sub"}`,
			"Successfully deleted /memories/sub", map[string]string{"subway.txt": "z"}},
		{"delete missing", nil, `{"command":"delete","path":"/memories/nope.txt"}`, "Error: The path /memories/nope.txt does not exist", nil},
		{"delete root", map[string]string{"keep.txt": "x"}, `{"command":"delete","path":"/memories"}`,
			"Error: Cannot delete the /memories directory itself", nil},
		{"delete root with slash", map[string]string{"keep.txt": "x"}, `{"command":"delete","path":"/memories/"}`,
			"Error: Cannot delete the /memories directory itself", nil},
		{"delete root with dot", map[string]string{"keep.txt": "x"}, `{"command":"delete","path":"/memories/./"}`,
			"Error: Cannot delete the /memories directory itself", nil},
		{"delete root with dotdot", map[string]string{"keep.txt": "x"}, `{"command":"delete","path":"/memories/sub/.."}`,
			"Error: Path /memories/sub/.. has a .. segment; name the path without it", nil},
		{"delete escape", nil, `{"command":"delete","path":"/memories/../x"}`, "Error: Path /memories/../x would escape /memories directory", nil},

		{"rename", map[string]string{"old.txt": "Original"}, `{"command":"rename","old_path":"/memories/old.txt","new_path":"/memories/new.txt"}`,
			"Successfully renamed /memories/old.txt to /memories/new.txt", map[string]string{"new.txt": "Original"}},
		{"rename into new folders", map[string]string{"f.txt": "C"}, `{"command":"rename","old_path":"/memories/f.txt","new_path":"/memories/nested/dir/f.txt"}`,
			"Successfully renamed /memories/f.txt to /memories/nested/dir/f.txt", map[string]string{"nested/dir/f.txt": "C"}},
		{"rename folder", map[string]string{"a/x": "1", "a/b/y": "2", "c": "3"}, `{"command":"rename","old_path":"/memories/a","new_path":"/memories/z/a2"}`,
			"Successfully renamed /memories/a to /memories/z/a2", map[string]string{"z/a2/x": "1", "z/a2/b/y": "2", "c": "3"}},
		{"rename folder into itself", map[string]string{"a/x": "1"}, `{"command":"rename","old_path":"/memories/a","new_path":"/memories/a/b"}`,
			"Error: Cannot rename /memories/a to /memories/a/b: cannot move the folder /a into itself (/a/b)", nil},
		{"rename file below itself", map[string]string{"a": "1"}, `{"command":"rename","old_path":"/memories/a","new_path":"/memories/a/b"}`,
			"Successfully renamed /memories/a to /memories/a/b", map[string]string{"a/b": "1"}},
		{"rename destination exists", map[string]string{"f1.txt": "1", "f2.txt": "2"}, `{"command":"rename","old_path":"/memories/f1.txt","new_path":"/memories/f2.txt"}`,
			"Error: The destination /memories/f2.txt already exists", nil},
		{"rename onto a folder", map[string]string{"f1.txt": "1", "d/f2.txt": "2"}, `{"command":"rename","old_path":"/memories/f1.txt","new_path":"/memories/d"}`,
			"Error: The destination /memories/d already exists", nil},
		{"rename to itself", map[string]string{"f1.txt": "1"}, `{"command":"rename","old_path":"/memories/f1.txt","new_path":"/memories/f1.txt"}`,
			"Error: The destination /memories/f1.txt already exists", nil},
		{"rename below a file", map[string]string{"f1.txt": "1", "f2.txt": "2"}, `{"command":"rename","old_path":"/memories/f1.txt","new_path":"/memories/f2.txt/x"}`,
			"Error: Cannot rename /memories/f1.txt to /memories/f2.txt/x: /memories/f2.txt is a file, so it cannot hold other files", nil},
		{"rename missing source", nil, `{"command":"rename","old_path":"/memories/nope.txt","new_path":"/memories/new.txt"}`,
			"Error: The path /memories/nope.txt does not exist", nil},
		{"rename escape", map[string]string{"f.txt": "x"}, `{"command":"rename","old_path":"/memories/f.txt","new_path":"/memories/../f.txt"}`,
			"Error: Path /memories/../f.txt would escape /memories directory", nil},
		{"rename outside", map[string]string{"f.txt": "x"}, `{"command":"rename","old_path":"/memories/f.txt","new_path":"/outside/f.txt"}`,
			"Error: Path must start with /memories, got: /outside/f.txt", nil},
		{"rename root", map[string]string{"f.txt": "x"}, `{"command":"rename","old_path":"/memories/","new_path":"/memories/sub"}`,
			"Error: Cannot rename the /memories directory itself", nil},
		{"rename onto root", map[string]string{"f.txt": "x"}, `{"command":"rename","old_path":"/memories/f.txt","new_path":"/memories"}`,
			"Error: The destination /memories already exists", nil},
		{"rename missing new_path", map[string]string{"f.txt": "x"}, `{"command":"rename","old_path":"/memories/f.txt"}`,
			`Error: Missing required parameter "new_path" for the rename command`, nil},

		{"unknown command", nil, `{"command":"undo_edit","path":"/memories/a.txt"}`, "Error: undo_edit not implemented", nil},
		{"no command", nil, `{"path":"/memories/a.txt"}`,
			`Error: Missing required parameter "command"; use one of view, create, str_replace, insert, delete, rename`, nil},
		{"missing path", nil, `{"command":"view"}`, `Error: Missing required parameter "path" for the view command`, nil},
		{"null path", nil, `{"command":"delete","path":null}`, `Error: Missing required parameter "path" for the delete command`, nil},
		{"not an object", nil, `["view"]`, `Error: The input of the memory tool must be a JSON object`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, st := newTestSession(t, tc.files)
			res := call(t, s, MemoryToolName, []byte(tc.in))
			if res.Content != tc.want {
				t.Errorf("got  %q\nwant %q", res.Content, tc.want)
			}
			if got, want := res.IsError, strings.HasPrefix(tc.want, "Error: "); got != want {
				t.Errorf("is_error = %v, want %v", got, want)
			}
			want := tc.after
			if want == nil {
				want = tc.files
				if want == nil {
					want = map[string]string{}
				}
			}
			if got := files(t, st); !maps.Equal(got, want) {
				t.Errorf("files after: got %q, want %q", got, want)
			}
		})
	}
}
