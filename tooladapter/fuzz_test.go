package tooladapter

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/gitmem/gitmem/gitstore"
)

// FuzzTools runs any input through any tool of a session over one store, and holds that no
// input escapes the store or corrupts it: no internal error, every memory keeps a valid
// path and valid content, nothing appears outside the data directory, and git fsck finds
// the repository sound at the end.
//
//	go test ./tooladapter -run '^$' -fuzz FuzzTools -fuzztime 60s
func FuzzTools(f *testing.F) {
	for _, seed := range []string{
		`{"command":"view","path":"/memories"}`,
		`{"command":"create","path":"/memories/a/b.md","file_text":"x\ny"}`,
		`{"command":"create","path":"/memories/../../etc/passwd","file_text":"x"}`,
		`{"command":"create","path":"/memories/%2e%2e%2fescape","file_text":"x"}`,
		`{"command":"create","path":"/memories/..\\..\\x","file_text":"x"}`,
		`{"command":"create","path":"/memories/a\u0000b","file_text":"x"}`,
		`{"command":"create","path":"/memories/.git/config","file_text":"x"}`,
		`{"command":"create","path":"/memories/.gitmem/store.json","file_text":"{}"}`,
		`{"command":"create","path":"/memoriesX/y","file_text":"x"}`,
		`{"command":"str_replace","path":"/memories/a/b.md","old_str":"x","new_str":"$&\n"}`,
		`{"command":"insert","path":"/memories/a/b.md","insert_line":1,"insert_text":"z"}`,
		`{"command":"rename","old_path":"/memories/a","new_path":"/memories/a/c"}`,
		`{"command":"rename","old_path":"/memories/a/b.md","new_path":"/memories/../b.md"}`,
		`{"command":"delete","path":"/memories/sub/.."}`,
		`{"command":"delete","path":"/memories/."}`,
		`{"path":"/memories/a/b.md","old_string":"y","new_string":"w","replace_all":true}`,
		`{"path":"/memories/q.md","content":"\ud800"}`,
		`{"path_prefix":"/memories/a/","depth":1}`,
		`[1,2,3]`, `null`, `{"command":7}`, `{}`,
	} {
		for tool := range Tools() {
			f.Add(uint8(tool), seed)
		}
	}
	root := f.TempDir()
	dataDir := filepath.Join(root, "data")
	d, err := gitstore.Open(context.Background(), dataDir, gitstore.Options{})
	if err != nil {
		f.Fatal(err)
	}
	st := newTestStore(f, d, "fuzz", map[string]string{"a/b.md": "x\ny", "top.md": "t"})
	s, err := NewSession(context.Background(), Options{Stores: []Attachment{{Store: st}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := d.Close(); err != nil {
			f.Errorf("close: %v", err)
		}
		out, err := exec.Command("git", "--git-dir", st.RepoPath(), "fsck", "--full", "--strict").CombinedOutput()
		if err != nil {
			f.Errorf("git fsck: %v\n%s", err, out)
		}
	})
	tools := Tools()
	f.Fuzz(func(t *testing.T, tool uint8, input string) {
		name := tools[int(tool)%len(tools)].Name
		if _, err := s.Call(context.Background(), name, []byte(input)); err != nil {
			t.Fatalf("%s %q: internal error: %v", name, input, err)
		}
		page, err := st.List(context.Background(), gitstore.ListOptions{Limit: 1000, WithContent: true})
		if err != nil {
			t.Fatalf("list after %s %q: %v", name, input, err)
		}
		for _, it := range page.Items {
			m := it.Memory
			if err := gitstore.ValidatePath(m.Path); err != nil {
				t.Fatalf("after %s %q the store holds a bad path: %v", name, input, err)
			}
			if !utf8.ValidString(*m.Content) || len(*m.Content) > gitstore.MaxContentBytes {
				t.Fatalf("after %s %q, %s holds bad content", name, input, m.Path)
			}
		}
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "data" {
			t.Fatalf("after %s %q something was written beside the data directory: %v", name, input, entries)
		}
	})
}
