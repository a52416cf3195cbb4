package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// onTerminal runs gitmem with a pseudo-terminal as its stdin, stdout and stderr, as a person
// runs it; input is typed after a moment. It returns what the terminal showed and the exit
// code.
func (c *cli) onTerminal(env []string, input string, args ...string) (string, int) {
	c.t.Helper()
	cmd := exec.Command(binary, append([]string{"--data", c.data}, args...)...)
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "TERM=xterm"), env...)
	tty, err := pty.Start(cmd)
	if err != nil {
		c.t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer tty.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, tty); close(done) }()
	if input != "" {
		time.Sleep(300 * time.Millisecond) // let it start and ask
		io.WriteString(tty, input)
	}
	err = cmd.Wait()
	tty.Close()
	<-done
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return out.String(), code
}

// TestOnATerminal: color on a terminal unless NO_COLOR is set; put says that it reads
// standard input; Ctrl-C at a question cancels the command.
func TestOnATerminal(t *testing.T) {
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	c.ok("one\n", "put", "notes", "/a.md")
	c.ok("two\n", "put", "notes", "/a.md")

	out, _ := c.onTerminal(nil, "", "diff", "notes", "/a.md")
	if !strings.Contains(out, "\033[31m-one") || !strings.Contains(out, "\033[32m+two") {
		t.Errorf("diff on a terminal is not colored: %q", out)
	}
	out, _ = c.onTerminal([]string{"NO_COLOR=1"}, "", "diff", "notes", "/a.md")
	if strings.Contains(out, "\033[") || !strings.Contains(out, "-one") {
		t.Errorf("diff with NO_COLOR: %q", out)
	}
	out, _ = c.onTerminal(nil, "", "log", "notes")
	if !strings.Contains(out, "\033[32mcreated") {
		t.Errorf("log on a terminal is not colored: %q", out)
	}

	out, code := c.onTerminal(nil, "typed\n\x04", "put", "notes", "/typed.md")
	if code != 0 || !strings.Contains(out, "reading the content from standard input; end it with Ctrl-D") {
		t.Errorf("put on a terminal: exit %d: %q", code, out)
	}
	if got := c.ok("", "cat", "notes", "/typed.md"); got != "typed\n" {
		t.Errorf("content typed on the terminal: %q", got)
	}

	out, code = c.onTerminal(nil, "\x03", "stores", "delete", "notes")
	if code == 0 || !strings.Contains(out, "Type the store's name to confirm") || !strings.Contains(out, "cancelled") {
		t.Errorf("Ctrl-C at the question: exit %d: %q", code, out)
	}
	mustContain(t, "store kept", c.ok("", "stores", "list"), "notes")
}
