package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadModifyWrite has 32 goroutines increment counters kept in shared memories, each
// with a content_sha256 precondition. The final counts must equal the successful writes,
// each of which made exactly one version and one commit; the failed ones made none.
func TestReadModifyWrite(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	counters := []string{"/counters/a.md", "/counters/b.md", "/counters/c.md"}
	for _, p := range counters {
		if _, err := s.Write(ctx, WriteInput{Path: p, Content: "0", Actor: apiActor}); err != nil {
			t.Fatal(err)
		}
	}
	before := commitCount(t, s)
	const workers, attempts = 32, 25
	var succeeded, failed atomic.Int64
	wins := make([]atomic.Int64, len(counters))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < attempts; i++ {
				k := (w + i) % len(counters)
				m, err := s.GetByPath(ctx, counters[k], true)
				if err != nil {
					t.Error(err)
					return
				}
				// Each write's content is unique, so that a lost race is never a no-op success.
				n, _ := strconv.Atoi(strings.Fields(*m.Content)[0])
				next := fmt.Sprintf("%d by %d.%d", n+1, w, i)
				_, err = s.Write(ctx, WriteInput{Path: counters[k], Content: next, Actor: apiActor,
					Precondition: &Precondition{Type: ContentSHA256, ContentSHA256: m.ContentSHA256}})
				switch {
				case err == nil:
					succeeded.Add(1)
					wins[k].Add(1)
				case IsKind(err, KindPreconditionFailed):
					failed.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	t.Logf("%d increments succeeded, %d lost the race", succeeded.Load(), failed.Load())
	for k, p := range counters {
		m, err := s.GetByPath(ctx, p, true)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Fields(*m.Content)[0], strconv.FormatInt(wins[k].Load(), 10); got != want {
			t.Errorf("%s = %s, want %s (the successful increments)", p, got, want)
		}
		page, err := s.Versions(ctx, VersionFilter{MemoryID: m.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(page.Versions), int(wins[k].Load())+1; got != want {
			t.Errorf("%s has %d versions, want %d", p, got, want)
		}
	}
	if got, want := commitCount(t, s)-before, int(succeeded.Load()); got != want {
		t.Errorf("%d commits for %d successful writes", got, want)
	}
	fsck(t, s)
}

// TestConcurrentReadersAndWriters has readers list, get and read versions while writers
// create, update, rename and delete; every read must see a consistent snapshot.
func TestConcurrentReadersAndWriters(t *testing.T) {
	ctx := context.Background()
	d := newTestDataDir(t, Options{MaxPacks: 4})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "busy", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				p := fmt.Sprintf("/w%d/n%d.md", w, i%10)
				res, err := s.Write(ctx, WriteInput{Path: p, Content: fmt.Sprint(w, i), Actor: apiActor})
				if err != nil {
					t.Error(err)
					return
				}
				switch i % 4 {
				case 1:
					to := fmt.Sprintf("/w%d/moved/n%d.md", w, i)
					_, err = s.UpdateMemory(ctx, UpdateInput{ID: res.Memory.ID, Path: &to, Actor: apiActor})
				case 3:
					_, err = s.Delete(ctx, DeleteInput{ID: res.Memory.ID, Actor: apiActor})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	var readers sync.WaitGroup
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				page, err := s.List(ctx, ListOptions{WithContent: true, Limit: 1000})
				if err != nil {
					t.Error(err)
					return
				}
				for _, it := range page.Items {
					if sha256Hex(*it.Memory.Content) != it.Memory.ContentSHA256 {
						t.Errorf("%s: content does not match its hash", it.Memory.Path)
					}
				}
				if _, err := s.Versions(ctx, VersionFilter{Limit: 50, WithContent: true}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	readers.Wait()
	fsck(t, s)
}

func commitCount(t *testing.T, s *Store) int {
	t.Helper()
	out, err := exec.Command("git", "-C", s.RepoPath(), "rev-list", "--count", "main").CombinedOutput()
	if err != nil {
		t.Fatalf("git rev-list: %v\n%s", err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fsck runs git fsck on the store's repository with no pack merge beside it: git lists a
// pack by its index and then opens it, and a merge may remove it in between, as git's own
// repack does to a git fsck that runs beside it.
func fsck(t *testing.T, s *Store) {
	t.Helper()
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	out, err := exec.Command("git", "-C", s.RepoPath(), "fsck", "--full", "--strict").CombinedOutput()
	if err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}
