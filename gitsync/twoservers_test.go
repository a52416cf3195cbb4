package gitsync

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
)

// server is a real gitmem server on loopback (the HTTP API over a data directory) with
// its sync loop.
type server struct {
	name string
	url  string
	dir  string
	data *gitstore.DataDir
	y    *Syncer
	stop context.CancelFunc
	done chan struct{}
}

func startServer(t *testing.T, name string, prepare func(d *gitstore.DataDir)) *server {
	t.Helper()
	dir := t.TempDir()
	d, err := gitstore.Open(context.Background(), dir, gitstore.Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := apikeys.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(d)
	}
	api := httpapi.New(d, keys, httpapi.Options{Logger: quietLog()})
	if err := api.EnableGit(httpapi.GitOptions{}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api)
	srv := &server{name: name, url: hs.URL, dir: dir, data: d, y: &Syncer{DataDir: dir}, done: make(chan struct{})}
	t.Cleanup(func() {
		srv.stopSync()
		hs.Close()
		d.Close()
	})
	return srv
}

// TestMain lets git run this test binary as the push hook of the servers that serve git.
func TestMain(m *testing.M) {
	gitserve.RunHookIfAsked()
	os.Exit(m.Run())
}

func quietLog() *slog.Logger {
	if testing.Verbose() {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startSync runs the server's sync loop, as gitmem serve does, with short delays.
func (s *server) startSync() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	l := &Loop{Syncer: s.y, Data: s.data, Interval: time.Second, AfterWrite: 300 * time.Millisecond, Log: quietLog()}
	go func() {
		defer close(s.done)
		l.Run(ctx)
	}()
}

func (s *server) stopSync() {
	if s.stop != nil {
		s.stop()
		<-s.done
		s.stop = nil
	}
}

func (s *server) store(t *testing.T, id string) *gitstore.Store {
	t.Helper()
	st, err := s.data.Store(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// post sends a JSON request to the server's API and decodes the answer.
func (s *server) post(path string, body, out any) error {
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// written is one write that a server answered.
type written struct {
	server, path, content, memory, version string
}

func (s *server) write(store, path, content string) (written, error) {
	var m struct {
		ID              string `json:"id"`
		MemoryVersionID string `json:"memory_version_id"`
	}
	err := s.post("/v1/memory_stores/"+store+"/memories", map[string]string{"path": path, "content": content}, &m)
	return written{server: s.name, path: path, content: content, memory: m.ID, version: m.MemoryVersionID}, err
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Bob", "GIT_AUTHOR_EMAIL=bob@example.com", "GIT_COMMITTER_NAME=Bob", "GIT_COMMITTER_EMAIL=bob@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// importFrom makes a store from the git repository at url as gitmem import does, for
// startServer.
func importFrom(t *testing.T, url string) func(d *gitstore.DataDir) {
	return func(d *gitstore.DataDir) {
		dir, err := d.PrepareImport()
		if err != nil {
			t.Fatal(err)
		}
		git(t, dir, "fetch", "-q", url, "+refs/heads/main:refs/heads/main")
		if _, err := d.ImportStore(context.Background(), dir, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// serverWithRemote starts a server with a store "team" and makes an empty bare repository
// for it to sync with.
func serverWithRemote(t *testing.T) (remote string, a *server, storeID string) {
	t.Helper()
	needGit(t)
	remote = filepath.Join(t.TempDir(), "remote.git")
	git(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)
	a = startServer(t, "a", nil)
	var st struct{ ID string }
	if err := a.post("/v1/memory_stores", map[string]string{"name": "team"}, &st); err != nil {
		t.Fatal(err)
	}
	return remote, a, st.ID
}

// syncOnce adds the remote as "origin" of the store on server srv, syncs once, and returns
// the store and the remote.
func syncOnce(t *testing.T, srv *server, id, remote string) (*gitstore.Store, Remote) {
	t.Helper()
	r, err := Add(srv.dir, id, "team", "origin", remote, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := srv.store(t, id)
	if _, err := srv.y.Sync(context.Background(), s, r); err != nil {
		t.Fatal(err)
	}
	return s, r
}

// TestTwoServers runs two servers whose copies of one store sync through one bare
// repository while writers on both sides write, concurrently, memories of their own and
// memories that both write. Afterwards both hold the same main, every answered write is a
// version on both sides, every overlap is a conflict memory, and the memory and version
// ids agree.
func TestTwoServers(t *testing.T) {
	ctx := context.Background()
	remote, a, id := serverWithRemote(t)
	for k := range 4 {
		if _, err := a.write(id, fmt.Sprintf("/shared/%d.md", k), "start\n"); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Add(a.dir, id, "team", "origin", remote, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.y.Sync(ctx, a.store(t, id), r); err != nil || !res.Empty || !res.Pushed {
		t.Fatalf("first sync: %+v, %v", res, err)
	}
	// b gets the store from the remote, as gitmem import does.
	b := startServer(t, "b", importFrom(t, remote))
	if _, err := Add(b.dir, id, "team", "origin", remote, time.Now()); err != nil {
		t.Fatal(err)
	}
	a.startSync()
	b.startSync()

	// Writers: two per server, for a few seconds.
	var mu sync.Mutex
	var answered []written
	var errs []error
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Second)
	for _, s := range []*server{a, b} {
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; time.Now().Before(deadline); n++ {
					path := fmt.Sprintf("/%s/%d/%d.md", s.name, w, n%20) // own memories, written again and again
					if n%3 == 0 {
						path = fmt.Sprintf("/shared/%d.md", n%4) // memories that both servers write
					}
					wr, err := s.write(id, path, fmt.Sprintf("%s writer %d write %d\n", s.name, w, n))
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					} else {
						answered = append(answered, wr)
					}
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d writes failed, the first: %v", len(errs), errs[0])
	}
	a.stopSync()
	b.stopSync()

	// Sync until quiet: a round where neither side fetched or pushed anything.
	sa, sb := a.store(t, id), b.store(t, id)
	quiet := false
	for round := 0; round < 6 && !quiet; round++ {
		quiet = true
		for _, s := range []*server{a, b} {
			res, err := s.y.Sync(ctx, s.store(t, id), r)
			if err != nil {
				t.Fatalf("sync %s: %v", s.name, err)
			}
			quiet = quiet && res.Fetched == 0 && !res.Pushed
		}
	}
	if !quiet {
		t.Fatal("the servers never stopped syncing")
	}
	remoteHead := strings.TrimSpace(git(t, remote, "rev-parse", "main"))
	if sa.Head() != remoteHead || sb.Head() != remoteHead {
		t.Fatalf("main differs: a %s, b %s, remote %s", sa.Head(), sb.Head(), remoteHead)
	}
	git(t, remote, "fsck", "--strict")

	// Every answered write is a version on both sides, of the same memory, with its content.
	for _, s := range []*gitstore.Store{sa, sb} {
		for _, w := range answered {
			v, err := s.Version(ctx, w.version, true)
			if err != nil {
				t.Fatalf("write %+v is missing: %v", w, err)
			}
			if v.MemoryID != w.memory || v.Path != w.path || v.Content == nil || *v.Content != w.content {
				t.Fatalf("write %+v reads back as %s %s %s", w, v.MemoryID, v.Path, *v.Content)
			}
		}
	}
	// Both catalogs agree on every memory and every version.
	stateA, stateB := catalogState(t, sa), catalogState(t, sb)
	if stateA != stateB {
		t.Fatalf("the catalogs differ:\n%s", lineDiff(stateA, stateB))
	}
	// Every conflict that a merge recorded is a live memory on both sides: the writers never
	// write conflict paths, so none went away.
	merges := git(t, remote, "log", "--merges", "--format=%B", "main")
	conflicts := 0
	for _, line := range strings.Split(merges, "\n") {
		mem, path, ok := conflictCopy(line)
		if !ok {
			continue
		}
		conflicts++
		for _, s := range []*gitstore.Store{sa, sb} {
			m, err := s.GetByPath(ctx, path, false)
			if err != nil || m.ID != mem {
				t.Fatalf("conflict memory %s %s: %+v, %v", mem, path, m, err)
			}
		}
	}
	if conflicts == 0 {
		t.Fatal("writers on both sides wrote the same memories, yet no merge made a conflict memory")
	}
	t.Logf("%d writes answered, %d merges, %d conflict memories; main %s",
		len(answered), strings.Count(merges, "Gitmem-Actor"), conflicts, remoteHead[:7])
}

// conflictCopy reads a merge trailer that puts a memory at a conflict path.
func conflictCopy(line string) (mem, path string, ok bool) {
	v, ok := strings.CutPrefix(line, "Gitmem-Merge-Live: ")
	if !ok {
		return "", "", false
	}
	f := strings.SplitN(v, " ", 4)
	if len(f) != 4 || !strings.Contains(f[3], ".conflict-") {
		return "", "", false
	}
	return f[0], f[3], true
}

// catalogState is every live memory (path, id, version) and every version of a store.
func catalogState(t *testing.T, s *gitstore.Store) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	for cursor := ""; ; {
		page, err := s.List(ctx, gitstore.ListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			if it.Memory != nil {
				lines = append(lines, strings.Join([]string{it.Memory.Path, it.Memory.ID, it.Memory.VersionID, it.Memory.ContentSHA256}, " "))
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	for cursor := ""; ; {
		page, err := s.Versions(ctx, gitstore.VersionFilter{Limit: 1000, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			lines = append(lines, strings.Join([]string{v.ID, v.MemoryID, string(v.Operation), v.Path, v.CreatedBy.ID}, " "))
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// lineDiff lists the lines that only one of two texts has.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ia, ib := in(a), in(b)
	var out []string
	for l := range ia {
		if !ib[l] {
			out = append(out, "only a: "+l)
		}
	}
	for l := range ib {
		if !ia[l] {
			out = append(out, "only b: "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
