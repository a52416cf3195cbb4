package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gitmem-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "gitmem")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic("build gitmem: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs the gitmem binary against one data directory.
type cli struct {
	t    *testing.T
	data string
	dir  string // the folder gitmem runs in, if not this one: data may be relative to it
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, data: filepath.Join(t.TempDir(), "data")}
}

// run runs gitmem with args and stdin, and returns stdout, stderr and the exit code.
func (c *cli) run(stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	return c.runEnv(os.Environ(), stdin, args...)
}

// runEnv runs gitmem in the environment env (with git's own configuration files left out),
// and returns stdout, stderr and the exit code.
func (c *cli) runEnv(env []string, stdin string, args ...string) (string, string, int) {
	c.t.Helper()
	// A command that does not end (a serve that should have been refused) fails its test
	// with what it printed, rather than hanging the package until go test's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"--data", c.data}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Dir = c.dir
	cmd.Env = append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run gitmem %v: %v", args, err)
	}
	if ctx.Err() != nil {
		c.t.Fatalf("gitmem %v still ran after %v; stdout: %s\nstderr: %s", args, runTimeout, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), code
}

// runTimeout bounds one command that cli runs.
const runTimeout = 3 * time.Minute

// ok runs gitmem and fails the test unless it succeeds.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(stdin, args...)
	if code != 0 {
		c.t.Fatalf("gitmem %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

// none runs gitmem, expects it to succeed with nothing on stdout (a list with nothing in it),
// and returns stderr, which says why.
func (c *cli) none(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(stdin, args...)
	if code != 0 || out != "" {
		c.t.Fatalf("gitmem %v: exit %d, want 0 and nothing on stdout\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return errOut
}

// failsWith runs gitmem, expects it to exit with code, and returns stderr.
func (c *cli) failsWith(code int, stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, got := c.run(stdin, args...)
	if got != code {
		c.t.Fatalf("gitmem %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, got, code, out, errOut)
	}
	return errOut
}

// fails runs gitmem, expects it to fail (TestExitCodes checks which code), and returns
// stderr.
func (c *cli) fails(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(stdin, args...)
	if code == 0 {
		c.t.Fatalf("gitmem %v: exit 0, want a failure\nstdout: %s\nstderr: %s", args, out, errOut)
	}
	return errOut
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q does not contain %q", what, got, w)
		}
	}
}

func TestMemoriesEndToEnd(t *testing.T) {
	c := newCLI(t)
	mustContain(t, "stores list, no data directory", c.fails("", "stores", "list"), "no data directory at")
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "stores list", c.none("", "stores", "list"), "no stores yet")
	mustContain(t, "create", c.ok("", "stores", "create", "prefs", "--description", "likes", "--metadata", "team=core"), "created store memstore_")

	mustContain(t, "put", c.ok("Prefers tabs\n", "put", "prefs", "/style/code.md"), "created /style/code.md", "13 bytes")
	if got := c.ok("", "cat", "prefs", "/style/code.md"); got != "Prefers tabs\n" {
		t.Errorf("cat: got %q", got)
	}
	mustContain(t, "unchanged put", c.ok("Prefers tabs\n", "put", "prefs", "/style/code.md"), "unchanged /style/code.md")
	mustContain(t, "put --if-absent", c.fails("x", "put", "prefs", "/style/code.md", "--if-absent"), "precondition failed", "already exists")
	mustContain(t, "put --if-sha", c.fails("x", "put", "prefs", "/style/code.md", "--if-sha", strings.Repeat("0", 64)), "precondition failed")

	file := filepath.Join(t.TempDir(), "n.md")
	os.WriteFile(file, []byte("from a file"), 0o644)
	c.ok("", "put", "prefs", "/notes/a.md", file)
	c.ok("", "put", "prefs", "/notes/deep/b.md", file)

	if got, want := c.ok("", "ls", "prefs"), "/notes/\n/style/\n"; got != want {
		t.Errorf("ls: got %q, want %q", got, want)
	}
	if got, want := c.ok("", "ls", "prefs", "/notes"), "/notes/a.md\n/notes/deep/\n"; got != want {
		t.Errorf("ls /notes: got %q, want %q", got, want)
	}
	if got, want := c.ok("", "ls", "prefs", "-R"), "/notes/a.md\n/notes/deep/b.md\n/style/code.md\n"; got != want {
		t.Errorf("ls -R: got %q, want %q", got, want)
	}
	var listed []map[string]any
	if err := json.Unmarshal([]byte(c.ok("", "ls", "prefs", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0]["type"] != "memory_prefix" || listed[0]["path"] != "/notes/" {
		t.Errorf("ls --json: %v", listed)
	}

	mustContain(t, "mv", c.ok("", "mv", "prefs", "/style/code.md", "/code.md"), "renamed /style/code.md to /code.md")
	mustContain(t, "mv onto a memory", c.fails("", "mv", "prefs", "/code.md", "/notes/a.md"), "already taken")
	mustContain(t, "mv under a memory", c.fails("", "mv", "prefs", "/code.md", "/notes/a.md/x"), "below memory")
	mustContain(t, "rm", c.ok("", "rm", "prefs", "/code.md"), "deleted /code.md")
	mustContain(t, "cat deleted", c.fails("", "cat", "prefs", "/code.md"), "no memory at /code.md")

	// The history of a path survives the rename and the delete.
	var versions []map[string]any
	if err := json.Unmarshal([]byte(c.ok("", "log", "prefs", "/code.md", "--json")), &versions); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, v := range versions {
		ops = append(ops, v["operation"].(string)+" "+v["path"].(string))
	}
	if got, want := strings.Join(ops, ", "), "deleted /code.md, modified /code.md, created /style/code.md"; got != want {
		t.Errorf("log /code.md: got %s, want %s", got, want)
	}
	mustContain(t, "log", c.ok("", "log", "prefs", "--limit", "2"), "OPERATION", "deleted", "/code.md")
	for _, alias := range []string{"history", "versions"} { // the guide's name, the API's
		if got, want := c.ok("", alias, "prefs", "--limit", "2"), c.ok("", "log", "prefs", "--limit", "2"); got != want {
			t.Errorf("%s: got\n%s\nwant log's\n%s", alias, got, want)
		}
	}
	mustContain(t, "reindex", c.ok("", "reindex", "prefs"), "reindexed memstore_", "6 commits", "rebuilt the search index of memstore_")
	if out := c.ok("", "reindex", "prefs", "--only", "search"); strings.Contains(out, "reindexed") || !strings.Contains(out, "rebuilt the search index") {
		t.Errorf("reindex --only search: %q", out)
	}
	c.ok("", "stores", "create", "one")
	c.ok("x\n", "put", "one", "/x.md")
	mustContain(t, "reindex of one memory", c.ok("", "reindex", "one"), ": 2 commits in", ": 1 memory in")
	if got := c.ok("", "log", "prefs", "/code.md", "--json"); !strings.Contains(got, versions[0]["id"].(string)) {
		t.Errorf("version ids changed by reindex: %s", got)
	}
	mustContain(t, "show", c.ok("", "stores", "show", "prefs"), "memories     2 (22 bytes)", "team=core")
}

func TestStoresLifecycle(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "a")
	c.ok("", "stores", "create", "dup")
	mustContain(t, "duplicate name", c.fails("", "stores", "create", "dup"), `a memory store named "dup" exists already`, "choose another name")
	// keys --store takes a name too.
	dupID := regexp.MustCompile(`memstore_[0-9A-Z]{26}`).FindString(c.ok("", "stores", "show", "dup"))
	mustContain(t, "keys --store NAME", c.ok("", "keys", "create", "--name", "k", "--store", "dup"), "store "+dupID)
	mustContain(t, "keys --store unknown", c.fails("", "keys", "create", "--name", "k2", "--store", "nope"), `no store with id or name "nope"`)
	mustContain(t, "unknown", c.fails("", "ls", "nope"), `no store with id or name "nope" in data directory `+c.data)

	var created map[string]any
	if err := json.Unmarshal([]byte(c.ok("", "stores", "create", "b", "--json")), &created); err != nil {
		t.Fatal(err)
	}
	id := created["id"].(string)
	mustContain(t, "archive", c.ok("", "stores", "archive", id), "archived store "+id)
	mustContain(t, "write to archived", c.fails("x", "put", id, "/a.md"), "archived and read-only")
	if got := c.ok("", "stores", "list"); strings.Contains(got, id) {
		t.Errorf("archived store listed without --all: %s", got)
	}
	mustContain(t, "list --all", c.ok("", "stores", "list", "--all"), id, "archived")

	mustContain(t, "delete without --yes", c.fails("", "stores", "delete", id), "pass --yes")
	mustContain(t, "delete", c.ok("", "stores", "delete", id, "--yes"), "deleted store "+id)
	mustContain(t, "show deleted", c.fails("", "stores", "show", id), "not found")
}

func TestUsageErrors(t *testing.T) {
	c := newCLI(t)
	if _, errOut, _ := c.run("", "-q", "stores", "create", "q"); errOut != "" {
		t.Errorf("-q and a new data directory: stderr %q", errOut)
	}
	os.RemoveAll(c.data)
	// As after a typo in --data, or with the server's data elsewhere: a command that reads
	// says so and makes nothing; one that writes says that it made the directory.
	out, errOut, code := c.run("", "ls", "notes", "-R")
	if code != exitNotFound || !strings.Contains(errOut, "no data directory at "+c.data+": start gitmem serve there") || !strings.Contains(errOut, "--server") {
		t.Errorf("ls without a data directory: exit %d, %q %q", code, out, errOut)
	}
	if _, err := os.Stat(c.data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ls made a data directory: %v", err)
	}
	_, errOut, _ = c.run("", "stores", "create", "s")
	mustContain(t, "a new data directory", errOut, "gitmem: made a new data directory at "+c.data)
	if _, errOut, _ := c.run("", "stores", "list"); strings.Contains(errOut, "made a new") {
		t.Errorf("a data directory that exists is called new: %s", errOut)
	}
	mustContain(t, "typo", c.fails("", "sotres"), `gitmem: unknown command "sotres"; did you mean stores? (usage: gitmem COMMAND [flags]; see "gitmem --help")`+"\n")
	mustContain(t, "missing args", c.fails("", "put", "s"), "usage: gitmem put STORE PATH [FILE|-]")
	mustContain(t, "bad path", c.fails("x", "put", "s", "notes.md"), "must start with /")
	mustContain(t, "dot segment", c.fails("x", "put", "s", "/a/../b.md"), `".." segment`)
	mustContain(t, "reserved", c.fails("x", "put", "s", "/.gitmem/x"), "reserved")
	for _, args := range [][]string{{"put", "s", "/a.md", "--if-sha", "abc"}, {"rm", "s", "/a.md", "--if-sha", "abc"}, {"put", "s", "/a.md", "--if-absent", "--if-sha", "abc"}} {
		if _, errOut, code := c.run("x", args...); code != exitUsage || !strings.Contains(errOut, "--if-") {
			t.Errorf("gitmem %v: exit %d, %q; want exit %d naming the flag", args, code, errOut, exitUsage)
		}
	}
	mustContain(t, "bad op", c.fails("", "log", "s", "--op", "renamed"), "--op must be created, modified or deleted")
	big := strings.Repeat("x", gitstore.MaxContentBytes+1)
	mustContain(t, "too big", c.fails(big, "put", "s", "/big.md"), "over the limit of 102400 bytes")
	mustContain(t, "restore with a path", c.fails("", "restore", "s", "/a.md", "memver_x"), "restore: no PATH, as the version names its memory: gitmem restore s memver_x")
	mustContain(t, "restore with a path, a name with a space", c.fails("", "restore", "User prefs", "/a.md", "memver_x"), "gitmem restore 'User prefs' memver_x")
	mustContain(t, "group typo", c.fails("", "stores", "craete", "x"), `stores: unknown command "craete"; did you mean create?`)
	mustContain(t, "another server's flag", c.fails("", "serve", "--port", "8000"), "unknown flag: --port; did you mean --addr?")
	mustContain(t, "another server's shorthand", c.fails("", "serve", "-p", "8000"), "unknown shorthand flag: 'p' in -p; did you mean --addr?")
	mustContain(t, "a port as an argument", c.fails("", "serve", "8000"), `serve: extra argument "8000"; to listen on 127.0.0.1:8000, use --addr 127.0.0.1:8000`)
	mustContain(t, "an address as an argument", c.fails("", "serve", "0.0.0.0:8000"), "use --addr 0.0.0.0:8000")
	if _, errOut, code := c.run("", "serve", "--log-level", "verbose", "--addr", "127.0.0.1:0"); code != exitUsage || !strings.Contains(errOut, `--log-level must be debug, info, warn or error, got "verbose"`) {
		t.Errorf("serve --log-level verbose: exit %d, %q", code, errOut)
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		mustContain(t, "address in use", c.fails("", "serve", "--addr", ln.Addr().String()), "address already in use", "--addr 127.0.0.1:PORT")
		fresh := &cli{t: t, data: filepath.Join(t.TempDir(), "new")}
		fresh.fails("", "serve", "--addr", ln.Addr().String())
		if _, err := os.Stat(fresh.data); !os.IsNotExist(err) {
			t.Errorf("serve on a taken address made its data directory: %v", err)
		}
		ln.Close()
	}
	mustContain(t, "flag typo", c.fails("", "ls", "s", "--recurisve"), "unknown flag: --recurisve; did you mean --recursive?")
	mustContain(t, "shorthand in the other case", c.fails("", "ls", "s", "-r"), "unknown shorthand flag: 'r' in -r; did you mean -R (--recursive)?")
	mustContain(t, "server route", c.fails("", "--server", "http://127.0.0.1:1/v1/memory_stores", "stores", "list"), "that is an API route, not the server's address")
	mustContain(t, "server below a proxy's path", c.fails("", "--server", "http://127.0.0.1:1/api/v1/gitmem", "stores", "list"), "does not answer")
	mustContain(t, "server MCP route", c.fails("", "--server", "http://127.0.0.1:1/mcp", "stores", "list"), "that is an API route", "like http://127.0.0.1:1\n")
	for _, route := range []string{"/v1/events", "/v1/version", "/v1/", "/ui/stores/s", "/git/s.git", "/metrics", "/api/v1/gitmem/v1/memory_stores/x"} {
		mustContain(t, "server route "+route, c.fails("", "--server", "http://127.0.0.1:1"+route, "stores", "list"), "that is an API route")
	}
	mustContain(t, "server proxy route", c.fails("", "--server", "http://127.0.0.1:1/api/v1/gitmem/mcp", "stores", "list"), "like http://127.0.0.1:1/api/v1/gitmem\n")
	mustContain(t, "server empty query", c.fails("", "--server", "http://127.0.0.1:1/?", "stores", "list"), "has no query")
	if out, errOut, code := c.runEnv(append(os.Environ(), "GITMEM_SERVER=localhost:8080"), "", "version"); code != 0 || !strings.HasPrefix(out, "gitmem ") {
		t.Errorf("version with a bad GITMEM_SERVER: exit %d, %q %q", code, out, errOut)
	}
	mustContain(t, "server no scheme", c.fails("", "--server", "localhost:8080", "stores", "list"), "give the server's address, like http://localhost:8080\n")
	mustContain(t, "server IP without scheme", c.fails("", "--server", "127.0.0.1:7437", "stores", "list"), "like http://127.0.0.1:7437\n")
	mustContain(t, "metadata", c.fails("", "stores", "create", "m", "--metadata", "novalue"), "want key=value")
}

// TestLockedDataDir checks that the CLI refuses a data directory that another process
// holds, and says who holds it.
func TestLockedDataDir(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "s")
	d, err := gitstore.Open(context.Background(), c.data, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := c.fails("", "stores", "list")
	mustContain(t, "locked", out, "is in use by gitmem (pid", "stop it first, or talk to it over its HTTP API")
	if n := strings.Count(out, "stop it first"); n != 1 {
		t.Errorf("the advice is given %d times, want once:\n%s", n, out)
	}
	// The test process holds the directory through the gitstore API: the error says so as a
	// LockedError, which the CLI finds with errors.Is, not by the error's text.
	_, err = gitstore.Open(context.Background(), c.data, gitstore.Options{})
	var le *gitstore.LockedError
	if !errors.Is(err, gitstore.ErrDataDirLocked) || !errors.As(err, &le) || le.Dir != c.data || gitstore.ErrorKind(err) != gitstore.KindUnavailable {
		t.Errorf("second open: %v (kind %q), want a *LockedError for %s of kind unavailable", err, gitstore.ErrorKind(err), c.data)
	}
}

// TestLogJSONActor: gitmem log --json shows the actor as the HTTP API does, with the name
// and email of the person who wrote from the terminal.
func TestLogJSONActor(t *testing.T) {
	c := newCLI(t)
	env := append(os.Environ(), "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Ada Lovelace",
		"GIT_CONFIG_KEY_1=user.email", "GIT_CONFIG_VALUE_1=ada@example.com")
	if _, errOut, code := c.runEnv(env, "", "stores", "create", "notes"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := c.runEnv(env, "engine\n", "put", "notes", "/ada.md"); code != 0 {
		t.Fatal(errOut)
	}
	var versions []struct {
		CreatedBy map[string]string `json:"created_by"`
	}
	if err := json.Unmarshal([]byte(c.ok("", "log", "notes", "--json")), &versions); err != nil {
		t.Fatal(err)
	}
	if len(versions) != 1 || versions[0].CreatedBy["name"] != "Ada Lovelace" || versions[0].CreatedBy["email"] != "ada@example.com" ||
		versions[0].CreatedBy["type"] != "user_actor" || !strings.HasPrefix(versions[0].CreatedBy["user_id"], "user_") {
		t.Errorf("log --json: %+v", versions)
	}
}

// TestLogAcrossStores: gitmem log without a store shows every store's versions, newest first,
// with their store; --since and --until take the times people type.
func TestLogAcrossStores(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "one")
	c.ok("", "stores", "create", "two")
	c.ok("a\n", "put", "one", "/a.md")
	c.ok("b\n", "put", "two", "/b.md")
	out := c.ok("", "log")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "STORE") || !strings.HasSuffix(lines[1], "two") || !strings.HasSuffix(lines[2], "one") {
		t.Errorf("log of every store:\n%s", out)
	}
	mustContain(t, "since today", c.ok("", "log", "--since", "today"), "/a.md", "/b.md")
	if out := c.ok("", "log", "--until", "yesterday"); strings.Contains(out, ".md") {
		t.Errorf("log --until yesterday:\n%s", out)
	}
	mustContain(t, "bad time", c.fails("", "log", "--since", "last week"), `--since: time "last week" must be`)
}

// TestCompletion: the shell completes store names, then the paths in the store, folder by
// folder (cobra's __complete is what the completion scripts call).
func TestCompletion(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("x\n", "put", "notes", "/a/b.md")
	c.ok("y\n", "put", "notes", "/c.md")
	mustContain(t, "stores", c.ok("", "__complete", "cat", ""), "notes\n")
	mustContain(t, "top", c.ok("", "__complete", "cat", "notes", "/"), "/a/\n", "/c.md\n")
	mustContain(t, "folder", c.ok("", "__complete", "put", "notes", "/a/"), "/a/b.md\n")
	if out := c.ok("", "__complete", "cat", "notes", "/a/"); strings.Contains(out, "/c.md") {
		t.Errorf("completion of /a/ offers /c.md:\n%s", out)
	}
}

// TestInterruptedPut: Ctrl-C while put waits for its content on standard input ends it at
// once, says so, and writes nothing.
func TestInterruptedPut(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "s")
	cmd := exec.Command(binary, "--data", c.data, "put", "s", "/typed.md")
	stdin, err := cmd.StdinPipe() // left open, as a terminal that nobody types into
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("half a line")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // into its read
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitInterrupted {
			t.Errorf("put after Ctrl-C: %v, want exit %d", err, exitInterrupted)
		}
		mustContain(t, "interrupted put", errOut.String(), "gitmem: cancelled")
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("put still waits for its input 10 s after Ctrl-C")
	}
	if out := c.ok("", "ls", "s"); strings.Contains(out, "typed.md") {
		t.Errorf("an interrupted put wrote: %s", out)
	}
}
