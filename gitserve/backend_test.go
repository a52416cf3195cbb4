package gitserve

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitmem/gitmem/internal/gitexec"
)

// TestHookScript: the hook script runs the program it names, whatever characters its path
// holds, with the hook's name in the environment and git's arguments and stdin.
func TestHookScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), `it's a "dir" $HOME`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	program := filepath.Join(dir, "prog")
	os.WriteFile(program, []byte("#!/bin/sh\necho \"$GITMEM_GIT_HOOK $*\"; cat\n"), 0o755)
	hooks := filepath.Join(t.TempDir(), "hooks")
	if err := writeHook(hooks, program); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(hooks, "pre-receive"), "a", "b c")
	cmd.Stdin = strings.NewReader("old new refs/heads/main\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "pre-receive a b c\nold new refs/heads/main\n"; string(out) != want {
		t.Errorf("hook printed %q, want %q", out, want)
	}
}

// TestNoGit: without git in PATH, New says that git over HTTP is off.
func TestNoGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New(Options{StoresDir: t.TempDir(), HooksDir: t.TempDir()})
	if !errors.Is(err, gitexec.ErrNoGit) {
		t.Fatalf("New without git: %v", err)
	}
	if err.Error() != "git over HTTP is off because git is not installed (no git program in PATH)" {
		t.Errorf("message: %s", err)
	}
}

// TestDisplay: paths are shown as they are, unless a terminal would not show them so.
func TestDisplay(t *testing.T) {
	for in, want := range map[string]string{
		"a/b.md":           "/a/b.md",
		"café/ü.md":        "/café/ü.md",
		"tab\there.md":     `"/tab\there.md"`,
		"bad\xff.md":       `"/bad\xff.md"`,
		"/.gitmem/x":       "/.gitmem/x",
		"rtl\u202eevil.md": `"/rtl\u202eevil.md"`,
	} {
		if got := display(in); got != want {
			t.Errorf("display(%q) = %s, want %s", in, got, want)
		}
	}
}

// failingWriter is a client that went away: every write fails.
type failingWriter struct{ h http.Header }

func (w *failingWriter) Header() http.Header       { return w.h }
func (w *failingWriter) WriteHeader(int)           {}
func (w *failingWriter) Write([]byte) (int, error) { return 0, errors.New("the client went away") }

// TestServeKilled: Serve says when an answer could not be written to the client, upon which
// net/http/cgi kills git http-backend (Served.Killed), and not otherwise.
func TestServeKilled(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	stores := t.TempDir()
	const id = "memstore_01M83BB1KXF10C9EEWAJM0FBRY"
	if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(stores, id+".git")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	b, err := New(Options{StoresDir: stores, HooksDir: t.TempDir(), HookProgram: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{StoreID: id, Path: "info/refs"}
	r := httptest.NewRequest("GET", "/git/"+id+".git/info/refs?service=git-upload-pack", nil)
	rec := httptest.NewRecorder()
	served, err := b.Serve(rec, r, req)
	if err != nil || served.Killed || rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "service=git-upload-pack") {
		t.Fatalf("served to a client: %+v %v, %d %q", served, err, rec.Code, rec.Body)
	}
	served, err = b.Serve(&failingWriter{h: http.Header{}}, r, req)
	if err != nil || !served.Killed {
		t.Fatalf("served to a client that went away: %+v %v", served, err)
	}
}
