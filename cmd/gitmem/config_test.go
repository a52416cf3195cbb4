package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfig: flags come from the command line, else GITMEM_<FLAG>, else the config file,
// else their default; gitmem config show says which; gitmem serve runs with them; a key that
// names no flag, a table that names no command and a missing file are refused.
func TestConfig(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gitmem.toml")
	addr := freeAddr(t)
	os.WriteFile(cfg, []byte(`# an operator's file
[serve]
addr = "`+addr+`"
log-format = "json"
sync-interval = "5m"
trusted-proxies = ["10.0.0.0/8", "192.168.1.1"]
`), 0o644)

	out := c.ok("", "config", "show")
	mustContain(t, "no file", out, "config file: none", "--addr", "127.0.0.1:7437", "default")

	var shown struct {
		ConfigFile string `json:"config_file"`
		Data       []struct{ Flag, Value, Source string }
	}
	raw, stderr, code := c.runEnv(append(os.Environ(), "GITMEM_LOG_LEVEL=debug"), "", "config", "show", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("config show: %s", stderr)
	}
	if err := json.Unmarshal([]byte(raw), &shown); err != nil || shown.ConfigFile != cfg {
		t.Fatalf("config show --json: %v %s", err, raw)
	}
	got := map[string]string{}
	for _, r := range shown.Data {
		got[r.Flag] = r.Value + " from " + r.Source
	}
	for flag, want := range map[string]string{
		"addr":            addr + " from config " + cfg,
		"log-format":      "json from config " + cfg,
		"sync-interval":   "5m0s from config " + cfg,
		"trusted-proxies": "[10.0.0.0/8,192.168.1.1] from config " + cfg,
		"log-level":       "debug from env GITMEM_LOG_LEVEL",
		"data":            c.data + " from flag --data",
		"strict-create":   "false from default",
	} {
		if got[flag] != want {
			t.Errorf("--%s: %q, want %q", flag, got[flag], want)
		}
	}
	// The command line wins over the file.
	mustContain(t, "flag over file", c.ok("", "config", "show", "serve", "--config", cfg, "--json"), `"flag": "data"`)

	// gitmem serve runs with them: it listens where the file says.
	cmd := exec.Command(binary, "--data", c.data, "--config", cfg, "serve")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/livez")
		if err == nil {
			resp.Body.Close()
			break
		}
		if i == 100 {
			t.Fatalf("gitmem serve did not listen on %s from the config file: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()

	for _, tc := range []struct{ body, want string }{
		{"[serve]\naddres = \"x\"\n", "[serve] addres is not a flag of gitmem serve; did you mean addr?"},
		{"[srve]\naddr = \"x\"\n", "[srve] is not a gitmem command"},
		{"addr = \"x\"\n", "addr is not a flag of every command"},
		{"[serve]\nsync-interval = \"soon\"\n", "[serve] sync-interval"},
		{"[serve\n", "config file"},
	} {
		os.WriteFile(cfg, []byte(tc.body), 0o644)
		_, stderr, code := c.run("", "config", "show", "--config", cfg)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("config %q: exit %d: %s", tc.body, code, stderr)
		}
	}
	if _, stderr, code := c.run("", "stores", "list", "--config", filepath.Join(dir, "nope.toml")); code != exitUsage || !strings.Contains(stderr, "does not exist") {
		t.Errorf("a missing config file: exit %d: %s", code, stderr)
	}
}
