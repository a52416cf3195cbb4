package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBackupWhileWriting: a backup taken while 16 writers write through the server holds
// every write acknowledged before it began; it verifies, restores into a new directory that
// verifies and serves, and a second backup fetches only what is new. The data directory
// verifies while the server runs; a damaged backup does not, and says where.
func TestBackupWhileWriting(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	c.ok("", "stores", "create", "notes")
	id := storeOf(t, c)
	// Keys travel with the backup; -q prints a new key's secret alone.
	if admin := c.ok("", "keys", "create", "--name", "admin", "-q"); !regexp.MustCompile(`^gitmem_[A-Za-z0-9_-]+\n$`).MatchString(admin) {
		t.Fatalf("keys create -q printed %q", admin)
	}
	var key struct{ Secret string }
	json.Unmarshal([]byte(c.ok("", "keys", "create", "--name", "writer", "--json")), &key)
	url, _ := serveForGit(t, c)

	type ack struct {
		path string
		at   time.Time
	}
	var mu sync.Mutex
	var acks []ack
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/w%02d/%04d.md", w, i)
				req, _ := http.NewRequest("POST", url+"/v1/memory_stores/"+id+"/memories", strings.NewReader(fmt.Sprintf(`{"path":%q,"content":"written by %d"}`, p, w)))
				req.Header.Set("content-type", "application/json")
				req.Header.Set("x-api-key", key.Secret)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					acks = append(acks, ack{p, time.Now()})
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	dest := filepath.Join(t.TempDir(), "backup")
	began := time.Now()
	mustContain(t, "backup", c.ok("", "backup", dest), "backed up 1 store and 2 files", id)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	var before []string
	for _, a := range acks {
		if a.at.Before(began) {
			before = append(before, a.path)
		}
	}
	if len(before) < 16 {
		t.Fatalf("only %d writes before the backup", len(before))
	}

	mustContain(t, "verify the backup", c.ok("", "verify", dest), "verified the backup", "no problem found")
	// With keys in force, the server's catalogs are read with one.
	out, stderr, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY="+key.Secret), "", "verify")
	if code != 0 {
		t.Fatalf("verify while serving: exit %d: %s %s", code, out, stderr)
	}
	mustContain(t, "verify while serving", out, "verified the data directory", "no problem found")
	// Without it, verify says so, not that every store has a problem.
	out, stderr, code = c.runEnv(os.Environ(), "", "verify")
	if code != exitAuth || out != "" || !strings.Contains(stderr, "requires an API key; set GITMEM_API_KEY") || strings.Contains(stderr, "problem") {
		t.Errorf("verify while serving, without the key: exit %d: %q %q; want exit %d and what the server wants", code, out, stderr, exitAuth)
	}

	// Restore into a new directory: every write acknowledged before the backup is there.
	r := &cli{t: t, data: filepath.Join(t.TempDir(), "restored")}
	mustContain(t, "restore", r.ok("", "restore", dest), "restored 1 store and 2 files")
	listed := map[string]bool{}
	for _, l := range strings.Split(r.ok("", "ls", "notes", "-R"), "\n") {
		listed[strings.TrimSpace(l)] = true
	}
	for _, p := range before {
		if !listed[p] {
			t.Fatalf("%s was acknowledged before the backup began and is not in the restore (%d of %d listed)", p, len(listed), len(before))
		}
	}
	mustContain(t, "verify the restore", r.ok("", "verify"), "no problem found")
	mustContain(t, "keys restored", r.ok("", "keys", "list"), "admin", "writer")
	mustContain(t, "search rebuilt", r.ok("", "search", "notes", "written"), "/w")

	// Incremental: the packs of the first backup stay; the second adds what is new.
	packs := func() map[string]int64 {
		out := map[string]int64{}
		ms, _ := filepath.Glob(filepath.Join(dest, "stores", id+".git", "objects", "pack", "*.pack"))
		for _, m := range ms {
			st, _ := os.Stat(m)
			out[filepath.Base(m)] = st.Size()
		}
		return out
	}
	first := packs()
	if _, stderr, code := c.runEnv(append(os.Environ(), "GITMEM_API_KEY="+key.Secret), "one more\n", "put", "notes", "/later.md"); code != 0 {
		t.Fatal(stderr)
	}
	c.ok("", "backup", dest)
	second := packs()
	for name, size := range first {
		if second[name] != size {
			t.Errorf("the second backup rewrote %s", name)
		}
	}
	if len(second) <= len(first) {
		t.Errorf("the second backup added no pack: %v then %v", first, second)
	}

	// A damaged backup fails verify, naming the store.
	damaged := filepath.Join(t.TempDir(), "damaged.tar")
	c.ok("", "backup", damaged)
	dir := filepath.Join(t.TempDir(), "unpacked")
	c.ok("", "backup", dir)
	damagedPacks, _ := filepath.Glob(filepath.Join(dir, "stores", id+".git", "objects", "pack", "*.pack"))
	if len(damagedPacks) == 0 {
		t.Fatal("no pack to damage")
	}
	for _, p := range damagedPacks {
		if raw, err := os.ReadFile(p); err == nil {
			for i := len(raw) / 2; i < len(raw)/2+64 && i < len(raw)-20; i++ {
				raw[i] ^= 0xff
			}
			os.Chmod(p, 0o600)
			os.WriteFile(p, raw, 0o600)
		}
	}
	out, stderr, code = c.run("", "verify", dir)
	if code != exitError || !strings.Contains(out, "problem: store "+id) || !strings.Contains(out, "fsck") || !strings.Contains(stderr, "has 1 problem") {
		t.Fatalf("a damaged backup: exit %d\n%s\n%s", code, out, stderr)
	}
	// A cut-off archive has no manifest: not a finished backup.
	if raw, err := os.ReadFile(damaged); err == nil {
		os.WriteFile(damaged, raw[:len(raw)/2], 0o600)
	}
	if _, stderr, code := c.run("", "verify", damaged); code != exitError || !strings.Contains(stderr, "cut off or damaged") {
		t.Errorf("a cut-off archive: exit %d: %s", code, stderr)
	}
	// And restore refuses a directory that holds stores.
	if _, stderr, code := r.run("", "restore", dest); code != exitUsage || !strings.Contains(stderr, "holds 1 stores already") {
		t.Errorf("restore over stores: exit %d: %s", code, stderr)
	}
}

// TestBackupCarriesRedaction: a version redacted after a backup is gone from the next
// backup into the same directory too, object and all.
func TestBackupCarriesRedaction(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	c.ok("", "stores", "create", "prefs")
	id := storeOf(t, c)
	const leaked = "db password: OCELOT-42\n"
	leak := versionIDRe.FindString(c.ok(leaked, "put", "prefs", "/creds.md"))
	c.ok("ask the admin\n", "put", "prefs", "/creds.md")
	dest := filepath.Join(t.TempDir(), "backup")
	c.ok("", "backup", dest)
	repo := filepath.Join(dest, "stores", id+".git")
	blob := strings.TrimSpace(gitIn(t, t.TempDir(), "hash-object", writeTemp(t, leaked)))
	if err := exec.Command("git", "--git-dir", repo, "cat-file", "-e", blob).Run(); err != nil {
		t.Fatalf("the first backup lacks the content it should hold: %v", err)
	}
	c.ok("", "redact", "prefs", leak)
	c.ok("", "backup", dest)
	if err := exec.Command("git", "--git-dir", repo, "cat-file", "-e", blob).Run(); err == nil {
		t.Fatal("the redacted content is still in the backup")
	}
	mustContain(t, "verify", c.ok("", "verify", dest), "no problem found")
}

// TestBackupRefusals: what backup, restore and verify refuse, each saying why and leaving
// nothing behind; and a backup made through a server holds its stores only.
func TestBackupRefusals(t *testing.T) {
	needGitCLI(t)
	c := newCLI(t)
	mustContain(t, "no data directory", c.fails("", "backup", filepath.Join(t.TempDir(), "b")), "no data directory at")
	if _, stderr, code := c.run("", "restore", filepath.Join(t.TempDir(), "nope")); code != exitUsage || !strings.Contains(stderr, "STORE VERSION_ID") {
		t.Errorf("restore of nothing: exit %d: %s", code, stderr)
	}
	if _, stderr, code := c.run("", "restore", t.TempDir(), "--server", "http://127.0.0.1:9"); code != exitUsage || !strings.Contains(stderr, "not --server") {
		t.Errorf("restore --server: exit %d: %s", code, stderr)
	}
	if _, stderr, code := c.run("", "verify", "--server", "http://127.0.0.1:9"); code != exitUsage || !strings.Contains(stderr, "names a server") {
		t.Errorf("verify --server: exit %d: %s", code, stderr)
	}
	mustContain(t, "verify of a folder that is neither", c.fails("", "verify", t.TempDir()), "neither a gitmem backup")

	// An archive that names a file outside it is refused before anything is written.
	dir := t.TempDir()
	archive := filepath.Join(dir, "evil.tar")
	f, _ := os.Create(archive)
	tw := tar.NewWriter(f)
	body := []byte("owned")
	tw.WriteHeader(&tar.Header{Name: "../escaped.txt", Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write(body)
	tw.Close()
	f.Close()
	out := filepath.Join(t.TempDir(), "restored")
	if _, stderr, code := c.run("", "--data", out, "restore", archive); code == 0 || !strings.Contains(stderr, "outside it") {
		t.Errorf("a path outside the archive: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "escaped.txt")); err == nil {
		t.Error("the archive wrote outside its folder")
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused restore made the data directory")
	}

	// Through a server: the stores the key may read, over git; verify passes.
	c.ok("", "stores", "create", "notes")
	c.ok("hello\n", "put", "notes", "/a.md")
	var key struct{ Secret string }
	json.Unmarshal([]byte(c.ok("", "keys", "create", "--name", "backup", "--access", "read_only", "--json")), &key)
	url, _ := serveForGit(t, c)
	remote := &cli{t: t, data: filepath.Join(t.TempDir(), "elsewhere")}
	dest := filepath.Join(t.TempDir(), "from-server")
	got, stderr, code := remote.runEnv(append(os.Environ(), "GITMEM_API_KEY="+key.Secret), "", "--server", url, "backup", dest)
	if code != 0 {
		t.Fatalf("backup --server: exit %d: %s", code, stderr)
	}
	mustContain(t, "backup --server", got, "backed up 1 store (through "+url, "keys, remotes and webhooks stay on the server")
	mustContain(t, "verify of a server's backup", remote.ok("", "verify", dest), "1 store, 1 version and 1 memory read")
	if _, stderr, code := remote.run("", "--server", url, "backup", filepath.Join(t.TempDir(), "x")); code != exitAuth {
		t.Errorf("backup --server without a key: exit %d: %s", code, stderr)
	}
}

// writeTemp writes content to a new file and returns its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "content")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
