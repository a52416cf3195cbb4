package httpapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gitmem/gitmem/apikeys"
)

// TestTypeScriptSDK runs testdata/ts/sdk.mjs, which walks the API with the official
// TypeScript SDK, against the real server. scripts/test installs its node_modules; without
// them the test skips, except in CI, where it fails.
func TestTypeScriptSDK(t *testing.T) {
	dir := filepath.Join("testdata", "ts")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK is not installed in %s: run npm ci there (scripts/test does)", dir)
		}
		t.Skipf("the TypeScript SDK is not installed: npm ci --prefix %s", dir)
	}
	ts := startServer(t, Options{})
	_, secret, err := ts.keys.Create("ts", apikeys.ReadWrite, "")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "sdk.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GITMEM_URL="+ts.url, "GITMEM_KEY="+secret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node sdk.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
