package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runnableMark comes before each README block that TestReadmeRuns runs.
const runnableMark = "<!-- runnable"

// readmeBlock is one runnable block: its commands ("$ " lines, continuations joined) and
// what the README shows them print (lines without "...", which stand for more).
type readmeBlock struct {
	lang     string // sh, or js: a script for node with the official TypeScript SDK
	commands []string
	shown    []string
}

// readmeBlocks reads the runnable blocks of the README.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], runnableMark) {
			continue
		}
		b := readmeBlock{lang: strings.TrimPrefix(lines[i+1], "```")}
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			line := lines[i]
			if b.lang == "js" { // the whole block is the script; "// prints: X" says what it prints
				b.commands = append(b.commands, line)
				if _, shown, ok := strings.Cut(line, "// prints: "); ok {
					b.shown = append(b.shown, shown)
				}
				continue
			}
			switch {
			case strings.HasPrefix(line, "$ "):
				b.commands = append(b.commands, strings.TrimPrefix(line, "$ "))
			case len(b.commands) > 0 && strings.HasSuffix(b.commands[len(b.commands)-1], "\\"):
				b.commands[len(b.commands)-1] += "\n" + line
			case !strings.Contains(line, "..."):
				b.shown = append(b.shown, line)
			}
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// TestReadmeRuns runs the README's runnable blocks as a newcomer pastes them, in the folder
// where gitmem serve runs (a fresh one), with "go run ./cmd/gitmem" standing for the built
// binary; every command must succeed and print what the README shows.
func TestReadmeRuns(t *testing.T) {
	blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("the README has no runnable block")
	}
	for _, tool := range []string{"bash", "curl", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	for i, b := range blocks {
		c := newCLI(t)
		dir := filepath.Dir(c.data)
		c.data = filepath.Join(dir, "gitmem-data") // the default, as the README's serve uses it
		url, _ := serveForGit(t, c)
		port := regexp.MustCompile(`:(\d+)$`).FindStringSubmatch(url)[1]
		clone := filepath.Join(t.TempDir(), "notes")
		script := strings.Join(b.commands, "\n") + "\n"
		script = strings.NewReplacer("go run ./cmd/gitmem", binary, ":7437", ":"+port, "/tmp/notes", clone).Replace(script)
		cmd := exec.Command("bash", "-c", "set -e\n"+script)
		if b.lang == "js" {
			cmd = nodeScript(t, dir, script)
		}
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README block %d failed: %v\n%s\nscript:\n%s", i+1, err, out, script)
		}
		for _, want := range b.shown {
			if !strings.Contains(string(out), want) {
				t.Errorf("README block %d: the README shows %q; it printed:\n%s", i+1, want, out)
			}
		}
	}
}

// nodeScript is the command that runs a README script with node and the official TypeScript
// SDK that scripts/test installs for the SDK tests; the test is skipped where it is missing.
func nodeScript(t *testing.T, dir, script string) *exec.Cmd {
	t.Helper()
	sdk, err := filepath.Abs(filepath.Join("..", "..", "httpapi", "testdata", "ts", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "@anthropic-ai", "sdk")); err != nil {
		t.Skip("the TypeScript SDK is not installed (scripts/test installs it)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	if err := os.Symlink(sdk, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "readme.mjs")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return exec.Command("node", file)
}

// TestReadmeQuickstart checks the README's two Quickstart commands as far as a test can run
// them: the serve command, started in a fresh folder with nothing set up, serves and prints
// the banner the README shows (every line but the address), and the test command is the
// one CI runs (.ci/run ends in it). Running scripts/test itself would run this test again.
func TestReadmeQuickstart(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "<!-- quickstart")
	if !ok {
		t.Fatal("the README marks no Quickstart block")
	}
	blocks := regexp.MustCompile("(?s)```(?:sh)?\n(.*?)```").FindAllStringSubmatch(after, 2)
	if len(blocks) != 2 {
		t.Fatal("the Quickstart has no commands block followed by the banner")
	}
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(blocks[0][1]), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		commands = append(commands, strings.TrimSpace(cmd))
	}
	if len(commands) != 2 || commands[0] != "go run ./cmd/gitmem serve" {
		t.Fatalf("the Quickstart's commands are %q; this test knows the serve command and the test command", commands)
	}
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "exec bash "+commands[1]) {
		t.Errorf(".ci/run does not run the README's test command %q", commands[1])
	}
	// The serve command in a fresh folder, with no flag but a free port: the default data
	// directory, made there.
	dir := t.TempDir()
	serve := exec.Command(binary, "serve", "--addr", "127.0.0.1:0")
	serve.Dir = dir
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	var lines []string
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		if lines = append(lines, sc.Text()); strings.Contains(sc.Text(), "try:") {
			break
		}
	}
	banner := strings.Join(lines, "\n")
	if _, err := os.Stat(filepath.Join(dir, "gitmem-data")); err != nil {
		t.Fatalf("serve made no data directory ./gitmem-data: %v\n%s", err, banner)
	}
	port := regexp.MustCompile(`127\.0\.0\.1:(\d+)`).FindStringSubmatch(banner)
	if port == nil {
		t.Fatalf("no address in the banner:\n%s", banner)
	}
	for _, want := range strings.Split(strings.TrimSpace(blocks[1][1]), "\n") {
		want = strings.ReplaceAll(want, ":7437", ":"+port[1])
		if !strings.Contains(banner, strings.TrimSpace(want)) {
			t.Errorf("the README's banner shows %q; gitmem serve printed:\n%s", want, banner)
		}
	}
}
