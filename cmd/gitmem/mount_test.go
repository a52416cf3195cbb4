package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/gitmem/gitmem/gitstore"
)

// startMount runs "gitmem mount" and waits until it says it mounted; its stderr so far is
// returned with the process.
func startMount(t *testing.T, c *cli, env []string, store, dir string, flags ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("this machine has no /dev/fuse (%v): the mount tests need FUSE", err)
	}
	args := append([]string{store, dir}, flags...)
	cmd := exec.Command(binary, append([]string{"--data", c.data, "mount"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		syscall.Unmount(dir, syscall.MNT_DETACH) // a test that failed midway leaves it mounted
	})
	var log bytes.Buffer
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "Ctrl-C unmounts") {
			break
		}
	}
	if !strings.Contains(log.String(), "mounted") {
		t.Fatalf("gitmem mount %v did not mount:\n%s", args, log.String())
	}
	go func() {
		for lines.Scan() {
			// Drained: the mount's log is not read past its start here.
		}
	}()
	return cmd, &log
}

// isMounted tells whether dir is a mount point now.
func isMounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), " "+dir+" ")
}

// TestMountThroughServer: while gitmem serve holds the data directory, gitmem mount goes
// through it with the key and the session, and SIGINT unmounts it cleanly.
func TestMountThroughServer(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("Remember the milk.\n", "put", "notes", "/todo.md")
	secret := regexp.MustCompile(`gitmem_[A-Za-z0-9_-]+`).FindString(c.ok("", "keys", "create", "--name", "mount"))
	serveForGit(t, c)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	key := "GITMEM_API_KEY=" + secret
	cmd, log := startMount(t, c, []string{key}, "notes", dir, "--session", "sesn_mounted")
	mustContain(t, "mount's start", log.String(), "through http://127.0.0.1:", "the session sesn_mounted")

	if b, err := os.ReadFile(filepath.Join(dir, "todo.md")); err != nil || string(b) != "Remember the milk.\n" {
		t.Errorf("read through the server: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("Ship on Friday.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := c.runEnv(append(os.Environ(), key), "", "log", "notes", "--session", "sesn_mounted", "--json")
	if code != 0 {
		t.Fatalf("log: %s", errOut)
	}
	mustContain(t, "versions of the mount's session", out, `"path": "/plan.md"`, `"session_id": "sesn_mounted"`)
	// A folder's rename through the server is one group, as the memory tool's.
	if err := os.MkdirAll(filepath.Join(dir, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "team", "a.md"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "team"), filepath.Join(dir, "crew")); err != nil {
		t.Fatal(err)
	}
	if out, errOut, _ := c.runEnv(append(os.Environ(), key), "", "cat", "notes", "/crew/a.md"); out != "a\n" {
		t.Errorf("cat /crew/a.md: %q %s", out, errOut)
	}
	// A secret is refused at the file system, by the server's policy, with its errno.
	f, err := os.Create(filepath.Join(dir, "leak.md"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("aws " + strings.Join([]string{"AKIA", "QYLPMN5H", "HHFPZAM2"}, "") + "\n")
	if err := f.Close(); !errors.Is(err, syscall.EACCES) {
		t.Errorf("a secret through the server: %v, want EACCES", err)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("gitmem mount after SIGINT: %v", err)
	}
	if isMounted(t, dir) {
		t.Errorf("%s is still mounted after SIGINT", dir)
	}
}

// TestMountKilled: gitmem mount killed with SIGKILL loses no write that was acknowledged
// (closed), and the mount point it leaves is taken back by the next mount.
func TestMountKilled(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, _ := startMount(t, c, nil, "notes", dir)
	for i, name := range []string{"a.md", "b.md", "c.md"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One more file open and written, not closed: not acknowledged, so not to be found.
	open, err := os.Create(filepath.Join(dir, "open.md"))
	if err != nil {
		t.Fatal(err)
	}
	open.WriteString("half")
	cmd.Process.Kill()
	cmd.Wait()
	open.Close()
	if _, err := os.Stat(dir); !errors.Is(err, syscall.ENOTCONN) {
		t.Logf("after SIGKILL, stat of the mount point: %v", err)
	}

	cmd, _ = startMount(t, c, nil, "notes", dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "a.md b.md c.md" {
		t.Errorf("after the crash the mount shows %v, want the 3 closed files", names)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("gitmem mount after SIGTERM: %v", err)
	}
	d, err := gitstore.Open(context.Background(), c.data, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := findStore(context.Background(), d, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.GetByPath(context.Background(), "/c.md", true); err != nil || *m.Content != "xxx" {
		t.Errorf("/c.md after the crash: %+v, %v", m, err)
	}
}
