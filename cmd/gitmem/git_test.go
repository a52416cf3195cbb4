package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// serveForGit starts "gitmem serve" on a free loopback port with env added to its
// environment, and returns its URL and first-run message. It is stopped when the test ends.
func serveForGit(t *testing.T, c *cli, env ...string) (string, string) {
	t.Helper()
	return serveWith(t, c, nil, env...)
}

// serveWith is serveForGit with more flags of gitmem serve.
func serveWith(t *testing.T, c *cli, flags []string, env ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--data", c.data, "serve", "--addr", "127.0.0.1:0"}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	var banner []string
	for lines.Scan() {
		banner = append(banner, lines.Text())
		if strings.Contains(lines.Text(), "try:") {
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	text := strings.Join(banner, "\n")
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(text)
	if url == "" {
		t.Fatalf("no URL in the first-run message:\n%s", text)
	}
	return url, text
}

func createStoreForGit(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Post(url+"/v1/memory_stores", "application/json", strings.NewReader(`{"name":"notes"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.ID == "" {
		t.Fatalf("create store: %d %v", resp.StatusCode, err)
	}
	return st.ID
}

// TestServeGit clones and pushes through the real binary, which git runs as the push hook.
func TestServeGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	c := newCLI(t)
	url, banner := serveForGit(t, c)
	mustContain(t, "banner", banner, "git:   git clone "+url+"/git/<memstore_id>.git")
	store := createStoreForGit(t, url)
	work := t.TempDir()
	git := gitAs
	if out, err := git(work, "clone", "-q", url+"/git/"+store+".git", "notes"); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	wt := filepath.Join(work, "notes")
	os.WriteFile(filepath.Join(wt, "hello.md"), []byte("hello from git\n"), 0o644)
	os.WriteFile(filepath.Join(wt, "bad.md"), []byte("\xff"), 0o644)
	git(wt, "add", "-A")
	git(wt, "commit", "-qm", "hello")
	out, err := git(wt, "push", "origin", "main")
	if err == nil {
		t.Fatalf("a push with a file that is not UTF-8 went through:\n%s", out)
	}
	mustContain(t, "refused push", out, "remote: gitmem refused this push; nothing was changed:",
		"remote:   /bad.md: content is not valid UTF-8 (first bad byte at offset 0)")
	git(wt, "rm", "-q", "bad.md")
	git(wt, "commit", "-q", "--amend", "-m", "hello")
	if out, err := git(wt, "push", "-q", "origin", "main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	resp, err := http.Get(url + "/v1/memory_stores/" + store + "/memories?view=full")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mustContain(t, "after push", string(body), `"path":"/hello.md"`)
}

// TestServeWithoutGit: without git, gitmem serve says at start that git over HTTP is off;
// everything that needs git (the git route, gc, redact) answers 501 with the same sentence
// and says not to retry, and the API works.
func TestServeWithoutGit(t *testing.T) {
	c := newCLI(t)
	url, banner := serveForGit(t, c, "PATH="+t.TempDir())
	mustContain(t, "banner", banner, "git:   git over HTTP is off because git is not installed")
	store := createStoreForGit(t, url)
	resp, err := http.Get(url + "/git/" + store + ".git/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("git route without git: %d %s", resp.StatusCode, body)
	}
	mustContain(t, "git route", string(body), "git is not installed")

	post := func(path, body string) (int, string, http.Header) {
		t.Helper()
		resp, err := http.Post(url+"/v1/memory_stores/"+store+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	var mem struct {
		ID              string `json:"id"`
		MemoryVersionID string `json:"memory_version_id"`
	}
	code, out, _ := post("/memories", `{"path":"/a.md","content":"one"}`)
	if err := json.Unmarshal([]byte(out), &mem); err != nil || code != http.StatusOK {
		t.Fatalf("create memory without git: %d %s", code, out)
	}
	if code, out, _ := post("/memories/"+mem.ID, `{"content":"two"}`); code != http.StatusOK {
		t.Fatalf("update memory without git: %d %s", code, out)
	}
	for _, path := range []string{"/gc", "/memory_versions/" + mem.MemoryVersionID + "/redact"} {
		code, out, h := post(path, "")
		if code != http.StatusNotImplemented || h.Get("x-should-retry") != "false" {
			t.Errorf("%s without git: %d (x-should-retry %q) %s, want 501 and no retry", path, code, h.Get("x-should-retry"), out)
		}
		mustContain(t, path, out, "which is not installed")
	}
}

// gitAs runs git in dir as Ann, with no user or system configuration and no prompts.
func gitAs(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@example.com", "GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=ann@example.com")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
