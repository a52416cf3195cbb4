package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/tooladapter"
)

// The differential test of the memory tool: the same command sequences go through the
// reference implementation (BetaLocalFilesystemMemoryTool of @anthropic-ai/sdk, run by
// ../tooladapter/testdata/reference/run.mjs) and through gitmem's HTTP tool route, and
// after every command the outputs and the files must be equal. The exceptions are the
// deliberate differences that README.md lists, recognised by deliberate below, and the
// sizes of directories, which git does not have. The reference prunes empty directories
// after each command, since a git tree cannot hold one.

const referenceDir = "../tooladapter/testdata/reference"

type refCase struct {
	Name     string            `json:"name,omitempty"`
	Files    map[string]string `json:"files"`
	Commands []json.RawMessage `json:"commands"`
	Prune    bool              `json:"prune_empty_dirs"`
	Snaps    bool              `json:"snapshots"`
}

type refOutput struct {
	Content string            `json:"content"`
	IsError bool              `json:"is_error"`
	Files   map[string]string `json:"files"`
}

type refResult struct {
	Outputs []refOutput `json:"outputs"`
}

// runReference runs cases through the reference implementation.
func runReference(t *testing.T, cases []refCase) []refResult {
	t.Helper()
	if _, err := os.Stat(filepath.Join(referenceDir, "node_modules", "@anthropic-ai", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the reference is not installed in %s: run npm ci there (scripts/test does)", referenceDir)
		}
		t.Skipf("the reference is not installed: npm ci --prefix %s", referenceDir)
	}
	for i := range cases {
		cases[i].Prune, cases[i].Snaps = true, true
	}
	in, err := json.Marshal(map[string]any{"cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(referenceDir, "run.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node run.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		Results []refResult `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("decode the reference's output: %v", err)
	}
	if len(res.Results) != len(cases) {
		t.Fatalf("the reference answered %d cases of %d", len(res.Results), len(cases))
	}
	return res.Results
}

// vectorCases reads the conformance vectors (inputs only: the reference is run live).
func vectorCases(t *testing.T) []refCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(referenceDir, "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []refCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Cases
}

func TestMemoryToolMatchesReference(t *testing.T) {
	cases := vectorCases(t)
	n := 250
	if testing.Short() {
		n = 20
	}
	rng := rand.New(rand.NewPCG(20261123, 4))
	for i := 0; i < n; i++ {
		cases = append(cases, randomCase(rng, fmt.Sprintf("random %d", i)))
	}
	want := runReference(t, cases)
	ts := startServer(t, Options{})
	var compared, skipped int
	reasons := map[string]int{}
	for i, c := range cases {
		ok, cmp, reason := runCase(t, ts, c, want[i])
		if !ok {
			continue
		}
		compared += cmp
		if reason != "" {
			skipped++
			reasons[reason]++
		}
	}
	t.Logf("compared %d commands in %d cases; %d cases stopped at a deliberate difference: %v", compared, len(cases), skipped, reasons)
	if compared < 2000 && !testing.Short() {
		t.Errorf("only %d commands were compared", compared)
	}
}

// runCase runs one case through gitmem and compares it with the reference's results.
// It returns how many commands it compared, and the deliberate difference it stopped at.
func runCase(t *testing.T, ts *testServer, c refCase, want refResult) (ok bool, compared int, stopped string) {
	t.Helper()
	ctx := context.Background()
	st, err := ts.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: gitstore.NewID("ref_", time.Now()), Actor: LocalUser})
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range c.Files {
		if _, err := st.Write(ctx, gitstore.WriteInput{Path: "/" + p, Content: content, Actor: LocalUser}); err != nil {
			t.Fatalf("%s: seed %s: %v", c.Name, p, err)
		}
	}
	before := c.Files
	for i, cmd := range c.Commands {
		got := postTool(t, ts, st.ID(), "memory", cmd)
		w := want.Outputs[i]
		same := normalizeListing(got.Content) == normalizeListing(w.Content) && got.IsError == w.IsError
		if !same {
			if reason := deliberate(cmd, before, w); reason != "" {
				return true, compared, reason
			}
			t.Errorf("%s, command %d %s:\n gitmem    %q (is_error %v)\n reference %q (is_error %v)", c.Name, i+1, cmd, got.Content, got.IsError, w.Content, w.IsError)
			return false, compared, ""
		}
		if files := storeFiles(t, st); !maps.Equal(files, w.Files) {
			t.Errorf("%s, after command %d %s:\n gitmem has    %q\n reference has %q", c.Name, i+1, cmd, files, w.Files)
			return false, compared, ""
		}
		compared++
		before = w.Files
	}
	return true, compared, ""
}

func postTool(t *testing.T, ts *testServer, storeID, tool string, input []byte) toolResultJSON {
	t.Helper()
	resp, err := http.Post(ts.url+"/v1/memory_stores/"+storeID+"/tools/"+tool, "application/json", bytes.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res toolResultJSON
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK || res.Type != "tool_result" {
		t.Fatalf("POST tools/%s %s: status %d, %+v, %v", tool, input, resp.StatusCode, res, err)
	}
	return res
}

func storeFiles(t *testing.T, st *gitstore.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	page, err := st.List(context.Background(), gitstore.ListOptions{Limit: 1000, WithContent: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Items {
		out[it.Memory.Path[1:]] = *it.Memory.Content
	}
	return out
}

// normalizeListing replaces the sizes of directories in a directory listing: git has no
// size for a directory, so gitmem shows the total of the files below it.
func normalizeListing(s string) string {
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(lines[0], "Here're the files and directories") {
		return s
	}
	for i := 1; i < len(lines); i++ {
		size, path, ok := strings.Cut(lines[i], "\t")
		if ok && (i == 1 || strings.HasSuffix(path, "/")) && size != "" {
			lines[i] = "<dir>\t" + path
		}
	}
	return strings.Join(lines, "\n")
}

// deliberate names the deliberate difference from the reference that cmd runs into, given
// the files before it and the reference's answer, or returns "".
func deliberate(raw json.RawMessage, before map[string]string, ref refOutput) string {
	var cmd map[string]any
	if json.Unmarshal(raw, &cmd) != nil {
		return ""
	}
	if rawOSError.MatchString(ref.Content) {
		return "the reference answers a raw OS error"
	}
	str := func(k string) (string, bool) { s, ok := cmd[k].(string); return s, ok }
	name, _ := str("command")
	fields := map[string][]string{"view": {"path"}, "create": {"path", "file_text"}, "str_replace": {"path", "old_str", "new_str"},
		"insert": {"path", "insert_line", "insert_text"}, "delete": {"path"}, "rename": {"old_path", "new_path"}}
	for _, f := range fields[name] {
		if _, ok := cmd[f]; !ok {
			return "a missing field is named"
		}
	}
	rel := map[string]string{}
	for _, f := range []string{"path", "old_path", "new_path"} {
		p, ok := str(f)
		if !ok {
			continue
		}
		if reason := unsafePath(p); reason != "" {
			return reason
		}
		rel[f] = strings.Trim(strings.TrimPrefix(p, "/memories"), "/")
	}
	isFile := func(p string) bool { _, ok := before[p]; return ok }
	isDir := func(p string) bool {
		for f := range before {
			if p == "" || strings.HasPrefix(f, p+"/") {
				return true
			}
		}
		return false
	}
	underFile := func(p string) bool {
		segs := strings.Split(p, "/")
		for i := 1; i < len(segs); i++ {
			if isFile(strings.Join(segs[:i], "/")) {
				return true
			}
		}
		return false
	}
	switch name {
	case "str_replace":
		old, _ := str("old_str")
		if old == "" || strings.Contains(old, "\n") {
			return "str_replace matches the whole content"
		}
		for _, line := range strings.Split(before[rel["path"]], "\n") {
			if strings.Count(line, old) > 1 {
				return "str_replace matches the whole content"
			}
		}
	case "create":
		if underFile(rel["path"]) {
			return "a file cannot hold other files"
		}
	case "rename":
		from, to := rel["old_path"], rel["new_path"]
		if underFile(to) && !isFile(to) {
			return "a file cannot hold other files"
		}
		if strings.HasPrefix(to, from+"/") && (isDir(from) || isFile(from)) {
			return "moves into itself"
		}
	case "view":
		if strings.Contains(ref.Content, "\n") && len([]rune(ref.Content)) > tooladapter.MaxViewChars {
			return "views are capped"
		}
	}
	return ""
}

// rawOSError matches the errors of Node's fs that the reference passes on as they are,
// such as "ENOTDIR: not a directory, realpath '<base>/memories/a/b'".
var rawOSError = regexp.MustCompile(`^Error: E[A-Z]+: `)

// unsafePath names the path-safety rule that p breaks, where gitmem refuses what the
// reference accepts (or words the refusal differently).
func unsafePath(p string) string {
	switch {
	case strings.HasPrefix(p, "/memories") && len(p) > len("/memories") && p[len("/memories")] != '/':
		return "/memoriesX is not under /memories"
	case strings.Contains(p, `\`), strings.Contains(p, "%"):
		return "backslashes and URL-encoded names are refused"
	case !norm.NFC.IsNormalString(p), strings.IndexFunc(p, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
		return "control characters and non-NFC names are refused"
	}
	segs := strings.Split(p, "/")
	if slices.Contains(segs, "..") {
		return ".. is refused"
	}
	if slices.Contains(segs, ".gitmem") {
		return ".gitmem is reserved"
	}
	return ""
}

// randomCase makes a random sequence of memory tool commands over a small set of names,
// so that commands often meet the files that earlier ones made.
func randomCase(rng *rand.Rand, name string) refCase {
	dirs := []string{"", "", "a", "a/b", "notes", "notes/deep/er", ".hidden", "node_modules", "x y", "é", "日本"}
	names := []string{"f.txt", "g.md", "h", "日本.md", ".dot", "Z.txt", "a", "10.md", "ü.txt"}
	words := []string{"alpha", "beta", "gamma", "delta", "tabs", "spaces", "TODO", "done", "ß", "日本語", "$&", "x"}
	path := func() string {
		switch rng.IntN(12) {
		case 0:
			return "/memories"
		case 1:
			return "/memories/"
		case 2:
			return "/memories/" + dirs[2+rng.IntN(len(dirs)-2)]
		}
		d := dirs[rng.IntN(len(dirs))]
		p := "/memories/"
		if d != "" {
			p += d + "/"
		}
		return p + names[rng.IntN(len(names))]
	}
	line := func() string {
		n := rng.IntN(4)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	text := func() string {
		ls := make([]string, rng.IntN(6))
		for i := range ls {
			ls[i] = line()
		}
		s := strings.Join(ls, "\n")
		if rng.IntN(3) == 0 {
			s += "\n"
		}
		return s
	}
	c := refCase{Name: name, Files: map[string]string{}}
	add := func(m map[string]any) {
		raw, _ := json.Marshal(m)
		c.Commands = append(c.Commands, raw)
	}
	for n := 5 + rng.IntN(15); len(c.Commands) < n; {
		switch k := rng.IntN(100) / 5; {
		case k < 5:
			add(map[string]any{"command": "create", "path": path(), "file_text": text()})
		case k < 10:
			m := map[string]any{"command": "view", "path": path()}
			if rng.IntN(4) == 0 {
				m["view_range"] = []int{rng.IntN(5) - 1, rng.IntN(7) - 2}
			}
			add(m)
		case k < 13:
			add(map[string]any{"command": "str_replace", "path": path(), "old_str": words[rng.IntN(len(words))], "new_str": line()})
		case k < 15:
			add(map[string]any{"command": "insert", "path": path(), "insert_line": rng.IntN(6) - 1, "insert_text": line() + "\n"})
		case k < 17:
			add(map[string]any{"command": "delete", "path": path()})
		case k < 19:
			add(map[string]any{"command": "rename", "old_path": path(), "new_path": path()})
		case rng.IntN(10) == 0:
			add(map[string]any{"command": []string{"undo_edit", "view", "create"}[rng.IntN(3)]})
		}
	}
	return c
}
