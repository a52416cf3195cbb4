package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServe runs gitmem serve on a free loopback port with the extra args, and returns
// the process (killed when the test ends), its banner and its URL.
func startServe(t *testing.T, c *cli, args ...string) (*exec.Cmd, string, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"--data", c.data, "serve", "--addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(stdout)
	var banner []string
	for lines.Scan() {
		banner = append(banner, lines.Text())
		if strings.Contains(lines.Text(), "try:") {
			break
		}
	}
	text := strings.Join(banner, "\n")
	return cmd, text, regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(text)
}

// TestServe starts the real binary, reads the address from its first-run message, talks to
// it, and stops it with SIGTERM.
func TestServe(t *testing.T) {
	c := newCLI(t)
	cmd, text, url := startServe(t, c)
	mustContain(t, "banner", text, "gitmem is serving http://127.0.0.1:", "auth:  none", "loopback only", "gitmem keys create")
	resp, err := http.Post(url+"/v1/memory_stores", "application/json", strings.NewReader(`{"name":"served"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"name":"served"`) {
		t.Fatalf("create store: %d %s", resp.StatusCode, body)
	}
	// While it runs, the CLI goes through it; a command that needs the directory itself says
	// so in one line.
	mustContain(t, "through the server", c.ok("", "stores", "list"), "served")
	mustContain(t, "locked", c.fails("", "reindex", "served"), "gitmem reindex needs the data directory", "serve", url, "stop it first")

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("gitmem serve exited with %v after SIGTERM", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gitmem serve did not stop on SIGTERM")
	}
	// Stopped, it released the directory: the store it made is there.
	mustContain(t, "after stop", c.ok("", "stores", "list"), "served")
}

// TestServeRefusesOpenNetworkWithoutKeys: without keys gitmem serves loopback only; with a
// key it requires one.
func TestServeRefusesOpenNetworkWithoutKeys(t *testing.T) {
	c := newCLI(t)
	mustContain(t, "no keys", c.fails("", "serve", "--addr", "0.0.0.0:0"), "refusing to serve on 0.0.0.0:0 without authentication", "gitmem keys create")
	if _, err := os.Stat(c.data); !os.IsNotExist(err) {
		t.Errorf("a refused serve made its data directory: %v", err)
	}

	out := c.ok("", "keys", "create", "--name", "ci", "--access", "read_only")
	mustContain(t, "keys create", out, "created key apikey_", "read_only", "gitmem_", "shown only now")
	mustContain(t, "keys list", c.ok("", "keys", "list"), "ci", "read_only", "active")
	if strings.Contains(c.ok("", "keys", "list"), strings.Fields(out[strings.Index(out, "gitmem_"):])[0]) {
		t.Error("keys list shows a secret")
	}
	mustContain(t, "bad access", c.fails("", "keys", "create", "--name", "x", "--access", "admin"), "read_write, read_only or propose")
	mustContain(t, "no name", c.fails("", "keys", "create"), "needs a name")
	mustContain(t, "revoke", c.ok("", "keys", "revoke", "ci"), "revoked key apikey_")
	mustContain(t, "revoked", c.ok("", "keys", "list"), "revoked")
	mustContain(t, "revoke unknown", c.fails("", "keys", "revoke", "nope"), `no key with id or name "nope"`)
	if fi, err := os.Stat(c.data + "/keys.json"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("keys.json: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
}

// TestServeSpareProcs: the server runs two Go processors beyond the runtime's default, as its
// metrics show, unless GOMAXPROCS says otherwise.
func TestServeSpareProcs(t *testing.T) {
	procs := func() float64 {
		_, _, url := startServe(t, newCLI(t))
		code, fams := scrape(t, url+"/metrics", "")
		if code != 200 {
			t.Fatalf("metrics: %d", code)
		}
		return value(fams, "go_sched_gomaxprocs_threads")
	}
	if os.Getenv("GOMAXPROCS") == "" {
		if got, want := procs(), float64(runtime.GOMAXPROCS(0)+spareProcs); got != want {
			t.Errorf("gomaxprocs: %v, want %v", got, want)
		}
	}
	t.Setenv("GOMAXPROCS", "3")
	if got := procs(); got != 3 {
		t.Errorf("gomaxprocs with GOMAXPROCS=3: %v, want 3", got)
	}
}
