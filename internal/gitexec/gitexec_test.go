package gitexec

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := Path(); err != nil {
		t.Skip("git is not installed")
	}
}

// TestEnv: git runs with LC_ALL=C and the caller's variables, which win.
func TestEnv(t *testing.T) {
	needGit(t)
	t.Setenv("LC_ALL", "de_DE.UTF-8")
	cmd := Command(context.Background(), "-c", "alias.env=!env", "env")
	cmd.Env = []string{"GIT_DIR=/nowhere", "GITMEM_TEST=1", "GITMEM_TEST=2"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	env := "\n" + string(out)
	for _, want := range []string{"\nLC_ALL=C\n", "\nLANG=C\n", "\nGITMEM_TEST=2\n", "\nGIT_DIR=/nowhere\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %q:\n%s", strings.TrimSpace(want), out)
		}
	}
	if strings.Contains(env, "de_DE") {
		t.Errorf("the caller's locale reached git:\n%s", out)
	}
}

// TestExitCode: git's exit status is read from the error.
func TestExitCode(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	cmd := Command(context.Background(), "rev-parse", "--git-dir")
	cmd.Dir = dir
	cmd.Env = []string{"GIT_CEILING_DIRECTORIES=" + dir}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if got := ExitCode(err); got != 128 {
		t.Fatalf("exit code %d (%v), want 128", got, err)
	}
	if !strings.Contains(stderr.String(), "not a git repository") {
		t.Errorf("stderr %q is not git's English message", stderr.String())
	}
	if ExitCode(nil) != -1 || ExitCode(errors.New("x")) != -1 {
		t.Error("ExitCode of a non-exit error is not -1")
	}
}

// TestCancel: a cancelled command is stopped at once (SIGTERM), well within GracePeriod.
func TestCancel(t *testing.T) {
	needGit(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, "-c", "alias.wait=!sleep 30", "wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	cancel()
	err := cmd.Wait()
	if err == nil {
		t.Fatal("a cancelled command succeeded")
	}
	if took := time.Since(start); took > GracePeriod/2 {
		t.Errorf("the cancelled command took %s to stop", took)
	}
}

// TestPipes: a long-running command reads from and writes to pipes.
func TestPipes(t *testing.T) {
	needGit(t)
	cmd := Command(context.Background(), "hash-object", "--stdin")
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("hello\n"))
	w.Close()
	buf := make([]byte, 40)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := string(buf), "ce013625030ba8dba906f756967f9e9ca394464a"; got != want {
		t.Errorf("hash %s, want %s", got, want)
	}
}

// TestNoGit: without git in PATH every command fails with ErrNoGit, and git is found again
// once PATH has it.
func TestNoGit(t *testing.T) {
	needGit(t)
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir())
	if _, err := Path(); !errors.Is(err, ErrNoGit) {
		t.Fatalf("Path without git: %v", err)
	}
	if err := Command(context.Background(), "version").Run(); !errors.Is(err, ErrNoGit) {
		t.Errorf("Run without git: %v", err)
	}
	err := Need("export")
	if !errors.Is(err, ErrNoGit) || err.Error() != "export needs the git program, which is not installed (no git in PATH)" {
		t.Errorf("Need without git: %v", err)
	}
	os.Setenv("PATH", path)
	if _, err := Path(); err != nil {
		t.Errorf("Path with git in PATH again: %v", err)
	}
}
