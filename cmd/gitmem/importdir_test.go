package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportDir loads a folder of nested files into a store: a folder with a file that is
// not UTF-8, a symbolic link or an oversized file is refused up front with nothing written;
// a clean one becomes one version per file; a second run leaves equal memories alone and
// refuses changed ones unless --overwrite.
func TestImportDir(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(t.TempDir(), "notes")
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.md", "alpha\n")
	write("projects/x/plan.md", "the plan\n")
	write("projects/y.md", "why\n")
	write(".git/config", "[core]\n") // the folder's own repository: skipped
	write("bad.md", "caf\xe9\n")     // Latin-1, not UTF-8
	write("big.md", strings.Repeat("x", 102401))
	os.Symlink("a.md", filepath.Join(dir, "link.md"))

	mustContain(t, "no store", c.fails("", "import", "--dir", dir, "prefs"), `no store with id or name "prefs"`)
	out := c.fails("", "import", "--dir", dir, "prefs", "--create")
	mustContain(t, "refused", out, "refused to import "+dir+"; nothing was written:",
		"/bad.md: content is not valid UTF-8 (first bad byte at offset 3)",
		"/big.md: content is 102401 bytes; the limit is 102400 bytes",
		"/link.md: a symbolic link")
	mustContain(t, "nothing created", c.none("", "stores", "list"), "no stores yet")
	c.ok("", "stores", "create", "prefs")
	c.fails("", "import", "--dir", dir, "prefs")
	if got := c.ok("", "ls", "prefs", "-R"); got != "" {
		t.Errorf("a refused import wrote %q", got)
	}

	os.Remove(filepath.Join(dir, "bad.md"))
	os.Remove(filepath.Join(dir, "big.md"))
	os.Remove(filepath.Join(dir, "link.md"))
	out = c.ok("", "import", "--dir", dir, "prefs")
	mustContain(t, "import", out, "(prefs): 3 created, 0 unchanged, 0 updated")
	if got, want := c.ok("", "ls", "prefs", "-R"), "/a.md\n/projects/x/plan.md\n/projects/y.md\n"; got != want {
		t.Errorf("ls after import: got %q, want %q", got, want)
	}
	if got := c.ok("", "cat", "prefs", "/projects/x/plan.md"); got != "the plan\n" {
		t.Errorf("cat: %q", got)
	}
	mustContain(t, "one version per file", c.ok("", "log", "prefs", "-n", "0"), "created    /a.md", "created    /projects/x/plan.md", "created    /projects/y.md")

	write("a.md", "alpha, changed\n")
	write("b.md", "beta\n")
	mustContain(t, "changed", c.fails("", "import", "--dir", dir, "prefs"),
		"/a.md: a memory with other content is at this path (--overwrite replaces it with a new version)")
	mustContain(t, "overwrite", c.ok("", "import", "--dir", dir, "prefs", "--overwrite"), "1 created, 2 unchanged, 1 updated")
	if got := c.ok("", "cat", "prefs", "/a.md"); got != "alpha, changed\n" {
		t.Errorf("cat after overwrite: %q", got)
	}

	// A file where a memory is a folder, or below a memory.
	c.ok("x", "put", "prefs", "/c.md/d.md")
	write("c.md", "c\n")
	mustContain(t, "in the way", c.fails("", "import", "--dir", dir, "prefs"), "/c.md: the memory /c.md/d.md is in the way")

	// --create makes the store when it is missing; the import of many files is quick.
	many := t.TempDir()
	for i := range 200 {
		os.MkdirAll(filepath.Join(many, "d", string(rune('a'+i%10))), 0o755)
		os.WriteFile(filepath.Join(many, "d", string(rune('a'+i%10)), strings.Repeat("f", 1+i/10)+".md"), []byte("note\n"), 0o644)
	}
	mustContain(t, "create", c.ok("", "import", "--dir", many, "bulk", "--create"), "created store memstore_", "(bulk): 200 created, 0 unchanged, 0 updated")
	if n := strings.Count(c.ok("", "log", "bulk", "-n", "0"), "created "); n != 200 {
		t.Errorf("%d versions, want 200", n)
	}
}

func TestPathTaken(t *testing.T) {
	sorted := []string{"/a.md", "/b/c.md", "/b/d/e.md"}
	for p, want := range map[string]string{
		"/a.md/x.md": "/a.md", "/b": "/b/c.md", "/b/d": "/b/d/e.md", "/b/x.md": "", "/c.md": "", "/b/d/e.md/f": "/b/d/e.md",
	} {
		if got := pathTaken(sorted, p); got != want {
			t.Errorf("pathTaken(%s) = %q, want %q", p, got, want)
		}
	}
}

// TestImportDirRefusalCode: a refused import --dir exits by what refused it, locally and
// through a server: 2 for a file that breaks a rule, 4 for a path taken in the store, and 2
// for a folder with both (the rule first: no store or flag lets that file in); an archived
// store exits 2. Nothing is written.
func TestImportDirRefusalCode(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("", "stores", "create", "old")
	c.ok("alpha\n", "put", "notes", "/a.md")
	c.ok("", "stores", "archive", "old")
	folder := func(files map[string]string) string {
		t.Helper()
		dir := t.TempDir()
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	rule := folder(map[string]string{"bad.md": "caf\xe9\n", "new.md": "new\n"})
	taken := folder(map[string]string{"a.md": "other\n", "new.md": "new\n"})
	mixed := folder(map[string]string{"a.md": "other\n", "bad.md": "caf\xe9\n", "new.md": "new\n"})
	badUTF8 := "/bad.md: content is not valid UTF-8"
	otherContent := "/a.md: a memory with other content is at this path"
	cases := []newcomerCase{
		{args: []string{"import", "--dir", rule, "notes"}, code: exitUsage, stderr: []string{"nothing was written:", badUTF8}},
		{args: []string{"import", "--dir", taken, "notes"}, code: exitConflict, stderr: []string{"nothing was written:", otherContent}},
		{args: []string{"import", "--dir", mixed, "notes"}, code: exitUsage, stderr: []string{"nothing was written:", otherContent, badUTF8}},
		{args: []string{"import", "--dir", mixed, "notes", "--json"}, code: exitUsage, stdoutExact: "\x00", stderr: []string{otherContent, badUTF8}},
		{args: []string{"import", "--dir", taken, "old"}, code: exitUsage, stderr: []string{"is archived and read-only"}},
	}
	checkNewcomer(t, c, "data directory", cases)
	serveForGit(t, c)
	checkNewcomer(t, c, "through the server", cases)
	if got := c.ok("", "ls", "notes", "-R"); got != "/a.md\n" {
		t.Errorf("a refused import wrote: %q", got)
	}
	if got := c.ok("", "cat", "notes", "/a.md"); got != "alpha\n" {
		t.Errorf("a refused import changed /a.md: %q", got)
	}
}
