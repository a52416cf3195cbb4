package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGC makes many small packs, then runs GC while a goroutine keeps reading: one pack is
// left, git fsck is clean, everything reads back, and the objects take less room.
func TestGC(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	d := newTestDataDir(t, Options{MaxPacks: 10000, IdlePack: time.Hour})
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "gc", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 300; i++ {
		path := fmt.Sprintf("/notes/%02d/n%d.md", i%17, i%60)
		res := mustWrite(t, s, path, fmt.Sprintf("note %d\n%s", i, longText(i)), apiActor)
		if i < 60 {
			ids = append(ids, res.Memory.ID)
		}
	}
	before, err := s.repo.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if before.Packs < 100 {
		t.Fatalf("only %d packs before gc", before.Packs)
	}

	// Read all the while.
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, id := range ids {
				if _, err := s.Get(ctx, id, true); err != nil {
					readErr = err
					return
				}
				reads.Add(1)
			}
			if _, err := s.Versions(ctx, VersionFilter{Limit: 50, WithContent: true}); err != nil {
				readErr = err
				return
			}
		}
	}()
	res, err := s.GC(ctx)
	time.Sleep(50 * time.Millisecond) // reads after the swap too
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if readErr != nil {
		t.Fatalf("read during gc: %v", readErr)
	}
	t.Logf("gc: %+v -> %+v in %s; %d reads meanwhile", res.Before, res.After, res.Took, reads.Load())
	if res.After.Packs != 1 || res.After.LooseObjects != 0 || res.After.Bytes() >= res.Before.Bytes() {
		t.Fatalf("after gc: %+v (before %+v)", res.After, res.Before)
	}
	if out, err := exec.Command("git", "--git-dir", s.RepoPath(), "fsck", "--full", "--strict").CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	// Every version's content reads back, and writes go on.
	f := VersionFilter{Limit: 1000, WithContent: true}
	n := 0
	for {
		page, err := s.Versions(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			if v.Content == nil || sha256Hex(*v.Content) != v.ContentSHA256 {
				t.Fatalf("version %s: bad content", v.ID)
			}
		}
		n += len(page.Versions)
		if f.Cursor = page.NextCursor; f.Cursor == "" {
			break
		}
	}
	if n != 300 {
		t.Fatalf("%d versions after gc", n)
	}
	mustWrite(t, s, "/after.md", "after gc", apiActor)
	if got := contentOf(t, s, ids[0]); got == "" {
		t.Fatal("no content")
	}
	// Again: nothing to gain, nothing lost.
	if res, err = s.GC(ctx); err != nil || res.After.Packs != 1 {
		t.Fatalf("second gc: %+v, %v", res, err)
	}
}

func longText(i int) string {
	b := make([]byte, 0, 2000)
	for k := 0; k < 40; k++ {
		b = fmt.Appendf(b, "line %d of a note that changes a little: %d\n", k, i%7)
	}
	return string(b)
}
