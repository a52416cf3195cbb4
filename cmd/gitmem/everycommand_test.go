package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A command of the CLI as TestEveryCommand runs it: with --json, what its output must hold;
// and a way to make it fail, with the exit code that failure has.
type commandCase struct {
	args []string
	want string // a JSON field (or "field=value") its --json output has
	fail []string
	code int
	// dataDir: the command works on the data directory itself, so through a running server
	// it refuses in one line (exit 6, "needs the data directory").
	dataDir bool
}

// everyCommand lists every command but the long-running ones (serve, mcp, agent, bench,
// which have tests of their own) and completion. {memver} is a version of /a/b.md, {bundle}
// a bundle file, {remote} an empty bare repository, {dir} a folder of files, {elsewhere} a
// bundle of a store of another data directory.
var everyCommand = []commandCase{
	{args: []string{"version"}, want: "version", fail: []string{"version", "extra"}, code: exitUsage},
	{args: []string{"stores", "create", "made{n}"}, want: "type=memory_store", fail: []string{"stores", "create", "notes"}, code: exitConflict},
	{args: []string{"stores", "list"}, want: "type=memory_store", fail: []string{"stores", "list", "extra"}, code: exitUsage},
	{args: []string{"stores", "show", "notes"}, want: "usage", fail: []string{"stores", "show", "nope"}, code: exitNotFound},
	{args: []string{"stores", "set", "notes", "--expire-after", "30d"}, want: "policy", fail: []string{"stores", "set", "notes"}, code: exitUsage},
	{args: []string{"stores", "archive", "made{n}"}, want: "archived_at", fail: []string{"stores", "archive", "nope"}, code: exitNotFound},
	{args: []string{"stores", "delete", "made{n}", "-y"}, want: "type=memory_store_deleted", fail: []string{"stores", "delete", "nope", "-y"}, code: exitNotFound},
	{args: []string{"put", "notes", "/p{n}.md", "-"}, want: "type=memory", fail: []string{"put", "notes", "/a/b.md", "-", "--if-absent"}, code: exitConflict},
	{args: []string{"cat", "notes", "/a/b.md"}, want: "content", fail: []string{"cat", "notes", "/nope.md"}, code: exitNotFound},
	{args: []string{"mv", "notes", "/p{n}.md", "/q{n}.md"}, want: "type=memory", fail: []string{"mv", "notes", "/q{n}.md", "/a/b.md"}, code: exitConflict},
	{args: []string{"rm", "notes", "/q{n}.md"}, want: "operation=deleted", fail: []string{"rm", "notes", "/nope.md"}, code: exitNotFound},
	{args: []string{"ls", "notes"}, want: "type", fail: []string{"ls", "nope"}, code: exitNotFound},
	{args: []string{"log", "notes"}, want: "operation", fail: []string{"log", "nope"}, code: exitNotFound},
	{args: []string{"search", "notes", "hello"}, want: "data", fail: []string{"search", "notes"}, code: exitUsage},
	{args: []string{"diff", "notes", "/a/b.md"}, want: "diff", fail: []string{"diff", "notes", "/nope.md"}, code: exitNotFound},
	{args: []string{"blame", "notes", "/a/b.md"}, want: "lines", fail: []string{"blame", "notes", "/nope.md"}, code: exitNotFound},
	{args: []string{"restore", "notes", "{memver}"}, want: "type=memory", fail: []string{"restore", "notes", "memver_01M83RXJE06891D7CSNGD1TFB7"}, code: exitNotFound},
	{args: []string{"revert", "notes", "--session", "sesn_none", "--dry-run"}, want: "type=memory_revert", fail: []string{"revert", "notes"}, code: exitUsage},
	{args: []string{"gc", "notes"}, want: "type=memory_store_gc", fail: []string{"gc", "nope"}, code: exitNotFound},
	{args: []string{"expire", "notes", "--dry-run"}, want: "type=memory_store_expire", fail: []string{"expire", "nope"}, code: exitNotFound},
	{args: []string{"export", "notes", "{bundle}"}, want: "type=export", fail: []string{"export", "nope", "{bundle}"}, code: exitNotFound},
	{args: []string{"import", "--dir", "{dir}", "notes"}, want: "imported", fail: []string{"import", "--dir", "{dir}", "nope"}, code: exitNotFound},
	{args: []string{"remote", "add", "notes", "r{n}", "{remote}"}, want: "type=remote", fail: []string{"remote", "add", "nope", "origin", "{remote}"}, code: exitNotFound, dataDir: true},
	{args: []string{"remote", "list", "notes"}, want: "name", fail: []string{"remote", "list", "nope"}, code: exitNotFound},
	{args: []string{"sync", "notes"}, want: "remote", fail: []string{"sync", "nope"}, code: exitNotFound},
	{args: []string{"remote", "remove", "notes", "r{n}"}, want: "removed", fail: []string{"remote", "remove", "nope", "origin"}, code: exitNotFound, dataDir: true},
	{args: []string{"redact", "notes", "{memver}"}, want: "redacted_at", fail: []string{"redact", "notes", "memver_01M83RXJE06891D7CSNGD1TFB7"}, code: exitNotFound},
	{args: []string{"reindex", "notes"}, want: "catalog", fail: []string{"reindex", "nope"}, code: exitNotFound, dataDir: true},
	{args: []string{"import", "{elsewhere}"}, want: "imported", fail: []string{"import", "{elsewhere}"}, code: exitConflict, dataDir: true},
	{args: []string{"keys", "create", "--name", "k{n}"}, want: "secret", fail: []string{"keys", "create"}, code: exitUsage},
	{args: []string{"keys", "list"}, want: "data", fail: []string{"keys", "list", "extra"}, code: exitUsage},
	{args: []string{"keys", "revoke", "k{n}"}, want: "revoked_at", fail: []string{"keys", "revoke", "nope"}, code: exitNotFound},
}

// TestEveryCommand runs every command with --json and one way of failing, on an idle data
// directory and again through a running server: the JSON parses and has the field the API
// names it by, the failure exits with its documented code, and a command that needs the
// data directory says so in one line through a server.
func TestEveryCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	c := newCLI(t)
	seedNotes(c)
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	os.MkdirAll(filepath.Join(files, "f"), 0o755)
	os.WriteFile(filepath.Join(files, "f", "one.md"), []byte("one\n"), 0o644)
	var versions []map[string]any
	if err := json.Unmarshal([]byte(c.ok("", "log", "notes", "/a/b.md", "--json")), &versions); err != nil || len(versions) < 2 {
		t.Fatalf("log --json: %v", err)
	}
	// The store syncs with a remote (added before a server holds the directory: remote add
	// needs the directory itself).
	origin := filepath.Join(dir, "origin.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", origin).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	c.ok("", "remote", "add", "notes", "origin", origin)
	other := newCLI(t)
	other.ok("", "stores", "create", "elsewhere")
	other.ok("x\n", "put", "elsewhere", "/x.md")
	elsewhere := filepath.Join(dir, "elsewhere.bundle")
	other.ok("", "export", "elsewhere", elsewhere)
	run := func(mode string, memver string, env []string) {
		remote := filepath.Join(dir, mode+"-remote.git")
		if out, err := exec.Command("git", "init", "-q", "--bare", remote).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		fill := func(args []string) []string {
			out := make([]string, len(args))
			for i, a := range args {
				a = strings.ReplaceAll(a, "{n}", mode)
				a = strings.ReplaceAll(a, "{memver}", memver)
				a = strings.ReplaceAll(a, "{bundle}", filepath.Join(dir, mode+".bundle"))
				a = strings.ReplaceAll(a, "{remote}", remote)
				a = strings.ReplaceAll(a, "{elsewhere}", elsewhere)
				out[i] = strings.ReplaceAll(a, "{dir}", files)
			}
			return out
		}
		for _, cc := range everyCommand {
			args := fill(cc.args)
			name := mode + ": gitmem " + strings.Join(args, " ")
			stdout, stderr, code := c.runEnv(env, "content\n", append(args, "--json")...)
			if cc.dataDir && mode == "served" {
				if code != exitUnavailable || !strings.Contains(stderr, "needs the data directory") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("%s: exit %d, want %d and one line that says it needs the data directory: %q", name, code, exitUnavailable, stderr)
				}
				continue
			}
			if code != 0 {
				t.Errorf("%s --json: exit %d: %s", name, code, stderr)
				continue
			}
			if !hasJSONField(stdout, cc.want) {
				t.Errorf("%s --json: no %s in %.400s", name, cc.want, stdout)
			}
			_, stderr, code = c.runEnv(env, "content\n", fill(cc.fail)...)
			if code != cc.code {
				t.Errorf("%s: gitmem %v exits %d, want %d (%s)", mode, fill(cc.fail), code, cc.code, stderr)
			}
		}
	}
	// Each run redacts the version it restores: the second takes the next one.
	run("local", versions[len(versions)-1]["id"].(string), os.Environ())
	serveForGit(t, c)
	run("served", versions[len(versions)-2]["id"].(string), os.Environ())
}

var fieldEq = regexp.MustCompile(`^(\w+)=(.*)$`)

// hasJSONField tells whether out is JSON (an object, or an array of objects) whose first
// object has the field want ("name", or "name=value" for a string value).
func hasJSONField(out, want string) bool {
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return false
	}
	obj, ok := v.(map[string]any)
	if arr, isArr := v.([]any); isArr && len(arr) > 0 {
		obj, ok = arr[0].(map[string]any)
	}
	if !ok {
		return false
	}
	if m := fieldEq.FindStringSubmatch(want); m != nil {
		return obj[m[1]] == m[2]
	}
	_, has := obj[want]
	return has
}
