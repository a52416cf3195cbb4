package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitIn runs the git CLI in dir, as Ann, without the user's or the system's configuration.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@example.com", "GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=ann@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func needGitCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

var storeIDRe = regexp.MustCompile(`memstore_[0-9A-Z]{26}`)

// snapshot is what must be the same in a store and its import: the versions (ids, memories,
// paths, actors, times), the memories and the commits.
func snapshot(t *testing.T, c *cli, store string) string {
	t.Helper()
	repo := filepath.Join(c.data, "stores", store+".git")
	show := regexp.MustCompile(`(?m)^repository .*\n`).ReplaceAllString(c.ok("", "stores", "show", store), "")
	return c.ok("", "log", store, "-n", "0", "--json") + c.ok("", "log", store, "-n", "0") +
		c.ok("", "ls", store, "-R", "--json") + show +
		gitIn(t, repo, "log", "--format=%H %an <%ae> %at %s")
}

// TestExportImport: a store with gitmem's commits and a person's commit survives export and
// import into another data directory with the same ids, versions, actors, times and commits;
// git clone of the bundle works; a second import of the same id is refused.
func TestExportImport(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	store := storeIDRe.FindString(c.ok("", "stores", "create", "prefs", "--description", "likes"))
	c.ok("Prefers tabs\n", "put", "prefs", "/style/code.md")
	c.ok("notes\n", "put", "prefs", "/notes/a.md")
	c.ok("", "mv", "prefs", "/style/code.md", "/code.md")
	c.ok("", "rm", "prefs", "/notes/a.md")
	// A commit made by a person with plain git: its ids are derived from the commit.
	work := t.TempDir()
	gitIn(t, work, "clone", "-q", filepath.Join(c.data, "stores", store+".git"), "w")
	wt := filepath.Join(work, "w")
	os.MkdirAll(filepath.Join(wt, "people"), 0o755)
	os.WriteFile(filepath.Join(wt, "people", "ann.md"), []byte("Ann likes tea\n"), 0o644)
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "about Ann")
	gitIn(t, wt, "push", "-q", "origin", "main")

	bundle := filepath.Join(t.TempDir(), "prefs.bundle")
	mustContain(t, "export", c.ok("", "export", "prefs", bundle), "exported store "+store+" (prefs) to "+bundle+": 6 commits")
	if out := c.ok("", "export", store, "-"); !strings.HasPrefix(out, "# v2 git bundle\n") {
		t.Errorf("export to stdout: %.40q", out)
	}
	// A person can clone the bundle, and gets main checked out.
	gitIn(t, work, "clone", "-q", bundle, "fromBundle")
	if b, err := os.ReadFile(filepath.Join(work, "fromBundle", "people", "ann.md")); err != nil || string(b) != "Ann likes tea\n" {
		t.Errorf("clone of the bundle: %q %v", b, err)
	}

	c2 := newCLI(t)
	mustContain(t, "import", c2.ok("", "import", bundle), "imported store "+store+" (prefs) from "+bundle+": 2 memories, 5 versions, 6 commits")
	if a, b := snapshot(t, c, store), snapshot(t, c2, store); a != b {
		t.Errorf("the import differs from the source:\n--- source\n%s\n--- import\n%s", a, b)
	}
	mustContain(t, "second import", c2.fails("", "import", bundle),
		"store "+store+` already exists (name "prefs"); delete it first; nothing was imported`)
	// The imported store takes writes, and a reindex derives the same ids again.
	c2.ok("more\n", "put", store, "/more.md")
	before := c2.ok("", "log", store, "-n", "0", "--json")
	c2.ok("", "reindex", store, "--only", "catalog")
	if after := c2.ok("", "log", store, "-n", "0", "--json"); after != before {
		t.Errorf("reindex after import changed the versions")
	}

	// --name renames the imported store (in a third data directory).
	c3 := newCLI(t)
	mustContain(t, "import --name", c3.ok("", "import", bundle, "--name", "copy"), "imported store "+store+" (copy)")
	bad := c3.failsWith(exitError, "", "import", filepath.Join(work, "nothing-here")) // as a network failure would
	mustContain(t, "bad source", bad, "could not fetch main from", "nothing was imported", "git fetch failed")
	if n := strings.Count(bad, "does not appear to be a git repository"); n != 1 {
		t.Errorf("git's own message is shown %d times, want once:\n%s", n, bad)
	}
}

// TestImportRefusesBadHistory: a history with a commit that breaks a push rule is refused with
// the commit, the file and the rule, and leaves no store behind.
func TestImportRefusesBadHistory(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	store := storeIDRe.FindString(c.ok("", "stores", "create", "prefs"))
	c.ok("hello\n", "put", "prefs", "/a.md")
	work := t.TempDir()
	gitIn(t, work, "clone", "-q", filepath.Join(c.data, "stores", store+".git"), "w")
	wt := filepath.Join(work, "w")
	os.WriteFile(filepath.Join(wt, "big.md"), []byte(strings.Repeat("x", 200*1024)), 0o644)
	os.Symlink("a.md", filepath.Join(wt, "link.md"))
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "big and linked")
	bad := strings.TrimSpace(gitIn(t, wt, "rev-parse", "--short=7", "HEAD"))
	gitIn(t, wt, "rm", "-q", "big.md", "link.md")
	gitIn(t, wt, "commit", "-qm", "fixed later")
	bundle := filepath.Join(work, "bad.bundle")
	gitIn(t, wt, "bundle", "create", "-q", bundle, "main")

	c2 := newCLI(t)
	out := c2.failsWith(exitUsage, "", "import", bundle)
	mustContain(t, "refused import", out, "refused to import "+bundle+"; nothing was imported:",
		`/big.md: content is 204800 bytes; the limit is 102400 bytes (commit `+bad+` "big and linked")`,
		`/link.md: a symbolic link: memories are plain files, mode 100644 only (commit `+bad+` "big and linked")`)
	mustContain(t, "no store", c2.none("", "stores", "list", "--all"), "no stores yet")
	if entries, _ := os.ReadDir(filepath.Join(c2.data, "stores")); len(entries) != 0 {
		t.Errorf("the refused import left %v", entries)
	}
	// A git repository that is not a store.
	other := filepath.Join(work, "other")
	gitIn(t, work, "init", "-q", "-b", "main", "other")
	os.WriteFile(filepath.Join(other, "x.md"), []byte("x"), 0o644)
	gitIn(t, other, "add", "-A")
	gitIn(t, other, "commit", "-qm", "x")
	mustContain(t, "not a store", c2.failsWith(exitUsage, "", "import", "file://"+other), "/.gitmem/store.json: missing on main")
	mustContain(t, "an empty --name", c2.failsWith(exitUsage, "", "import", "file://"+other, "--name", " "), "--name is empty", "usage: ")
	if entries, _ := os.ReadDir(filepath.Join(c2.data, "stores")); len(entries) != 0 {
		t.Errorf("the refused imports left %v", entries)
	}
}

// TestImportFromServer imports a store from a running gitmem's /git/{id}.git.
func TestImportFromServer(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	url, _ := serveForGit(t, c)
	store := createStoreForGit(t, url)
	for _, p := range []string{"a.md", "b/c.md"} {
		req, _ := http.NewRequest("POST", url+"/v1/memory_stores/"+store+"/memories", strings.NewReader(`{"path":"/`+p+`","content":"hi"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("write %s: %d", p, resp.StatusCode)
		}
	}
	c2 := newCLI(t)
	mustContain(t, "import", c2.ok("", "import", url+"/git/"+store+".git"), "imported store "+store+" (notes)", "2 memories, 2 versions, 3 commits")
	resp, err := http.Get(url + "/v1/memory_stores/" + store + "/memory_versions")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, id := range regexp.MustCompile(`(memver|mem)_[0-9A-Z]{26}`).FindAllString(c2.ok("", "log", store, "--json"), -1) {
		mustContain(t, "server's versions", string(body), `"`+id+`"`)
	}
}
