package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/gitmem/gitmem/gitstore"
)

// TestIncremental: every kind of write is reflected by the next search, from any caller,
// and the answer names the commit that holds it.
func TestIncremental(t *testing.T) {
	f := newFixture(t, Options{})
	id := f.write("/notes/plan.md", "alpha bravo\n")
	check := func(q string, want ...string) {
		t.Helper()
		res := f.search(q)
		if res.Commit != f.st.Head() {
			t.Errorf("search %q answered from %s, store head is %s", q, res.Commit, f.st.Head())
		}
		f.expectSet(q, want...)
	}
	check("alpha", "/notes/plan.md")
	// Edit.
	f.write("/notes/plan.md", "charlie delta\n")
	check("alpha")
	check("charlie", "/notes/plan.md")
	// Rename: the memory keeps its id and is found at its new path only.
	if _, err := f.st.UpdateMemory(f.ctx, gitstore.UpdateInput{ID: id, Path: ptr("/archive/plan.md"), Actor: actor}); err != nil {
		t.Fatal(err)
	}
	check("charlie", "/archive/plan.md")
	check("path:/notes/")
	if h := f.search("charlie").Hits[0]; h.MemoryID != id {
		t.Errorf("renamed memory's hit has id %s, want %s", h.MemoryID, id)
	}
	// Rename and edit at once.
	if _, err := f.st.UpdateMemory(f.ctx, gitstore.UpdateInput{ID: id, Path: ptr("/plan.md"), Content: ptr("echo foxtrot\n"), Actor: actor}); err != nil {
		t.Fatal(err)
	}
	check("charlie")
	check("foxtrot", "/plan.md")
	// Delete: never returned again, by any query.
	if _, err := f.st.Delete(f.ctx, gitstore.DeleteInput{ID: id, Actor: actor}); err != nil {
		t.Fatal(err)
	}
	check("foxtrot")
	check("path:/")
	check(id)
	// A new memory at the deleted path is a new memory.
	id2 := f.write("/plan.md", "foxtrot again\n")
	check("foxtrot", "/plan.md")
	if got := f.search("foxtrot").Hits[0].MemoryID; got != id2 {
		t.Errorf("hit id %s, want the new memory %s", got, id2)
	}
	// Nothing changed: the same commit answers.
	if a, b := f.search("foxtrot").Commit, f.search("again").Commit; a != b {
		t.Errorf("two searches without a write answered from %s and %s", a, b)
	}
}

// TestReadYourWrites: writers and searchers at once; every search that starts after a write
// was answered finds it. Run with -race.
func TestReadYourWrites(t *testing.T) {
	f := newFixture(t, Options{})
	const writers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				word := fmt.Sprintf("token%dx%d", w, i)
				if _, err := f.st.Write(f.ctx, gitstore.WriteInput{Path: fmt.Sprintf("/w%d/m%d.md", w, i), Content: "note " + word, Actor: actor}); err != nil {
					errs <- err
					return
				}
				res, err := f.svc.Search(f.ctx, f.st.ID(), Request{Query: word})
				if err != nil {
					errs <- err
					return
				}
				if len(res.Hits) != 1 {
					errs <- fmt.Errorf("search %s right after its write: %d hits", word, len(res.Hits))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if res := f.searchReq(Request{Query: "note", Limit: 100}); res.Total != writers*each {
		t.Errorf("%d memories found, want %d", res.Total, writers*each)
	}
}

// TestGitCLICatchUp: commits made with git in a clone and pushed are searchable, including
// a rewritten history that removes a memory.
func TestGitCLICatchUp(t *testing.T) {
	f := newFixture(t, Options{})
	f.write("/notes/todo.md", "buy milk\n")
	f.expectSet("milk", "/notes/todo.md")

	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", f.st.RepoPath(), wt)
	gitIn(t, wt, "mv", "notes/todo.md", "notes/done.md")
	must(t, os.MkdirAll(filepath.Join(wt, "people"), 0o755))
	must(t, os.WriteFile(filepath.Join(wt, "people/ann.md"), []byte("Ann likes oolong tea\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(wt, "secret.md"), []byte("the password is hunter2\n"), 0o644))
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "by hand")
	gitIn(t, wt, "push", "-q", "origin", "main")
	want := strings.TrimSpace(gitIn(t, wt, "rev-parse", "HEAD"))

	res := f.search("oolong")
	if res.Commit != want {
		t.Errorf("search answered from %s, want the pushed commit %s", res.Commit, want)
	}
	f.expectSet("oolong", "/people/ann.md")
	f.expectSet("milk", "/notes/done.md")
	f.expectSet("hunter2", "/secret.md")

	// History rewritten without the secret, and forced over main.
	gitIn(t, wt, "reset", "-q", "--hard", "HEAD~1")
	must(t, os.WriteFile(filepath.Join(wt, "people.md"), []byte("nobody\n"), 0o644))
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", "rewritten")
	gitIn(t, wt, "push", "-q", "-f", "origin", "main")
	f.expectSet("hunter2")
	f.expectSet("oolong")
	f.expectSet("milk", "/notes/todo.md")
	f.expectSet("nobody", "/people.md")
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestRebuild: the index is rebuilt when its directory is deleted (while the service is
// stopped, or under a running one), when its files are damaged, and on request; results are
// the same each time.
func TestRebuild(t *testing.T) {
	dir := t.TempDir()
	f := openFixture(t, dir, "", Options{})
	storeID := f.st.ID()
	for i := range 30 {
		f.write(fmt.Sprintf("/m/%02d.md", i), filler(i))
	}
	f.write("/target.md", "the walrus sings\n")
	want := func(f *fixture) {
		t.Helper()
		f.expectSet("walrus", "/target.md")
		if res := f.searchReq(Request{Query: "filler", Limit: 100}); res.Total != 30 {
			t.Errorf("filler: %d hits, want 30", res.Total)
		}
	}
	want(f)
	indexPath := f.svc.IndexPath(storeID)
	if _, err := os.Stat(filepath.Join(indexPath, "index_meta.json")); err != nil {
		t.Fatalf("no index at %s: %v", indexPath, err)
	}

	// Deleted while stopped.
	f.close()
	must(t, os.RemoveAll(indexPath))
	f = openFixture(t, dir, storeID, Options{})
	want(f)

	// Damaged while stopped: every file of the index overwritten with garbage.
	f.close()
	filepath.Walk(indexPath, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			must(t, os.WriteFile(p, []byte("garbage"), 0o644))
		}
		return nil
	})
	f = openFixture(t, dir, storeID, Options{})
	want(f)

	// Deleted under a running service, then written to and searched.
	must(t, os.RemoveAll(indexPath))
	f.write("/target2.md", "another walrus\n")
	f.expectSet("walrus", "/target.md", "/target2.md")

	// On request, with progress.
	var last [2]int
	must(t, f.svc.Rebuild(f.ctx, storeID, func(done, total int) { last = [2]int{done, total} }))
	if last != [2]int{32, 32} {
		t.Errorf("last progress %v, want 32 of 32", last)
	}
	f.expectSet("walrus", "/target.md", "/target2.md")

	// Reindex, for the CLI, on a data directory that no service holds.
	f.svc.Close()
	f.svc = nil
	must(t, Reindex(f.ctx, f.data, storeID, nil))
	f.svc = New(f.data, Options{})
	want2 := f.search("walrus")
	if len(want2.Hits) != 2 {
		t.Errorf("after Reindex: %q", paths(want2))
	}
}

// TestUnavailableWhileRebuilding: while the index is built from nothing, searches answer an
// *UnavailableError after RebuildWait, and writes and reads of the store go on.
func TestUnavailableWhileRebuilding(t *testing.T) {
	f := newFixture(t, Options{BatchSize: 10, RebuildWait: 1})
	for i := range 50 {
		f.write(fmt.Sprintf("/m/%02d.md", i), filler(i))
	}
	must(t, f.svc.Rebuild(f.ctx, f.st.ID(), nil)) // built before any search, which would not wait
	f.expectSet("walrus")
	paused, resume := make(chan struct{}), make(chan struct{})
	rebuilt := make(chan error, 1)
	go func() {
		var once sync.Once
		rebuilt <- f.svc.Rebuild(f.ctx, f.st.ID(), func(done, total int) {
			if done > 0 && done < total {
				once.Do(func() { close(paused); <-resume })
			}
		})
	}()
	<-paused
	_, err := f.svc.Search(f.ctx, f.st.ID(), Request{Query: "filler"})
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) || unavailable.Done != 10 || unavailable.Total != 50 {
		t.Errorf("search during a rebuild: %v, want an UnavailableError at 10 of 50", err)
	} else if !strings.Contains(err.Error(), "being rebuilt (10 of 50 memories)") {
		t.Errorf("message: %s", err)
	}
	// Of the retryable kind, which every interface maps once (HTTP: 503 overloaded_error).
	if k := gitstore.ErrorKind(err); k != gitstore.KindUnavailable {
		t.Errorf("search during a rebuild: kind %q, want %q", k, gitstore.KindUnavailable)
	}
	f.write("/during.md", "a walrus arrived during the rebuild\n")
	if _, err := f.st.GetByPath(f.ctx, "/during.md", true); err != nil {
		t.Errorf("read during a rebuild: %v", err)
	}
	close(resume)
	must(t, <-rebuilt)
	f.expectSet("walrus", "/during.md")
	if res := f.searchReq(Request{Query: "filler", Limit: 100}); res.Total != 50 {
		t.Errorf("after the rebuild: %d of 50", res.Total)
	}
}

// TestDeletedStore: the index of a deleted store goes away with it.
func TestDeletedStore(t *testing.T) {
	f := newFixture(t, Options{})
	f.write("/a.md", "walrus\n")
	f.expectSet("walrus", "/a.md")
	path := f.svc.IndexPath(f.st.ID())
	must(t, f.data.DeleteStore(f.ctx, f.st.ID()))
	if _, err := f.svc.Search(f.ctx, f.st.ID(), Request{Query: "walrus"}); !gitstore.IsKind(err, gitstore.KindNotFound) {
		t.Errorf("search of a deleted store: %v, want not_found", err)
	}
	// The indexer notices (its store is closed) or WatchAll sweeps: either way it goes.
	must(t, f.svc.WatchAll(context.Background()))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("index of a deleted store still at %s (%v)", path, err)
	}
}

// TestIndexOfAnotherFormat: an index written by a release of another format (here, of
// format 1, whose documents have no folders) is rebuilt at open, so that what the new format
// answers (a search below a folder) finds what is there.
func TestIndexOfAnotherFormat(t *testing.T) {
	dir := t.TempDir()
	f := openFixture(t, dir, "", Options{})
	storeID := f.st.ID()
	f.write("/a/b.md", "the walrus sings\n")
	f.expectSet("walrus path:/a/", "/a/b.md")
	indexPath := f.svc.IndexPath(storeID)
	f.close()

	// The index as format 1 wrote it: the same document without its folders.
	idx, err := bleve.Open(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := document("mem_01TESTMEMORY000000000000", "/a/b.md", "0000000000000000000000000000000000000000", "the walrus sings\n")
	delete(doc, fieldDirs)
	if err := idx.Index("/a/b.md", doc); err != nil {
		t.Fatal(err)
	}
	if err := idx.SetInternal(keyFormat, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}

	f = openFixture(t, dir, storeID, Options{})
	f.expectSet("walrus path:/a/", "/a/b.md")
	f.expectSet("walrus", "/a/b.md")
}
