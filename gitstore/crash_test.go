package gitstore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gitmem/gitmem/internal/durable"
)

const (
	crashDirEnv   = "GITMEM_CRASH_DIR"
	crashStoreEnv = "GITMEM_CRASH_STORE"
	crashRoundEnv = "GITMEM_CRASH_ROUND"
)

// TestCrashChild is the child of TestCrash: it writes from four goroutines until it is
// killed, and prints each write as soon as it is acknowledged.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrash only")
	}
	ctx := context.Background()
	d, err := Open(ctx, dir, Options{MaxPacks: 4})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	s, err := d.Store(ctx, os.Getenv(crashStoreEnv))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	round := os.Getenv(crashRoundEnv)
	var mu sync.Mutex // guards stdout
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				path := fmt.Sprintf("/g%d/n%d.md", g, i%25)
				content := fmt.Sprintf("%s %d %d", round, g, i)
				res, err := s.Write(ctx, WriteInput{Path: path, Content: content, Actor: apiActor})
				mu.Lock()
				if err != nil {
					fmt.Fprintln(out, "error", err)
				} else {
					fmt.Fprintln(out, "ack", path, res.Version.ID, strings.ReplaceAll(content, " ", "_"))
				}
				out.Flush()
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
}

// TestCrash kills a writing process with SIGKILL at random moments, and checks after each
// kill that every acknowledged write survived, the repository is valid for git fsck, and
// the store still takes writes.
func TestCrash(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		return
	}
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.CreateStore(ctx, CreateStoreInput{Name: "crash", Actor: apiActor})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	d.Close()

	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	type ack struct{ version, content string }
	last := map[string]ack{} // path -> last acknowledged write
	var versions []string
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for round := 1; round <= rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashStoreEnv+"="+id, crashRoundEnv+"="+strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Once it writes, let it write for a while, then kill it in the middle of whatever
		// it does; one round in four, kill it early, maybe while it opens the store and
		// repairs what the last kill left.
		var deadline <-chan time.Time
		early := rng.Intn(4) == 0
		if early {
			deadline = time.After(time.Duration(rng.Intn(300)) * time.Millisecond)
		}
		giveUp := time.After(time.Minute)
		acked := 0
	read:
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					break read
				}
				f := strings.Fields(line)
				if f[0] != "ack" {
					t.Fatalf("round %d: child: %s", round, line)
				}
				last[f[1]] = ack{version: f[2], content: strings.ReplaceAll(f[3], "_", " ")}
				versions = append(versions, f[2])
				if acked++; acked == 1 && !early {
					deadline = time.After(time.Duration(150+rng.Intn(450)) * time.Millisecond)
				}
			case <-giveUp:
				cmd.Process.Signal(syscall.SIGKILL)
				giveUp = nil
			case <-deadline:
				cmd.Process.Signal(syscall.SIGKILL)
				deadline = nil
			}
		}
		cmd.Wait()
		if acked == 0 && !early {
			t.Fatalf("round %d: the child acknowledged no write", round)
		}

		// Reopen as the next process would, and check every acknowledged write.
		d, err := Open(ctx, dir, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		s, err := d.Store(ctx, id)
		if err != nil {
			t.Fatalf("round %d: open store: %v", round, err)
		}
		for path, a := range last {
			m, err := s.GetByPath(ctx, path, true)
			if err != nil {
				t.Fatalf("round %d: acknowledged %s lost: %v", round, path, err)
			}
			if !notOlder(*m.Content, a.content) {
				t.Fatalf("round %d: %s is %q, older than the acknowledged %q", round, path, *m.Content, a.content)
			}
		}
		for _, v := range versions {
			if _, err := s.Version(ctx, v, false); err != nil {
				t.Fatalf("round %d: acknowledged version %s lost: %v", round, v, err)
			}
		}
		fsck(t, s)
		for _, pattern := range []string{"tmp_*", durable.TempPrefix + "*"} {
			if tmps, _ := filepath.Glob(filepath.Join(s.RepoPath(), "objects", "pack", pattern)); len(tmps) > 0 {
				t.Errorf("round %d: half-written files left after reopening: %v", round, tmps)
			}
		}
		if _, err := s.Write(ctx, WriteInput{Path: "/after.md", Content: strconv.Itoa(round), Actor: apiActor}); err != nil {
			t.Fatalf("round %d: write after the crash: %v", round, err)
		}
		t.Logf("round %d: %d writes acknowledged before the kill, all present", round, acked)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// notOlder reports whether content ("round goroutine i") was written no earlier than want
// by the same goroutine.
func notOlder(content, want string) bool {
	var r1, g1, i1, r2, g2, i2 int
	fmt.Sscan(content, &r1, &g1, &i1)
	fmt.Sscan(want, &r2, &g2, &i2)
	return g1 == g2 && (r1 > r2 || r1 == r2 && i1 >= i2)
}
