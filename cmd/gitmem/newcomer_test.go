package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// A call that a newcomer makes, and what it must answer: the exit code, and words that its
// stdout and its stderr must hold.
type newcomerCase struct {
	args        []string
	code        int
	stdout      []string
	stderr      []string
	stdoutExact string // if not "", stdout must be this exactly ("\x00" for nothing)
}

// checkNewcomer runs each case with c and checks it, where says how c reaches the data.
func checkNewcomer(t *testing.T, c *cli, where string, cases []newcomerCase) {
	t.Helper()
	for _, tc := range cases {
		out, errOut, code := c.run("", tc.args...)
		name := where + ": gitmem " + strings.Join(tc.args, " ")
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", name, code, tc.code, out, errOut)
		}
		mustContain(t, name+" (stdout)", out, tc.stdout...)
		mustContain(t, name+" (stderr)", errOut, tc.stderr...)
		if want := strings.TrimPrefix(tc.stdoutExact, "\x00"); tc.stdoutExact != "" && out != want {
			t.Errorf("%s: stdout %q, want %q", name, out, want)
		}
	}
}

// TestLogWithNothingToShow: gitmem log with no versions to show says so on stderr, with what
// to do, instead of a table's header alone, and prints nothing on stdout, as gitmem ls; -q
// silences it; --json stays an empty list.
func TestLogWithNothingToShow(t *testing.T) {
	c := newCLI(t)
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		t.Fatal(err)
	}
	checkNewcomer(t, c, "no stores", []newcomerCase{
		{args: []string{"log"}, stdoutExact: "\x00", stderr: []string{"no stores yet; create one with: gitmem stores create NAME"}},
	})
	c.ok("", "stores", "create", "notes")
	c.ok("", "stores", "create", "My notes")
	cases := []newcomerCase{
		{args: []string{"log"}, stdoutExact: "\x00", stderr: []string{"no versions yet; write a memory with: gitmem put STORE PATH\n"}},
		{args: []string{"log", "notes"}, stdoutExact: "\x00", stderr: []string{"no versions yet in notes; write a memory with: gitmem put notes PATH\n"}},
		{args: []string{"log", "My notes"}, stdoutExact: "\x00", stderr: []string{"gitmem put 'My notes' PATH"}},
		{args: []string{"log", "--json"}, stdoutExact: "[]\n"},
		{args: []string{"log", "notes", "--json"}, stdoutExact: "[]\n"},
	}
	checkNewcomer(t, c, "data directory", cases)
	c.ok("hello\n", "put", "notes", "/a.md")
	filtered := []newcomerCase{
		{args: []string{"log", "notes", "--op", "deleted", "--since", "1h"}, stdoutExact: "\x00", stderr: []string{"no versions match --op and --since\n"}},
		{args: []string{"log", "--until", "2001-01-01"}, stdoutExact: "\x00", stderr: []string{"no versions match --until\n"}},
		{args: []string{"log", "notes", "/a.md", "--op", "deleted", "--json"}, stdoutExact: "[]\n"},
	}
	checkNewcomer(t, c, "data directory", filtered)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", append([]newcomerCase{
		{args: []string{"log", "My notes"}, stdoutExact: "\x00", stderr: []string{"no versions yet in My notes; write a memory with: gitmem put 'My notes' PATH\n"}},
		{args: []string{"log", "My notes", "--json"}, stdoutExact: "[]\n"},
	}, filtered...))
	quietNone(t, c, "through the server", "log", "My notes")
}

// quietNone checks that gitmem ARGS -q, with nothing to show, succeeds and prints nothing at
// all, where says how c reaches the data.
func quietNone(t *testing.T, c *cli, where string, args ...string) {
	t.Helper()
	if out, errOut, code := c.run("", append(args, "-q")...); code != 0 || out != "" || errOut != "" {
		t.Errorf("%s: gitmem %s -q with nothing to show: exit %d, stdout %q, stderr %q", where, strings.Join(args, " "), code, out, errOut)
	}
}

// TestListsWithNothingToShow: every list command with nothing to list says so on stderr and
// leaves stdout empty, as log and ls do, so that a script reading stdout finds no entry that
// is not one; -q silences it; --json stays an empty list.
func TestListsWithNothingToShow(t *testing.T) {
	c := newCLI(t)
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		t.Fatal(err)
	}
	checkNewcomer(t, c, "no stores", []newcomerCase{
		{args: []string{"stores", "list"}, stdoutExact: "\x00", stderr: []string{"no stores yet; create one with: gitmem stores create NAME\n"}},
		{args: []string{"stores", "list", "--json"}, stdoutExact: "[]\n"},
		{args: []string{"keys", "list"}, stdoutExact: "\x00", stderr: []string{"no API keys: gitmem serve runs without authentication"}},
		{args: []string{"keys", "list", "--json"}, stdoutExact: "{\n  \"data\": []\n}\n"},
	})
	quietNone(t, c, "no stores", "stores", "list")
	quietNone(t, c, "no stores", "keys", "list")
	c.ok("", "stores", "create", "team")
	checkNewcomer(t, c, "data directory", []newcomerCase{
		{args: []string{"remote", "list"}, stdoutExact: "\x00", stderr: []string{"no remotes (add one with"}},
		{args: []string{"remote", "list", "team", "--json"}, stdoutExact: "[]\n"},
		// A refusal is still an error, not an empty list.
		{args: []string{"remote", "list", "nosuch"}, code: 3, stdoutExact: "\x00", stderr: []string{"nosuch"}},
	})
	quietNone(t, c, "data directory", "remote", "list")
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", []newcomerCase{
		{args: []string{"proposals", "list", "team"}, stdoutExact: "\x00", stderr: []string{"no proposals\n"}},
		{args: []string{"webhooks", "list"}, stdoutExact: "\x00", stderr: []string{"no webhooks (create one with: gitmem webhooks create URL)\n"}},
		{args: []string{"proposals", "list", "nosuch"}, code: 3, stdoutExact: "\x00", stderr: []string{"nosuch"}},
	})
	quietNone(t, c, "through the server", "proposals", "list", "team")
	quietNone(t, c, "through the server", "webhooks", "list")
}

// TestSearchWithoutStore: gitmem search with one argument that names no store takes it for
// the query the user gave without the store, and says so with the stores to search; one
// that names a store is missing its query. Both are usage errors that print nothing on stdout.
func TestSearchWithoutStore(t *testing.T) {
	c := newCLI(t)
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		t.Fatal(err)
	}
	usage := ` (usage: gitmem search STORE QUERY... [flags]; see "gitmem search --help")`
	checkNewcomer(t, c, "no stores", []newcomerCase{
		{args: []string{"search", "hello"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			`gitmem: search: "hello" names no store, so it is likely the QUERY: search takes STORE QUERY; there is no store yet: create one with "gitmem stores create NAME"` + usage}},
	})
	c.ok("", "stores", "create", "notes")
	c.ok("", "stores", "create", "My notes")
	c.ok("hello\n", "put", "notes", "/a.md")
	cases := []newcomerCase{
		{args: []string{"search", "hello"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			`gitmem: search: "hello" names no store, so it is likely the QUERY: search takes STORE QUERY, as in "gitmem search 'My notes' hello" (stores: 'My notes', notes)` + usage}},
		{args: []string{"search", "hello world"}, code: exitUsage, stderr: []string{`as in "gitmem search 'My notes' 'hello world'"`}},
		{args: []string{"search", "notes"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			`gitmem: search: missing QUERY, what to search notes for: words, "a phrase", prefix*, -word, path:/dir/` + usage}},
		{args: []string{"search"}, code: exitUsage, stderr: []string{"gitmem: search: missing STORE and QUERY: words"}},
		{args: []string{"search", "notes", "hello"}, stdout: []string{"/a.md"}},
	}
	checkNewcomer(t, c, "data directory", cases)
	for i := range 5 { // more stores than a message names
		c.ok("", "stores", "create", fmt.Sprintf("more%d", i))
	}
	many := []newcomerCase{{args: []string{"search", "hello"}, code: exitUsage, stderr: []string{
		`"hello" names no store, so it is likely the QUERY: search takes STORE QUERY, as in "gitmem search STORE hello" ("gitmem stores list" lists the stores)` + usage}}}
	checkNewcomer(t, c, "data directory", many)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", append(cases[2:], many...))
}

// TestUntilToday: --until today (and a date, or yesterday) takes in the whole day, as git
// log --until=today does, while --since today starts at its midnight; log and revert agree,
// locally and through a server. A bad --until is a usage error.
func TestUntilToday(t *testing.T) {
	now := time.Now()
	day := now.Format(time.DateOnly)
	if now.Add(time.Minute).Format(time.DateOnly) != day {
		t.Skip("today ends within the minute that the test takes")
	}
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	asSession(t, c, "notes", func(s *gitstore.Store, a gitstore.Actor) {
		if _, err := s.Write(context.Background(), gitstore.WriteInput{Path: "/a.md", Content: "today\n", Actor: a}); err != nil {
			t.Fatal(err)
		}
	})
	session := "sesn_01CLIREVERT00000000000000"
	cases := []newcomerCase{
		{args: []string{"log", "notes", "--until", "today"}, stdout: []string{"created    /a.md"}},
		{args: []string{"log", "notes", "--until", day}, stdout: []string{"created    /a.md"}},
		{args: []string{"log", "notes", "--since", "today", "--until", "today"}, stdout: []string{"created    /a.md"}},
		{args: []string{"log", "--until", "today"}, stdout: []string{"/a.md"}},
		{args: []string{"log", "notes", "--until", "yesterday"}, stdoutExact: "\x00", stderr: []string{"no versions match --until\n"}},
		{args: []string{"log", "notes", "--until", "tomorrow"}, code: exitUsage, stderr: []string{`gitmem: log: --until: time "tomorrow" must be`}},
		{args: []string{"revert", "notes", "--session", session, "--until", "today", "--dry-run"}, stdout: []string{"would revert 1,"}},
		{args: []string{"revert", "notes", "--session", session, "--until", "yesterday", "--dry-run"}, stdout: []string{"changed no memory in that range"}},
	}
	checkNewcomer(t, c, "data directory", cases)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", cases)
	if got := c.ok("", "cat", "notes", "/a.md"); got != "today\n" {
		t.Errorf("a dry run changed /a.md: %q", got)
	}
}

// TestPutContentAsFile: gitmem put with the content where FILE goes says what FILE is and how
// to give the content, as a usage error; a folder as FILE is one too.
func TestPutContentAsFile(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	cases := []newcomerCase{
		{args: []string{"put", "notes", "/a/b.md", "hello"}, code: exitUsage, stderr: []string{
			`gitmem: put: no file "hello": FILE names a file to read the content from; to give the content itself, pipe it in: echo hello | gitmem put notes /a/b.md (usage: gitmem put STORE PATH [FILE|-] [flags]; see "gitmem put --help")`}},
		{args: []string{"put", "notes", "/a/b.md", "hello world"}, code: exitUsage, stderr: []string{`echo 'hello world' | gitmem put notes /a/b.md (usage:`}},
		{args: []string{"put", "notes", "/a/b.md", t.TempDir()}, code: exitUsage, stderr: []string{"is a folder, not a file to read the content from (usage:"}},
	}
	checkNewcomer(t, c, "data directory", cases)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", cases)
	if out := c.ok("", "ls", "notes", "-R"); out != "" {
		t.Errorf("a refused put wrote: %q", out)
	}
}

// TestFolderAsMemoryPath: the commands that take one memory's path, given a folder's (with or
// without its trailing /) or a name without its .md, say what is there and what to run.
func TestFolderAsMemoryPath(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("hello\n", "put", "notes", "/a/b.md")
	folder := `/a/ is a folder: list it with "gitmem ls notes /a/"`
	slash := `PATH /a/ ends in /, so it names a folder, not a memory: list it with "gitmem ls notes /a/" (usage: gitmem `
	cases := []newcomerCase{
		{args: []string{"cat", "notes", "/a"}, code: exitNotFound, stderr: []string{"no memory at /a; " + folder}},
		{args: []string{"rm", "notes", "/a"}, code: exitNotFound, stderr: []string{"no memory at /a; " + folder}},
		{args: []string{"mv", "notes", "/a", "/b"}, code: exitNotFound, stderr: []string{"no memory at /a; " + folder}},
		{args: []string{"blame", "notes", "/a"}, code: exitNotFound, stderr: []string{"no memory at /a; " + folder}},
		{args: []string{"log", "notes", "/a"}, code: exitNotFound, stderr: []string{"no memory is or was at /a; " + folder}},
		{args: []string{"diff", "notes", "/a"}, code: exitNotFound, stderr: []string{"no memory is or was at /a; " + folder}},
		{args: []string{"cat", "notes", "/a/b"}, code: exitNotFound, stderr: []string{"no memory at /a/b; did you mean /a/b.md?"}},
		{args: []string{"cat", "notes", "/zz"}, code: exitNotFound, stderr: []string{"gitmem: no memory at /zz\n"}},
		{args: []string{"cat", "notes", "/a/"}, code: exitUsage, stderr: []string{"gitmem: cat: " + slash + "cat"}},
		{args: []string{"rm", "notes", "/a/"}, code: exitUsage, stderr: []string{"gitmem: rm: " + slash + "rm"}},
		{args: []string{"blame", "notes", "/a/"}, code: exitUsage, stderr: []string{"gitmem: blame: " + slash + "blame"}},
		{args: []string{"diff", "notes", "/a/"}, code: exitUsage, stderr: []string{"gitmem: diff: " + slash + "diff"}},
		{args: []string{"mv", "notes", "/a/", "/b/"}, code: exitUsage, stderr: []string{"gitmem: mv: FROM /a/ ends in /"}},
		{args: []string{"log", "notes", "/a/"}, code: exitUsage, stderr: []string{`gitmem: log: PATH /a/ ends in /, so it names a folder, not a memory: the versions of a whole store are in "gitmem log notes"`}},
		{args: []string{"put", "notes", "/a/"}, code: exitUsage, stderr: []string{"gitmem: put: PATH /a/ ends in /, so it names a folder: a memory's path ends in its name, such as /a/NAME.md"}},
		{args: []string{"mv", "notes", "/a/b.md", "/c/"}, code: exitUsage, stderr: []string{`gitmem: mv: TO /c/ ends in /, so it names a folder: give the memory's new path in it, as in "gitmem mv notes /a/b.md /c/b.md"`}},
	}
	checkNewcomer(t, c, "data directory", cases)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", cases)
	if got := c.ok("", "ls", "notes", "-R"); got != "/a/b.md\n" {
		t.Errorf("the refused calls changed the store: %q", got)
	}
}

// TestNotFoundHintCost: the hint of cat, rm and mv on a missing memory costs at most one
// request to the server beyond the command's own read (each counts against a key's rate
// limit), and cat --at hints from the version it read, not from the current tree.
func TestNotFoundHintCost(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("hello\n", "put", "notes", "/a/b.md")
	c.ok("then\n", "put", "notes", "/x.md")
	time.Sleep(1100 * time.Millisecond) // --at reads to the second
	then := time.Now().UTC().Format(time.RFC3339)
	time.Sleep(1100 * time.Millisecond)
	c.ok("", "rm", "notes", "/x.md")
	c.ok("now\n", "put", "notes", "/x/y.md")
	folder := `; /x/ is a folder: list it with "gitmem ls notes /x/"`
	asOf := []newcomerCase{
		{args: []string{"cat", "notes", "/x", "--at", then}, code: exitNotFound, stdoutExact: "\x00", stderr: []string{"did you mean /x.md?\n"}},
		{args: []string{"cat", "notes", "/x"}, code: exitNotFound, stderr: []string{"no memory at /x" + folder + "\n"}},
		{args: []string{"cat", "notes", "/x.md"}, code: exitNotFound, stderr: []string{"gitmem: no memory at /x.md\n"}},
	}
	checkNewcomer(t, c, "data directory", asOf)
	url, _ := serveForGit(t, c)
	checkNewcomer(t, c, "through the server", asOf)

	// The listings the server answered for one command: the command's own read of the
	// path's folder, and the hint's.
	listings := func(args ...string) (float64, string) {
		t.Helper()
		_, before := scrape(t, url+"/metrics", "")
		_, errOut, _ := c.run("", args...)
		_, after := scrape(t, url+"/metrics", "")
		route := []string{"route", "/v1/memory_stores/:store/memories", "method", "GET"}
		return value(after, "gitmem_http_requests_total", route...) - max(value(before, "gitmem_http_requests_total", route...), 0), errOut
	}
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"cat", "notes", "/a/b"}, "did you mean /a/b.md?"},
		{[]string{"cat", "notes", "/x"}, folder},
		{[]string{"cat", "notes", "/zz"}, "no memory at /zz\n"},
		{[]string{"cat", "notes", "/x", "--at", then}, "did you mean /x.md?"},
		{[]string{"rm", "notes", "/a/b"}, "did you mean /a/b.md?"},
		{[]string{"rm", "notes", "/zz"}, "no memory at /zz\n"},
		{[]string{"mv", "notes", "/x", "/y.md"}, folder},
		{[]string{"mv", "notes", "/a/b", "/y.md"}, "did you mean /a/b.md?"},
	} {
		n, errOut := listings(tc.args...)
		mustContain(t, strings.Join(tc.args, " "), errOut, tc.hint)
		if n < 1 || n > 2 {
			t.Errorf("gitmem %s: %v listings, want the read and at most one for the hint", strings.Join(tc.args, " "), n)
		}
	}
	if got := c.ok("", "ls", "notes", "-R"); got != "/a/b.md\n/x/y.md\n" {
		t.Errorf("the refused calls changed the store: %q", got)
	}
}

// TestEmptyListing: gitmem ls that lists nothing says why on stderr (an empty store, nothing
// below the prefix, a prefix that is a memory's path), with stdout empty for scripts; a
// PREFIX without its leading / is a usage error that names PREFIX, not the API's field.
func TestEmptyListing(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("", "stores", "create", "My notes")
	c.ok("hello\n", "put", "notes", "/a/b.md")
	cases := []newcomerCase{
		{args: []string{"ls", "My notes"}, stdoutExact: "\x00", stderr: []string{"no memories in My notes yet; write one with: gitmem put 'My notes' PATH\n"}},
		{args: []string{"ls", "notes", "/nope"}, stdoutExact: "\x00", stderr: []string{`nothing below /nope/ ("gitmem ls notes" lists the top of the store)`}},
		{args: []string{"ls", "notes", "/a/b.md"}, stdoutExact: "\x00", stderr: []string{`nothing below /a/b.md/: /a/b.md is a memory; print it with "gitmem cat notes /a/b.md"`}},
		{args: []string{"ls", "notes", "--at", "2001-01-01"}, stdoutExact: "\x00", stderr: []string{"no memories below / as of 2001-01-01"}},
		{args: []string{"ls", "notes", "/nope", "--json"}, stdoutExact: "[]\n"},
		{args: []string{"ls", "notes", "a/"}, code: exitUsage, stderr: []string{`gitmem: ls: PREFIX "a/" must start with /, as in /a/ (usage: gitmem ls`}},
		{args: []string{"log", "notes", "--op", "create"}, code: exitUsage, stderr: []string{`gitmem: log: --op must be created, modified or deleted, got "create" (usage: gitmem log`}},
	}
	checkNewcomer(t, c, "data directory", cases)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", cases)
	if _, errOut, _ := c.run("", "ls", "notes", "/nope", "-q"); errOut != "" {
		t.Errorf("ls -q printed %q", errOut)
	}
}

// TestImportClone: gitmem import --dir of a clone of a store (git clone of its /git/ URL)
// skips the clone's .gitmem/ as it skips .git, instead of refusing the whole folder.
func TestImportClone(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("hello\n", "put", "notes", "/a/b.md")
	url, _ := serveForGit(t, c)
	parent := t.TempDir()
	gitIn(t, parent, "clone", "-q", url+"/git/notes.git", "clone")
	dir := filepath.Join(parent, "clone")
	if _, err := os.Stat(filepath.Join(dir, ".gitmem", "store.json")); err != nil {
		t.Fatalf("the clone has no store.json: %v", err)
	}
	out, errOut, code := c.run("", "import", "--dir", dir, "copy", "--create")
	if code != 0 {
		t.Fatalf("import --dir of a clone: exit %d, %s", code, errOut)
	}
	mustContain(t, "import of a clone", out, "1 created, 0 unchanged, 0 updated")
	mustContain(t, "import of a clone", errOut, "skipped "+filepath.Join(dir, ".gitmem")+" (a store's own metadata, never a memory)")
	if got := c.ok("", "ls", "copy", "-R"); got != "/a/b.md\n" {
		t.Errorf("ls copy -R after the import: %q", got)
	}
}

// TestBackupIntoDataDir: gitmem backup refuses a DEST that is the data directory or inside
// it (also by a symbolic link, or as a .tar), which it would copy into itself, and writes
// nothing there.
func TestBackupIntoDataDir(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("hello\n", "put", "notes", "/a/b.md")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(c.data, link); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{c.data, filepath.Join(c.data, "backup"), filepath.Join(c.data, "b.tar"), filepath.Join(link, "backup"), c.data + "/stores/.."} {
		_, errOut, code := c.run("", "backup", dest)
		if code != exitUsage || !strings.Contains(errOut, "gitmem: backup: DEST "+dest+" is in the data directory "+c.data+", which the backup copies") {
			t.Errorf("backup %s: exit %d, %q; want exit %d and that DEST is in the data directory", dest, code, errOut, exitUsage)
		}
	}
	for _, name := range []string{"manifest.json", "backup", "b.tar"} {
		if _, err := os.Stat(filepath.Join(c.data, name)); err == nil {
			t.Errorf("a refused backup wrote %s into the data directory", name)
		}
	}
	mustContain(t, "a backup beside it", c.ok("", "backup", c.data+"-backup"), "backed up 1 store")
}

// TestKeyAccessMistyped: a mistyped --access is a usage error that names the flag and the
// level it likely meant, and makes no key.
func TestKeyAccessMistyped(t *testing.T) {
	c := newCLI(t)
	checkNewcomer(t, c, "data directory", []newcomerCase{
		{args: []string{"keys", "create", "--name", "dash", "--access", "readonly"}, code: 2,
			stderr: []string{`--access "readonly" is not an access level: did you mean --access read_only?`, "usage: "}},
		{args: []string{"keys", "create", "--name", "dash", "--access", "Read-Write"}, code: 2,
			stderr: []string{"did you mean --access read_write?"}},
		{args: []string{"keys", "create", "--name", "dash", "--access", "admin"}, code: 2,
			stderr: []string{`--access "admin" is not an access level: give read_write, read_only or propose`}},
		{args: []string{"keys", "list"}, stdoutExact: "\x00", stderr: []string{"no API keys"}},
	})
}

// TestWithin: a DEST is in the data directory as the file system reads it: a .. after a
// symbolic link goes up from where the link leads, not from the link.
func TestWithin(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(filepath.Join(data, "stores", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(other, "link") // other/link -> data/stores/deep
	if err := os.Symlink(filepath.Join(data, "stores", "deep"), link); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		filepath.Join(data, "b"):                 true,
		data:                                     true,
		link + "/../../b":                        true, // data/b
		link + "/../new/../x":                    true, // data/stores/x
		other + "/new/../link/../../b":           true, // data/b, once new is made
		filepath.Join(other, "b"):                false,
		filepath.Join(other, "new") + "/../b":    false,
		filepath.Join(root, "data-backup"):       false,
		filepath.Join(data, "..", "data-backup"): false,
	} {
		if got := within(p, data); got != want {
			t.Errorf("within(%s) = %v, want %v", p, got, want)
		}
	}
}

// TestSearchMistyped: the mistakes of a search's command line are usage errors in the
// CLI's terms, the same locally and through a server: a QUERY that starts with - (taken for
// flags) says to put it after --, an empty QUERY and a --limit or --lines out of range name
// what is wrong instead of the API's query parameters (or a default taken for 0), and a
// query of exclusions alone says what to add.
func TestSearchMistyped(t *testing.T) {
	c := newCLIWithNote(t)
	usage := ` (usage: gitmem search STORE QUERY... [flags]; see "gitmem search --help")`
	cases := []newcomerCase{
		{args: []string{"search", "notes", "-hello"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			`; a QUERY that starts with - goes after --, as in "gitmem search STORE -- -word"` + usage}},
		{args: []string{"search", "notes", "--", "-zzz", "hello"}, stdout: []string{"/a/b.md"}},
		{args: []string{"search", "notes", ""}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			`gitmem: search: QUERY is empty; say what to search notes for: words, "a phrase", prefix*, -word, path:/dir/` + usage}},
		{args: []string{"search", "notes", " "}, code: exitUsage, stderr: []string{"QUERY is empty"}},
		{args: []string{"search", "notes", "hello", "--limit", "0"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			"gitmem: search: --limit takes 1 to 100, got 0" + usage}},
		{args: []string{"search", "notes", "hello", "-n", "101"}, code: exitUsage, stderr: []string{"--limit takes 1 to 100, got 101"}},
		{args: []string{"search", "notes", "hello", "--lines", "0"}, code: exitUsage, stderr: []string{"--lines takes 1 to 20, got 0"}},
		{args: []string{"search", "notes", "hello", "--lines", "21"}, code: exitUsage, stderr: []string{"--lines takes 1 to 20, got 21"}},
		{args: []string{"search", "notes", "--", "-hello"}, code: exitUsage, stderr: []string{
			"gitmem: the search query has no words to search for, only ones to leave out (-word): add a word to find, or path:/dir/ to list a folder (path:/ every memory)"}},
		{args: []string{"search", "notes", "path:/ -zzz"}, stdout: []string{"/a/b.md"}},
	}
	checkBothWays(t, c, cases)
}

// TestPathWithoutSlash: a memory path without its leading / says what it should have been,
// in every command that takes one, locally and through a server (where the API says it).
func TestPathWithoutSlash(t *testing.T) {
	c := newCLIWithNote(t)
	cases := []newcomerCase{
		{args: []string{"cat", "notes", "a/b.md"}, code: exitUsage, stderr: []string{`gitmem: path "a/b.md" must start with /, as in "/a/b.md"`}},
		{args: []string{"rm", "notes", "a/b.md"}, code: exitUsage, stderr: []string{`must start with /, as in "/a/b.md"`}},
		{args: []string{"mv", "notes", "/a/b.md", "c.md"}, code: exitUsage, stderr: []string{`path "c.md" must start with /, as in "/c.md"`}},
		{args: []string{"search", "notes", "hello", "--path-prefix", "a/"}, code: exitUsage, stderr: []string{`path "a" must start with /, as in "/a"`}},
	}
	checkBothWays(t, c, cases)
}

// TestImportDirNotAFolder: import --dir of a folder that does not exist, or of a file (a
// bundle given with --dir), is a wrong call (exit 2) that says which, as put's FILE is,
// not an I/O error (exit 1) in the terms of stat.
func TestImportDirNotAFolder(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	file := filepath.Join(t.TempDir(), "notes.bundle")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	usage := ` (usage: gitmem import FILE|URL | import --dir DIR STORE [flags]; see "gitmem import --help")`
	cases := []newcomerCase{
		{args: []string{"import", "--dir", missing, "notes"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			"gitmem: import: --dir " + missing + ": no such folder" + usage}},
		{args: []string{"import", "--dir", file, "notes"}, code: exitUsage, stderr: []string{
			"gitmem: import: --dir " + file + " is a file, not a folder (a bundle is imported without --dir: gitmem import FILE)" + usage}},
	}
	checkBothWays(t, c, cases)
}

// newCLIWithNote is a data directory with a store notes that holds /a/b.md ("hello").
func newCLIWithNote(t *testing.T) *cli {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("hello\n", "put", "notes", "/a/b.md")
	return c
}

// checkBothWays checks the cases on c's data directory, and then through a server that
// holds it.
func checkBothWays(t *testing.T, c *cli, cases []newcomerCase) {
	t.Helper()
	checkNewcomer(t, c, "data directory", cases)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", cases)
}

// TestStoreMistyped: a store's name mistyped by a letter or two, or in another case, is not
// found (exit 3) with the names it likely meant; a name near none, or too short to be near
// one, is not found without a guess.
func TestStoreMistyped(t *testing.T) {
	c := newCLIWithNote(t)
	c.ok("", "stores", "create", "My prefs")
	cases := []newcomerCase{
		{args: []string{"ls", "note"}, code: exitNotFound, stdoutExact: "\x00", stderr: []string{`(see "gitmem stores list --all"); did you mean notes?` + "\n"}},
		{args: []string{"cat", "Notes", "/a/b.md"}, code: exitNotFound, stderr: []string{"; did you mean notes?"}},
		{args: []string{"search", "my prefz", "tabs"}, code: exitNotFound, stderr: []string{"; did you mean 'My prefs'?"}},
		{args: []string{"ls", "zz"}, code: exitNotFound, stderr: []string{`no store with id or name "zz"`, `(see "gitmem stores list --all")` + "\n"}},
	}
	checkBothWays(t, c, cases)
}

// TestAtMistyped: an --at of no form that it takes is a usage error that names --at (not the
// API's ?at=), with the command's usage line and exit 2, as --until's is, locally and through
// a server, in every command that takes --at.
func TestAtMistyped(t *testing.T) {
	c := newCLIWithNote(t)
	must := `--at "last monday" must be ` + gitstore.AtFormHint
	cases := []newcomerCase{
		{args: []string{"cat", "notes", "/a/b.md", "--at", "last monday"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			"gitmem: cat: " + must + ` (usage: gitmem cat STORE PATH [flags]; see "gitmem cat --help")` + "\n"}},
		{args: []string{"ls", "notes", "--at", "last monday"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			"gitmem: ls: " + must + ` (usage: gitmem ls STORE [PREFIX] [flags]; see "gitmem ls --help")` + "\n"}},
		{args: []string{"mount", "notes", t.TempDir(), "--at", "last monday"}, code: exitUsage, stderr: []string{
			"gitmem: mount: " + must + ` (usage: gitmem mount STORE DIR [flags]; see "gitmem mount --help")`}},
		{args: []string{"log", "notes", "--until", "last monday"}, code: exitUsage, stderr: []string{
			`gitmem: log: --until: time "last monday" must be`, `(usage: gitmem log [STORE [PATH]] [flags]`}},
		{args: []string{"cat", "notes", "/a/b.md", "--at", "now"}, stdout: []string{"hello"}},
	}
	checkBothWays(t, c, cases)
}

// TestAtNamesNoCommit: an --at of a commit hash's form that names no commit of the store (7
// digits, or all 40) is a usage error in the CLI's words, as one of no form is: it names --at
// (not the API's ?at=), says what to pass instead, with the usage line and exit 2, locally and
// through a server, in every command that takes --at. A time before the store's first
// commit is no such error: it reads the store when it was empty.
func TestAtNamesNoCommit(t *testing.T) {
	c := newCLIWithNote(t)
	names := func(at string) string {
		return `--at "` + at + `" names no commit of the history of notes: pass one that "git log --first-parent main" shows in the store's repository, or a time (such as a version's in "gitmem log notes")`
	}
	full := strings.Repeat("ab", 20)
	cases := []newcomerCase{
		{args: []string{"cat", "notes", "/a/b.md", "--at", "deadbee"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			"gitmem: cat: " + names("deadbee") + ` (usage: gitmem cat STORE PATH [flags]; see "gitmem cat --help")` + "\n"}},
		{args: []string{"ls", "notes", "--at", full}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			"gitmem: ls: " + names(full) + ` (usage: gitmem ls STORE [PREFIX] [flags]; see "gitmem ls --help")` + "\n"}},
		{args: []string{"mount", "notes", t.TempDir(), "--at", "deadbee"}, code: exitUsage, stderr: []string{
			"gitmem: mount: " + names("deadbee") + ` (usage: gitmem mount STORE DIR [flags]; see "gitmem mount --help")`}},
		{args: []string{"ls", "notes", "--at", "2000-01-01"}, stdoutExact: "\x00", stderr: []string{"no memories below / as of 2000-01-01"}},
		{args: []string{"cat", "notes", "/a/b.md", "--at", "2000-01-01"}, code: exitNotFound, stderr: []string{"no memory at /a/b.md"}},
	}
	checkBothWays(t, c, cases)
}

// TestIntFlagMistyped: a flag of a whole number given something else says that it takes a
// number (from its range, where the command has one) and what it got, not strconv's words,
// with the usage line and exit 2, for every such flag of the CLI.
func TestIntFlagMistyped(t *testing.T) {
	c := newCLIWithNote(t)
	cases := []newcomerCase{
		{args: []string{"log", "notes", "-n", "abc"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			`gitmem: log: --limit takes a whole number, got "abc" (usage: gitmem log [STORE [PATH]] [flags]; see "gitmem log --help")` + "\n"}},
		{args: []string{"search", "notes", "hello", "--limit", "abc"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{
			`gitmem: search: --limit takes a number from 1 to 100, got "abc" (usage: gitmem search STORE QUERY... [flags]; see "gitmem search --help")` + "\n"}},
		{args: []string{"search", "notes", "hello", "--lines", "x"}, code: exitUsage, stderr: []string{`gitmem: search: --lines takes a number from 1 to 20, got "x" (usage: `}},
		{args: []string{"log", "-n", "99999999999999999999"}, code: exitUsage, stderr: []string{`--limit takes a whole number, got 99999999999999999999, which is too large (usage: `}},
		{args: []string{"serve", "--max-conns", "many"}, code: exitUsage, stderr: []string{`gitmem: serve: --max-conns takes a whole number more than 0, got "many" (usage: `}},
		{args: []string{"agent", "--store", "notes", "--max-turns", "x", "task"}, code: exitUsage, stderr: []string{`gitmem: agent: --max-turns takes a whole number, got "x" (usage: `}},
		{args: []string{"serve", "--max-conns", "0"}, code: exitUsage, stderr: []string{`"--max-conns" flag: must be more than 0`}}, // a number: its own words
	}
	checkNewcomer(t, c, "data directory", cases)
}
