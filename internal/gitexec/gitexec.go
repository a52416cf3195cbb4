// Package gitexec runs the git program. Every git process that gitmem starts is started
// here, by the same rules: git is found once (per value of PATH), runs with LC_ALL=C so
// that what it prints is the same in every locale (callers match its English messages),
// and a command whose context is done gets SIGTERM, so that git removes its lock files on
// the way out, and SIGKILL if it has not exited GracePeriod later.
package gitexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoGit is the error when the git program is not installed. Callers say what needed git
// with NoGit or Need; errors.Is(err, ErrNoGit) holds for those errors too.
var ErrNoGit = errors.New("the git program is not installed (no git in PATH)")

// PathEnv names the git program to run instead of the one in PATH: the server sets it for
// the git hooks it runs, so that they run the same git as it.
const PathEnv = "GITMEM_GIT"

// GracePeriod is how long a cancelled git command has to exit after SIGTERM before it is
// killed.
const GracePeriod = 10 * time.Second

// noGit is ErrNoGit told in the caller's words.
type noGit struct{ msg string }

func (e *noGit) Error() string        { return e.msg }
func (e *noGit) Is(target error) bool { return target == ErrNoGit }

// NoGit returns ErrNoGit with message as its text.
func NoGit(message string) error { return &noGit{message} }

// Need returns nil if git is installed, and otherwise ErrNoGit saying
// "<what> needs the git program, which is not installed (no git in PATH)".
func Need(what string) error {
	if _, err := Path(); err != nil {
		return NoGit(what + " needs the git program, which is not installed (no git in PATH)")
	}
	return nil
}

var found struct {
	mu      sync.Mutex
	done    bool
	pathEnv string // the PATH it was looked up in
	path    string
	err     error
}

// Path returns the absolute path of the git program: the one PathEnv names if set, else
// the one in PATH, looked up once for each value of PATH. Its error is ErrNoGit.
func Path() (string, error) {
	if p := os.Getenv(PathEnv); p != "" {
		return p, nil
	}
	env := os.Getenv("PATH")
	found.mu.Lock()
	defer found.mu.Unlock()
	if !found.done || found.pathEnv != env {
		found.path, found.err = lookPath()
		found.done, found.pathEnv = true, env
	}
	return found.path, found.err
}

func lookPath() (string, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return "", ErrNoGit
	}
	return filepath.Abs(p)
}

// Env returns the variables that every git command gets besides the environment it
// inherits, followed by extra: for a caller that builds a process's environment itself
// (net/http/cgi). Later variables win over earlier ones of the same name.
func Env(extra ...string) []string {
	return append([]string{"LC_ALL=C", "LANG=C"}, extra...)
}

// Cmd is one git command, set up as exec.Cmd is: set the fields, then call Run, Output or
// Start (after StdinPipe and StdoutPipe if wanted) and Wait.
type Cmd struct {
	// Dir is the working directory; "" for the current one.
	Dir string
	// Env holds variables added to the process's environment and Env's (such as GIT_DIR);
	// later ones win.
	Env    []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	ctx  context.Context
	args []string
	cmd  *exec.Cmd
}

// Command returns the command git args. Once ctx is done the command is stopped (SIGTERM,
// then SIGKILL after GracePeriod); pass context.Background() for one that runs to its end.
func Command(ctx context.Context, args ...string) *Cmd {
	return &Cmd{ctx: ctx, args: args}
}

// prepare makes the process, once; its error is ErrNoGit if git is not installed.
func (c *Cmd) prepare() error {
	if c.cmd != nil {
		return nil
	}
	git, err := Path()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(c.ctx, git, c.args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = GracePeriod
	c.cmd = cmd
	return nil
}

// setup copies the fields to the process before it starts.
func (c *Cmd) setup() error {
	if err := c.prepare(); err != nil {
		return err
	}
	c.cmd.Dir = c.Dir
	c.cmd.Env = append(append(os.Environ(), Env()...), c.Env...)
	if c.Stdin != nil {
		c.cmd.Stdin = c.Stdin
	}
	if c.Stdout != nil {
		c.cmd.Stdout = c.Stdout
	}
	c.cmd.Stderr = c.Stderr
	return nil
}

// Run runs the command and waits for it. An error from git's exit status is one that
// ExitCode reads.
func (c *Cmd) Run() error {
	if err := c.setup(); err != nil {
		return err
	}
	return c.cmd.Run()
}

// Output runs the command and returns its standard output.
func (c *Cmd) Output() ([]byte, error) {
	if err := c.setup(); err != nil {
		return nil, err
	}
	return c.cmd.Output()
}

// Start starts the command; Wait waits for it.
func (c *Cmd) Start() error {
	if err := c.setup(); err != nil {
		return err
	}
	return c.cmd.Start()
}

// Wait waits for a started command to exit, as exec.Cmd.Wait.
func (c *Cmd) Wait() error {
	if c.cmd == nil || c.cmd.Process == nil {
		return errors.New("gitexec: Wait before Start")
	}
	return c.cmd.Wait()
}

// StdinPipe returns a pipe to the command's standard input, as exec.Cmd.StdinPipe; call
// it before Start, with Stdin unset.
func (c *Cmd) StdinPipe() (io.WriteCloser, error) {
	if err := c.prepare(); err != nil {
		return nil, err
	}
	return c.cmd.StdinPipe()
}

// StdoutPipe returns a pipe from the command's standard output, as exec.Cmd.StdoutPipe;
// call it before Start, with Stdout unset.
func (c *Cmd) StdoutPipe() (io.ReadCloser, error) {
	if err := c.prepare(); err != nil {
		return nil, err
	}
	return c.cmd.StdoutPipe()
}

// ExitCode returns the exit status of the git command that err reports, or -1 if err is
// not a git command's exit (nil, or git did not start, or was killed by a signal).
func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Subcommand is the git command that args run: "fetch" of "-c k=v fetch ...".
func Subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-c" || args[i] == "-C":
			i++
		case !strings.HasPrefix(args[i], "-"):
			return args[i]
		}
	}
	return "git"
}

// In runs git args on the repository gitDir ("" for none) and returns what it printed,
// trimmed; its error is "git SUBCOMMAND: " and what git said on its standard error.
func In(ctx context.Context, gitDir string, args ...string) (string, error) {
	cmd := Command(ctx, args...)
	if gitDir != "" {
		cmd.Env = []string{"GIT_DIR=" + gitDir}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", &runError{msg: fmt.Sprintf("git %s: %s", Subcommand(args), msg), err: err}
	}
	return strings.TrimSpace(out.String()), nil
}

// runError is a git command's failure as In reports it: what git said, and the error of
// its run (an *exec.ExitError for ExitCode).
type runError struct {
	msg string
	err error
}

func (e *runError) Error() string { return e.msg }
func (e *runError) Unwrap() error { return e.err }
