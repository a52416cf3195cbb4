package httpapi

import (
	"context"
	"fmt"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// BenchmarkGit measures git over HTTP on a store of 10,000 memories (about 1 KB each, nested
// paths, one commit per memory as the API makes them), with an API key, each against a
// baseline in the same run:
//
//   - clone, clone-no-checkout: git clone from the server (git http-backend behind
//     net/http/cgi) against git clone file:// of the same bare repository (git alone).
//
//   - push: a push of one changed file until the API returns it and a search finds it (the
//     push returns once the catalog and the search index have caught up), against a git
//     push of the same kind of commit to a bare copy of the store over file:// (git alone: no
//     HTTP, no hook, no catalog), against the same push to git http-backend alone (behind
//     net/http/cgi, with no hook, fsync or catalog), and the same change as one API write
//     (POST), as an agent makes it.
//
//     go test ./httpapi -run '^$' -bench BenchmarkGit -benchtime 5x
func BenchmarkGit(b *testing.B) {
	const n = 10000
	g := startGitServer(b)
	// With a key, as on a network: a push records it for its commits.
	_, key, err := g.keys.Create("bench", apikeys.ReadWrite, "")
	if err != nil {
		b.Fatal(err)
	}
	store := g.createStore(b, key, "bench")
	st, err := g.data.Store(context.Background(), store)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				_, err := st.Write(context.Background(), gitstore.WriteInput{Path: fmt.Sprintf("/projects/p%04d/notes/n%05d.md", i/100, i),
					Content: fmt.Sprintf("memory %d\n%s", i, strings.Repeat("The user prefers short answers. ", 32)), Actor: LocalUser})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.Logf("filled %d memories in %v", n, time.Since(start))
	// Build the search index now, as gitmem serve does at start, and not inside a push.
	for g.api(b, "GET", "/v1/memory_stores/"+store+"/search?q=memory", key, "", nil) != 200 {
		time.Sleep(100 * time.Millisecond)
	}
	work := b.TempDir()
	ms := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }

	// Each iteration clones both ways, in alternating order, so that the machine's drift
	// weighs on both alike.
	for _, checkout := range []bool{false, true} {
		name := "clone"
		if !checkout {
			name = "clone-no-checkout"
		}
		b.Run(name, func(b *testing.B) {
			var viaHTTP, viaFile time.Duration
			for i := 0; i < b.N; i++ {
				for k := range 2 {
					src, dir := g.repoURL(key, store), filepath.Join(work, fmt.Sprintf("h%d", i))
					if (i+k)%2 == 1 {
						src, dir = "file://"+st.RepoPath(), filepath.Join(work, fmt.Sprintf("f%d", i))
					}
					args := []string{"clone", "-q", src, dir}
					if !checkout {
						args = []string{"clone", "-q", "--no-checkout", src, dir}
					}
					t0 := time.Now()
					gitOK(b, work, args...)
					if strings.HasPrefix(src, "file://") {
						viaFile += time.Since(t0)
					} else {
						viaHTTP += time.Since(t0)
					}
					b.StopTimer()
					os.RemoveAll(dir)
					b.StartTimer()
				}
			}
			b.ReportMetric(ms(viaHTTP, b.N), "http-ms/op")
			b.ReportMetric(ms(viaFile, b.N), "file-ms/op")
			b.ReportMetric(float64(viaHTTP)/float64(viaFile), "http/file")
		})
	}

	wt := filepath.Join(work, "person")
	gitOK(b, work, "clone", "-q", g.repoURL(key, store), wt)
	bare := filepath.Join(work, "copy.git")
	gitOK(b, work, "clone", "-q", "--bare", "file://"+st.RepoPath(), bare)
	local := filepath.Join(work, "local")
	gitOK(b, work, "clone", "-q", "file://"+bare, local)
	// git http-backend alone, behind net/http/cgi, on a second bare copy: no hook, no fsync,
	// no catalog.
	gitPath, _ := exec.LookPath("git")
	plainRoot := filepath.Join(work, "plain")
	gitOK(b, work, "clone", "-q", "--bare", "file://"+st.RepoPath(), filepath.Join(plainRoot, "copy.git"))
	plain := httptest.NewServer(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + plainRoot, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true"}})
	defer plain.Close()
	plainWT := filepath.Join(work, "plainwt")
	gitOK(b, work, "clone", "-q", plain.URL+"/git/copy.git", plainWT)
	edit := func(dir string, i int) string {
		word := fmt.Sprintf("zebra%dx%d", time.Now().UnixNano()%1e9, i)
		put(b, filepath.Join(dir, "projects/p0042/notes/n04242.md"), "memory 4242, edited by a person: "+word+"\n")
		gitOK(b, dir, "commit", "-qam", "edit "+word)
		return word
	}

	// Each iteration: a push over HTTP until the API reads it and search finds it, a push
	// of the same kind to the bare copy over file://, and the change as one API write.
	b.Run("push", func(b *testing.B) {
		var pushing, reading, searching, viaFile, viaAPI, viaPlain time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			gitOK(b, wt, "pull", "-q", "--rebase") // the API write of the last iteration
			word := edit(wt, i)
			edit(local, i)
			edit(plainWT, i)
			b.StartTimer()
			t0 := time.Now()
			gitOK(b, wt, "push", "-q", "origin", "main")
			t1 := time.Now()
			if c, _, ok := g.read(b, key, store, "/projects/p0042/notes/n04242.md"); !ok || !strings.Contains(c, word) {
				b.Fatalf("after push: %q", c)
			}
			t2 := time.Now()
			var hits struct{ Data []any }
			g.api(b, "GET", "/v1/memory_stores/"+store+"/search?q="+url.QueryEscape(word), key, "", &hits)
			if len(hits.Data) != 1 {
				b.Fatalf("search after push: %d hits", len(hits.Data))
			}
			t3 := time.Now()
			gitOK(b, local, "push", "-q", "origin", "main")
			t4 := time.Now()
			g.write(b, key, store, "/projects/p0042/notes/n04243.md", fmt.Sprintf("memory 4243, edited by an agent %d\n", i))
			t5 := time.Now()
			gitOK(b, plainWT, "push", "-q", "origin", "main")
			pushing, reading, searching = pushing+t1.Sub(t0), reading+t2.Sub(t1), searching+t3.Sub(t2)
			viaFile, viaAPI, viaPlain = viaFile+t4.Sub(t3), viaAPI+t5.Sub(t4), viaPlain+time.Since(t5)
		}
		b.ReportMetric(ms(pushing+reading+searching, b.N), "http-ms/op")
		b.ReportMetric(ms(pushing, b.N), "push-ms/op")
		b.ReportMetric(ms(reading, b.N), "read-ms/op")
		b.ReportMetric(ms(searching, b.N), "search-ms/op")
		b.ReportMetric(ms(viaFile, b.N), "file-ms/op")
		b.ReportMetric(ms(viaAPI, b.N), "api-write-ms/op")
		b.ReportMetric(ms(viaPlain, b.N), "plain-http-ms/op")
		b.ReportMetric(float64(pushing+reading+searching)/float64(viaFile), "http/file")
		b.ReportMetric(float64(pushing+reading+searching)/float64(viaPlain), "http/plain")
	})
}
