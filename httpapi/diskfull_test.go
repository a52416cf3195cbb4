package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/testlog"
	"github.com/gitmem/gitmem/search"
)

// smallDisk mounts a tmpfs of size bytes and returns its directory, or skips the test when
// it cannot (it needs root and mount(2)).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full disk is made with a small tmpfs, which needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full, and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(buf[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill: %v", err)
				}
				break
			}
		}
	}
	return path
}

// TestDiskFull: with the data directory on a file system that fills up, writes on every
// surface get a clear storage error (507, storage_full_error, not retried), nothing that was
// answered is lost, the search index is kept (not rebuilt) and catches up once there is
// space again, and writes work again.
func TestDiskFull(t *testing.T) {
	dir := smallDisk(t, 8<<20)
	ctx := context.Background()
	d, derr := gitstore.Open(ctx, dir, gitstore.Options{})
	keys, kerr := apikeys.Open(dir)
	if err := errors.Join(derr, kerr); err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	// The indexer waits for searches only, so that the search below is what meets the full disk.
	svc := search.New(d, search.Options{Logger: log, Delay: time.Hour})
	srv := New(d, keys, Options{Logger: log})
	srv.EnableSearch(svc)
	if err := srv.EnableGit(GitOptions{HookProgram: fastHook}); err != nil {
		t.Fatal(err)
	}
	var requests sync.Map // method+path -> count, to see that the SDK did not retry
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := requests.LoadOrStore(r.Method+" "+r.URL.Path, new(int))
		*n.(*int)++
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		svc.Close()
		d.Close()
	})
	c := anthropic.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey("unused"))

	store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "full"})
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{}
	calls := 0
	write := func(path, content string) error {
		calls++
		_, err := c.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: path, Content: anthropic.String(content)})
		if err == nil {
			acked[path] = content
		}
		return err
	}
	for i := range 5 {
		if err := write(fmt.Sprintf("/before/%d.md", i), fmt.Sprintf("zebra note %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	searchFor := func(q string) (int, string) {
		return rawRequest(t, "GET", hs.URL+"/v1/memory_stores/"+store.ID+"/search?q="+q, "", nil)
	}
	if status, body := searchFor("zebra"); status != 200 || !strings.Contains(body, `"total":5`) {
		t.Fatalf("search before the disk is full: %d %s", status, body)
	}
	meta := filepath.Join(svc.IndexPath(store.ID), "index_meta.json")
	before, err := os.Stat(meta)
	if err != nil {
		t.Fatal(err)
	}

	// Memories written, but not indexed yet, and then the disk fills up.
	for i := range 3 {
		if err := write(fmt.Sprintf("/during/%d.md", i), fmt.Sprintf("zebra crossing %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	clone := filepath.Join(t.TempDir(), "clone")
	gitOK(t, "", "clone", "-q", hs.URL+"/git/"+store.ID+".git", clone)
	filler := fill(t, dir)

	// The SDK: a clear error, not retried.
	var full error
	for i := 0; i < 50 && full == nil; i++ {
		full = write(fmt.Sprintf("/full/%d.md", i), strings.Repeat("x", 50_000)+fmt.Sprint(i))
	}
	if full == nil {
		t.Fatal("50 writes of 50 KB succeeded on a full disk")
	}
	status, typ, body := apiErr(t, full)
	msg, _ := body["message"].(string)
	if status != http.StatusInsufficientStorage || typ != "storage_full_error" || !strings.Contains(msg, "no space left") {
		t.Errorf("write on a full disk: %d %s %q; want 507 storage_full_error naming the cause", status, typ, msg)
	}
	var ae *anthropic.Error
	if errors.As(full, &ae) && ae.Response.Header.Get("x-should-retry") != "false" {
		t.Errorf("x-should-retry %q, want false", ae.Response.Header.Get("x-should-retry"))
	}
	if n, _ := requests.Load("POST /v1/memory_stores/" + store.ID + "/memories"); *n.(*int) != calls {
		t.Errorf("the SDK sent %d requests for %d writes: it retried a full disk", *n.(*int), calls)
	}

	// The tool route and the memory tool say so too.
	for _, tc := range []struct{ tool, input string }{
		{"memory_write", `{"path":"/memories/full/tool.md","content":"` + strings.Repeat("y", 50_000) + `"}`},
		{"memory", `{"command":"create","path":"/memories/full/tool2.md","file_text":"` + strings.Repeat("z", 50_000) + `"}`},
	} {
		status, out := request(t, "POST", hs.URL+"/v1/memory_stores/"+store.ID+"/tools/"+tc.tool, "", "", tc.input)
		content, _ := out["content"].(string)
		if status != 200 || out["is_error"] != true || !strings.Contains(content, "no space left") {
			t.Errorf("%s on a full disk: %d %v", tc.tool, status, out)
		}
	}

	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := mcpConnect(t, mctx, hs.URL+MCPPath+"?store="+store.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := mcpCall(t, mctx, cs, "memory_write", map[string]any{"path": "/memories/full/mcp.md", "content": strings.Repeat("m", 50_000)}); !isErr || !strings.Contains(text, "no space left") {
		t.Errorf("memory_write over MCP on a full disk: %v %q", isErr, text)
	}

	// A push is refused whole, and says why.
	put(t, filepath.Join(clone, "pushed.md"), strings.Repeat("p", 60_000))
	gitOK(t, clone, "add", "-A")
	gitOK(t, clone, "commit", "-qm", "pushed on a full disk")
	if out := gitFails(t, clone, "push", "-q"); !strings.Contains(strings.ToLower(out), "no space left") {
		t.Errorf("push on a full disk: %s", out)
	} else {
		t.Logf("push on a full disk: %s", out)
	}

	// Search meets the full disk when it indexes the writes above: it says so, and keeps
	// the index. So does the memory_search tool. The disk is topped up first: a page freed
	// meanwhile (a file the store let go of) would let the index write.
	fill(t, dir)
	status, sbody := searchFor("zebra")
	if status != http.StatusInsufficientStorage || !strings.Contains(sbody, "storage_full_error") || !strings.Contains(sbody, "no space left") {
		t.Errorf("search on a full disk: %d %s", status, sbody)
	}
	fill(t, dir)
	status, out := request(t, "POST", hs.URL+"/v1/memory_stores/"+store.ID+"/tools/memory_search", "", "", `{"query":"zebra"}`)
	if content, _ := out["content"].(string); status != 200 || out["is_error"] != true || !strings.Contains(content, "no space left") {
		t.Errorf("memory_search on a full disk: %d %v", status, out)
	}

	// Space again: every answered write is there, writes work, and search finds what was
	// written before, with the same index.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := write("/after.md", "zebra after\n"); err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	gitOK(t, clone, "pull", "-q", "--rebase")
	gitOK(t, clone, "push", "-q")
	acked["/pushed.md"] = strings.Repeat("p", 60_000)
	for path, content := range acked {
		st, err := d.Store(ctx, store.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.GetByPath(ctx, path, true)
		if err != nil || got.Content == nil || *got.Content != content {
			t.Errorf("answered write %s: %v", path, err)
		}
	}
	if status, body := searchFor("zebra"); status != 200 || !strings.Contains(body, fmt.Sprintf(`"total":%d`, 9)) {
		t.Errorf("search after space was freed: %d %s", status, body)
	}
	after, err := os.Stat(meta)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || strings.Contains(logs.String(), "rebuilding") {
		t.Errorf("the search index was rebuilt after a write error; logs:\n%s", logs.String())
	}
	if testing.Verbose() {
		t.Log(logs.String())
	}
}
