package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitmem/gitmem/secrets/secrettest"
)

// TestGitmemServerAsRemote: a store imported from a gitmem server's /git/ route syncs from
// it, but the push of gitmem's own commits is refused by that server's push rules, and the
// sync says so and what to use instead.
func TestGitmemServerAsRemote(t *testing.T) {
	ctx := context.Background()
	_, a, id := serverWithRemote(t)
	if _, err := a.write(id, "/a.md", "on the server\n"); err != nil {
		t.Fatal(err)
	}
	url := a.url + "/git/" + id + ".git"
	b := startServer(t, "b", importFrom(t, url))
	r, err := Add(b.dir, id, "team", "server", url, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.write(id, "/b.md", "written on b\n"); err != nil {
		t.Fatal(err)
	}
	before := a.store(t, id).Head()
	_, err = b.y.Sync(ctx, b.store(t, id), r)
	if err == nil || !strings.Contains(err.Error(), "gitmem's own trailers") ||
		!strings.Contains(err.Error(), "sync through a plain git repository instead") {
		t.Fatalf("sync to a gitmem server: %v", err)
	}
	if a.store(t, id).Head() != before {
		t.Fatal("the server's main moved")
	}
}

// TestLoopBacksOff: the loop tries a remote that is down once, then waits out the backoff
// instead of trying again at every interval; the state says when it tries next.
func TestLoopBacksOff(t *testing.T) {
	_, a, id := serverWithRemote(t)
	if _, err := Add(a.dir, id, "team", "down", filepath.Join(t.TempDir(), "missing.git"), time.Now()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	l := &Loop{Syncer: a.y, Data: a.data, Interval: 100 * time.Millisecond, Log: quietLog()}
	l.Run(ctx)
	st := func() State { s, _ := States(a.dir, id); return s["down"] }()
	if st.Failures != 1 || st.LastError == "" || st.NextTry.Sub(st.LastTry) != Backoff(1) {
		t.Fatalf("after 1.5s of 100ms intervals with a 5s backoff: %+v", st)
	}
	if Backoff(2) != 10*time.Second || Backoff(20) != 10*time.Minute {
		t.Errorf("backoff: %s, %s", Backoff(2), Backoff(20))
	}
}

// TestSyncChecksFetchedCommits: commits on the remote that break the store's rules (a
// secret, under the default policy reject) are refused whole by sync, with the file and the
// kind of secret and without the secret; main does not move.
func TestSyncChecksFetchedCommits(t *testing.T) {
	ctx := context.Background()
	remote, a, id := serverWithRemote(t)
	s, r := syncOnce(t, a, id, remote)
	before := s.Head()

	token := secrettest.GitHubToken()
	clone := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(clone), "clone", "-q", remote, clone)
	if err := os.WriteFile(filepath.Join(clone, "ci.md"), []byte("The CI token is "+token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, clone, "add", "ci.md")
	git(t, clone, "commit", "-q", "-m", "ci notes")
	git(t, clone, "push", "-q", "origin", "main")

	_, err := a.y.Sync(ctx, s, r)
	if err == nil || !strings.Contains(err.Error(), "/ci.md") || !strings.Contains(err.Error(), "github-pat") ||
		!strings.Contains(err.Error(), "nothing was merged") {
		t.Fatalf("sync of a remote with a secret: %v", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Fatalf("the error echoes the secret: %v", err)
	}
	if s.Head() != before {
		t.Fatalf("main moved from %s to %s", before, s.Head())
	}
	states, _ := States(a.dir, id)
	if !strings.Contains(states["origin"].LastError, "/ci.md") {
		t.Fatalf("sync state: %+v", states["origin"])
	}
}
