package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/secrets/secrettest"
)

// The commands that work through a running server, each with what it prints compared on
// the same data: the data directory opened by the command itself, the server found through
// the directory's lock, and the server named with --server (and a key).
var readCommands = [][]string{
	{"stores", "list"},
	{"stores", "list", "--json"},
	{"ls", "notes"},
	{"ls", "notes", "-R", "--long"},
	{"ls", "notes", "/a/", "--json"},
	{"cat", "notes", "/a/b.md"},
	{"log", "notes"},
	{"log", "notes", "/a/b.md", "--json"},
	{"log", "notes", "--op", "deleted"},
	{"log"},
	{"log", "--since", "today", "-n", "3"},
	{"log", "notes", "--until", "2001-01-01"},
	{"log", "notes", "--key", "apikey_01M83EQW76530MXJ2NYMV3BFCX", "--json"},
	{"search", "notes", "hello"},
	{"search", "notes", "hello", "--json"},
	{"diff", "notes", "/a/b.md"},
	{"diff", "notes", "/a/b.md", "--json"},
	{"blame", "notes", "/a/b.md"},
	{"blame", "notes", "/a/b.md", "--json"},
}

// seedNotes makes a store "notes" with a few memories and versions.
func seedNotes(c *cli) {
	c.ok("", "stores", "create", "notes")
	c.ok("hello world\n", "put", "notes", "/a/b.md")
	c.ok("hello again\n", "put", "notes", "/a/b.md")
	c.ok("second\n", "put", "notes", "/a/c.md")
	c.ok("gone\n", "put", "notes", "/x.md")
	c.ok("", "rm", "notes", "/x.md")
	c.ok("", "mv", "notes", "/a/c.md", "/d/c.md")
}

func TestClientModeReadsAsLocal(t *testing.T) {
	c := newCLI(t)
	seedNotes(c)
	out := c.ok("", "keys", "create", "--name", "cli")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(out)
	local := map[string]string{}
	for _, args := range readCommands {
		local[strings.Join(args, " ")] = c.ok("", args...)
	}
	url, _ := serveForGit(t, c)

	withKey := append(os.Environ(), "GITMEM_API_KEY="+secret)
	for _, args := range readCommands {
		name := strings.Join(args, " ")
		for how, env := range map[string][]string{
			"lock":          withKey,
			"--server":      withKey,
			"GITMEM_SERVER": append(withKey, "GITMEM_SERVER="+url),
		} {
			a := args
			if how == "--server" {
				a = append([]string{"--server", url}, args...)
			}
			got, errOut, code := c.runEnv(env, "", a...)
			if code != 0 {
				t.Errorf("%s through the server (%s): exit %d: %s", name, how, code, errOut)
				continue
			}
			if got != local[name] {
				t.Errorf("%s through the server (%s) prints\n%s\nlocally\n%s", name, how, got, local[name])
			}
		}
	}
}

// ids and times differ between two runs of the same writes; the rest of their output may not.
// So do commits, durations, the number and sizes of packs (writes grouped by timing share
// one), and who wrote: the CLI writes as the git user, through a server as the server's
// caller (the key; "local user" without keys). A store not found is said to be not found
// in the data directory, or on the server.
var varying = regexp.MustCompile(`(mem|memver|memstore)_[0-9A-Z]{26}|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?|` +
	`\b[0-9a-f]{12}\b|[0-9a-f]{40}|repository\s+\S+|"repository": "[^"]*"|\d{4}-\d\d-\d\dT[0-9:.]+Z|by user_\w+|\d+(\.\d+)?(ms|s|µs|m)\b|\d+(\.\d+)? (B|KiB|MiB)\b|` +
	`(in data directory|on) (/|http://)\S+|head [0-9a-f]{7}, \d+ bytes|main [0-9a-f]{7}\b|\d+ packs`)

func TestClientModeWritesAsLocal(t *testing.T) {
	writes := [][]string{
		{"put", "notes", "/w.md", "-"},
		{"put", "notes", "/w.md", "-"}, // unchanged
		{"put", "notes", "/w.md", "-", "--if-absent"},
		{"mv", "notes", "/w.md", "/v/w.md"},
		{"cat", "notes", "/v/w.md"},
		{"rm", "notes", "/v/w.md"},
		{"rm", "notes", "/v/w.md"},
		{"ls", "notes", "-R"},
		{"import", "--dir", "{dir}", "notes"},
		{"import", "--dir", "{dir}", "notes"}, // unchanged
		{"import", "--dir", "{dir}", "fresh"},
		{"import", "--dir", "{dir}", "fresh", "--create"},
		{"ls", "fresh", "-R", "--long"},
		{"export", "notes", "{dir}.bundle"},
		{"restore", "notes", "{first}"},
		{"restore", "notes", "{first}"}, // unchanged
		{"restore", "notes", "memver_01M83RXJE06891D7CSNGD1TFB7"},
		{"diff", "notes", "/a/b.md"},
		{"redact", "notes", "{first}"},
		{"redact", "notes", "{first}"}, // redacted already
		{"gc", "notes"},
		{"gc"},
		{"revert", "notes", "--key", "apikey_01M83EQW76530MXJ2NYMV3BFCX", "--dry-run"},
		{"revert", "notes", "--session", "sesn_01M83PZ34EVJY3C18AZVHGZ9ME", "--since", "2026-01-02T15:04:05Z"},
		{"expire", "notes", "--dry-run"},
		{"stores", "create", "other", "--secrets", "redact", "--max-memories", "5", "--expire-after", "30d"},
		{"stores", "create", "other"},          // refused: store names are unique
		{"put", "other", "/ci.md", "{secret}"}, // its secrets policy redacts, and says so
		{"sync", "notes"},
		{"sync", "notes", "origin", "--json"},
		{"sync", "notes", "nope"},
		{"sync", "other"},
		{"stores", "set", "notes", "--max-bytes", "100000", "--expire-after", "2h"},
		{"expire", "notes", "--dry-run"},
		{"expire"},
		{"stores", "show", "notes"},
		{"stores", "show", "notes", "--json"},
		{"stores", "archive", "notes"},
		{"put", "notes", "/after-archive.md", "-"},
		{"stores", "delete", "notes", "--yes"},
		{"stores", "list", "--all"},
	}
	dir := t.TempDir()
	os.MkdirAll(dir+"/sub", 0o755)
	os.WriteFile(dir+"/top.md", []byte("top\n"), 0o644)
	os.WriteFile(dir+"/sub/leaf.md", []byte("leaf\n"), 0o644)
	secretFile := t.TempDir() + "/ci.md"
	os.WriteFile(secretFile, []byte(secrettest.Samples()[2].Content), 0o644)
	run := func(c *cli, serve bool) []string {
		seedNotes(c)
		remote := t.TempDir()
		if out, err := exec.Command("git", "init", "--quiet", "--bare", remote).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		c.ok("", "remote", "add", "notes", "origin", remote)
		c.ok("", "remote", "add", "notes", "zbroken", "/nonexistent/broken.git")
		if serve { // without its sync loop: the syncs are the commands'
			serveWith(t, c, []string{"--sync-interval", "0", "--sync-after-write", "0"})
		}
		var versions []struct{ ID string }
		if err := json.Unmarshal([]byte(c.ok("", "log", "notes", "/a/b.md", "--json")), &versions); err != nil || len(versions) == 0 {
			t.Fatalf("versions of /a/b.md: %v", err)
		}
		var outs []string
		for _, args := range writes {
			args = slices.Clone(args)
			for i, a := range args {
				switch a {
				case "{first}":
					args[i] = versions[len(versions)-1].ID
				case "{secret}":
					args[i] = secretFile
				case "{dir}", "{dir}.bundle":
					args[i] = strings.Replace(a, "{dir}", dir, 1)
				}
			}
			out, errOut, code := c.run("written\n", args...)
			outs = append(outs, varying.ReplaceAllString(out+errOut, "X")+" exit "+string(rune('0'+code)))
		}
		return outs
	}
	local, served := run(newCLI(t), false), run(newCLI(t), true)
	for i := range writes {
		if local[i] != served[i] {
			t.Errorf("%v through the server prints\n%s\nlocally\n%s", writes[i], served[i], local[i])
		}
	}
}

// servedNotes is a data directory with the store "notes" (seedNotes) and a key, held by a
// running server: the server's URL, and the key's secret and id.
func servedNotes(t *testing.T) (c *cli, url, secret, keyID string) {
	c = newCLI(t)
	seedNotes(c)
	out := c.ok("", "keys", "create", "--name", "cli")
	secret = regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(out)
	keyID = regexp.MustCompile(`apikey_[0-9A-Z]{26}`).FindString(out)
	url, _ = serveForGit(t, c)
	return c, url, secret, keyID
}

func TestClientModeRefusals(t *testing.T) {
	c, url, secret, keyID := servedNotes(t)

	// No key, or a wrong one: one clear line, and a failure.
	mustContain(t, "no key", c.fails("", "ls", "notes"), "requires an API key", "GITMEM_API_KEY")
	_, errOut, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY=gitmem_wrong"), "", "ls", "notes")
	if code == 0 || !strings.Contains(errOut, "check GITMEM_API_KEY") || strings.Contains(errOut, "gitmem_wrong") {
		t.Errorf("wrong key: exit %d: %s", code, errOut)
	}
	// keys create needs no key, but a store named by name is looked up on the server: it
	// says so, and that an id needs no lookup.
	if _, errOut, code := c.run("", "keys", "create", "--name", "dash", "--store", "notes"); code != exitAuth ||
		!strings.Contains(errOut, `--store "notes" is a store's name, which the running server looks up`) || !strings.Contains(errOut, "GITMEM_API_KEY") {
		t.Errorf("keys create --store by name without a key: exit %d: %s", code, errOut)
	}
	// A command that needs the data directory says so in one line, naming the server.
	msg := c.fails("", "reindex", "notes")
	mustContain(t, "needs the directory", msg, "gitmem reindex needs the data directory", url, "stop it first")
	if n := strings.Count(strings.TrimSpace(msg), "\n"); n != 0 {
		t.Errorf("the refusal is %d lines:\n%s", n+1, msg)
	}
	// --server with a command that works on a data directory: said, not attempted.
	mustContain(t, "--server reindex", c.fails("", "--server", url, "reindex", "notes"), "works on a data directory", "--server")
	// A server that does not answer.
	down := c.fails("", "--server", "http://127.0.0.1:1", "ls", "notes")
	mustContain(t, "down", down, "does not answer", "connection refused")
	if n := strings.Count(down, "does not answer"); n != 1 {
		t.Errorf("the server being down is said %d times: %s", n, down)
	}

	// With the key, writes are the key's, and a revert of the key's changes finds them.
	env := append(os.Environ(), "GITMEM_API_KEY="+secret)
	var out string
	for _, args := range [][]string{{"put", "notes", "/by-key.md", "-"}, {"revert", "notes", "--key", keyID, "--dry-run"}, {"log", "notes", "-n", "1"}} {
		got, errOut, code := c.runEnv(env, "from the key\n", args...)
		if code != 0 {
			t.Fatalf("%v with the key: exit %d: %s", args, code, errOut)
		}
		out = got
	}
	mustContain(t, "log with the key", out, "/by-key.md", keyID)
	got, _, _ := c.runEnv(env, "", "revert", "notes", "--key", keyID, "--dry-run")
	mustContain(t, "revert through the server", got, "deleted", "/by-key.md", "would revert 1, skipped 0, unchanged 0")
}

// TestClientModeExport: a store exported through a server (with a key) is the store: imported
// into another data directory, its history and memories are what the server has.
func TestClientModeExport(t *testing.T) {
	c, url, secret, _ := servedNotes(t)
	env := append(os.Environ(), "GITMEM_API_KEY="+secret)
	bundle := t.TempDir() + "/notes.bundle"
	got, errOut, code := c.runEnv(env, "", "--server", url, "export", "notes", bundle)
	if code != 0 {
		t.Fatalf("export through the server: exit %d: %s", code, errOut)
	}
	mustContain(t, "export", got, "exported store memstore_", "(notes) to "+bundle, ": 7 commits, head ")
	if _, errOut, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY=gitmem_wrong"), "", "--server", url, "export", "notes", bundle+"2"); code == 0 || strings.Contains(errOut, "gitmem_wrong") {
		t.Errorf("export with a wrong key: exit %d: %s", code, errOut)
	}

	copy := newCLI(t)
	mustContain(t, "import", copy.ok("", "import", bundle), "imported store memstore_", "2 memories, 6 versions, 7 commits")
	for _, args := range [][]string{{"log", "notes"}, {"ls", "notes", "-R", "--long"}, {"cat", "notes", "/a/b.md"}} {
		served, errOut, code := c.runEnv(env, "", args...)
		if code != 0 {
			t.Fatalf("%v through the server: exit %d: %s", args, code, errOut)
		}
		if imported := copy.ok("", args...); imported != served {
			t.Errorf("%v of the imported export:\n%s\nof the server:\n%s", args, imported, served)
		}
	}
}

// TestClientModeStaleLock: a server that died leaves its address in the lock; the next
// command opens the directory itself, as the lock is free.
func TestClientModeStaleLock(t *testing.T) {
	c := newCLI(t)
	seedNotes(c)
	cmd, _, _ := startServe(t, c)
	cmd.Process.Kill()
	cmd.Wait()
	lock, err := os.ReadFile(c.data + "/gitmem.lock")
	if err != nil || !strings.Contains(string(lock), "serving http://") {
		t.Fatalf("lock of a killed server: %q %v", lock, err)
	}
	mustContain(t, "after kill", c.ok("", "ls", "notes", "-R"), "/a/b.md")
}

// TestExitCodes: each class of failure has its exit code, the same locally and through a
// server.
func TestExitCodes(t *testing.T) {
	c := newCLI(t)
	seedNotes(c)
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"ls", "notes"}, exitOK},
		{[]string{"nosuchcommand"}, exitUsage},
		{[]string{"ls"}, exitUsage},
		{[]string{"ls", "notes", "--nosuchflag"}, exitUsage},
		{[]string{"put", "notes", "no-slash.md", "-"}, exitUsage},
		{[]string{"cat", "notes", "/nope.md"}, exitNotFound},
		{[]string{"ls", "nope"}, exitNotFound},
		{[]string{"put", "notes", "/a/b.md", "-", "--if-absent"}, exitConflict},
		{[]string{"stores", "create", "notes"}, exitConflict},
	}
	check := func(how string, env []string) {
		for _, tc := range cases {
			_, errOut, code := c.runEnv(env, "x", tc.args...)
			if code != tc.code {
				t.Errorf("%s: gitmem %v: exit %d, want %d (%s)", how, tc.args, code, tc.code, errOut)
			}
		}
	}
	check("local", os.Environ())
	var key struct{ ID, Secret string }
	if err := json.Unmarshal([]byte(c.ok("", "keys", "create", "--name", "cli", "--json")), &key); err != nil || !strings.HasPrefix(key.Secret, "gitmem_") {
		t.Fatalf("keys create --json: %+v %v", key, err)
	}
	secret := key.Secret
	url, _ := serveForGit(t, c)
	check("through the server", append(os.Environ(), "GITMEM_API_KEY="+secret))
	for _, tc := range []struct {
		env  []string
		args []string
		code int
	}{
		{nil, []string{"ls", "notes"}, exitAuth},
		{[]string{"GITMEM_API_KEY=gitmem_wrong"}, []string{"ls", "notes"}, exitAuth},
		{nil, []string{"--server", "http://127.0.0.1:1", "ls", "notes"}, exitUnavailable},
		{[]string{"GITMEM_API_KEY=" + secret}, []string{"--server", url, "reindex", "notes"}, exitUsage},
		{nil, []string{"reindex", "notes"}, exitUnavailable},
	} {
		_, errOut, code := c.runEnv(append(os.Environ(), tc.env...), "", tc.args...)
		if code != tc.code {
			t.Errorf("gitmem %v: exit %d, want %d (%s)", tc.args, code, tc.code, errOut)
		}
	}
}

// TestJSONAndQuiet: the commands that change things print, with --json, what the HTTP API
// answers (locally and through a server); --quiet silences their reports but not the data a
// command was asked for.
func TestJSONAndQuiet(t *testing.T) {
	for _, served := range []bool{false, true} {
		c := newCLI(t)
		seedNotes(c)
		c.ok("", "stores", "set", "notes", "--expire-after", "30d")
		if served {
			serveForGit(t, c)
		}
		jsonOf := func(stdin string, args ...string) map[string]any {
			t.Helper()
			var v map[string]any
			if err := json.Unmarshal([]byte(c.ok(stdin, append(args, "--json")...)), &v); err != nil {
				t.Fatalf("%v --json (served %v): %v", args, served, err)
			}
			return v
		}
		m := jsonOf("j\n", "put", "notes", "/j.md")
		if m["type"] != "memory" || m["path"] != "/j.md" || m["content_size_bytes"] != 2.0 {
			t.Errorf("put --json (served %v): %v", served, m)
		}
		if m := jsonOf("", "mv", "notes", "/j.md", "/k.md"); m["path"] != "/k.md" || m["id"] == nil {
			t.Errorf("mv --json (served %v): %v", served, m)
		}
		v := jsonOf("", "rm", "notes", "/k.md")
		if v["type"] != "memory_version" || v["operation"] != "deleted" {
			t.Errorf("rm --json (served %v): %v", served, v)
		}
		var versions []map[string]any
		json.Unmarshal([]byte(c.ok("", "log", "notes", "/k.md", "--json")), &versions)
		created := versions[len(versions)-1]["id"].(string)
		if m := jsonOf("", "restore", "notes", created); m["path"] != "/j.md" {
			t.Errorf("restore --json (served %v): %v", served, m)
		}
		if r := jsonOf("", "revert", "notes", "--key", "apikey_01M83EQW76530MXJ2NYMV3BFCX", "--dry-run"); r["type"] != "memory_revert" || r["dry_run"] != true {
			t.Errorf("revert --json (served %v): %v", served, r)
		}
		if g := jsonOf("", "gc", "notes"); g["type"] != "memory_store_gc" || g["before"] == nil {
			t.Errorf("gc --json (served %v): %v", served, g)
		}
		if e := jsonOf("", "expire", "notes", "--dry-run"); e["type"] != "memory_store_expire" || e["expire_after"] != "30d" {
			t.Errorf("expire --json (served %v): %v", served, e)
		}
		if out := c.ok("quiet\n", "put", "notes", "/q.md", "-q"); out != "" {
			t.Errorf("put -q (served %v) printed %q", served, out)
		}
		if out := c.ok("", "cat", "notes", "/q.md", "--quiet"); out != "quiet\n" {
			t.Errorf("cat --quiet (served %v): %q", served, out)
		}
		mustContain(t, "quiet failure", c.fails("", "cat", "notes", "/nope.md", "-q"), "no memory at /nope.md")
	}
}

// TestUnknownStoreHint names a store that is not there, by name and by id (a valid id of no
// store, and a mistyped one), to commands that find it in different ways, on a data
// directory and through the server that holds it: each says where it looked and how to
// list the stores, and exits 3.
func TestUnknownStoreHint(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	refs := []string{"nope", "memstore_01M83BB1KXF10C9EEWAJM0FBRY", "memstore_01M83BB1KXF10C9EEWAJM0FBR"}
	commands := [][]string{
		{"ls", "{store}"},
		{"cat", "{store}", "/a.md"},
		{"put", "{store}", "/a.md"},
		{"log", "{store}"},
		{"search", "{store}", "hello"},
		{"stores", "show", "{store}"},
		{"stores", "delete", "{store}", "--yes"},
		{"gc", "{store}"},
		{"proposals", "list", "{store}"},
		{"remote", "list", "{store}"},
	}
	check := func(where string) {
		t.Helper()
		for _, ref := range refs {
			for _, args := range commands {
				args = slices.Clone(args)
				for i, a := range args {
					args[i] = strings.ReplaceAll(a, "{store}", ref)
				}
				_, errOut, code := c.run("x\n", args...)
				if code != exitNotFound || !strings.Contains(errOut, where+` (see "gitmem stores list --all")`) || !strings.Contains(errOut, ref) {
					t.Errorf("gitmem %s: exit %d, %q; want exit %d, the store, %q and the hint", strings.Join(args, " "), code, errOut, exitNotFound, where)
				}
			}
		}
	}
	check(" in data directory " + c.data)
	url, _ := serveForGit(t, c)
	check(" on " + url)
}
