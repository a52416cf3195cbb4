package search

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The kill test re-runs the test binary as a child that indexes a store and reports each
// batch; the parent kills it with SIGKILL in the middle and checks what a new process finds.
const (
	envKillDir   = "GITMEM_SEARCH_KILL_DIR"
	envKillStore = "GITMEM_SEARCH_KILL_STORE"
)

// TestKillChild is the child: it catches the index of a store up, printing "batch DONE
// TOTAL" after each batch, until it is killed. It does nothing in a normal run.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(envKillDir)
	if dir == "" {
		t.Skip("the child of TestKill9DuringIndexing")
	}
	opts := Options{BatchSize: 50, afterBatch: func(done, total int) {
		fmt.Printf("batch %d %d\n", done, total)
	}}
	f := openFixture(t, dir, os.Getenv(envKillStore), opts)
	f.search("memory") // catches up, from nothing or from the commit the index reflects
	fmt.Println("finished")
	select {} // wait to be killed
}

// memoryState is what the store holds: path -> generation word of its content.
type memoryState map[string]string

// push makes one commit with the git CLI in the clone wt that sets files (content "") to
// delete, and pushes it.
func push(t *testing.T, wt string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(wt, p)
		if content == "" {
			must(t, os.Remove(full))
			continue
		}
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(content), 0o644))
	}
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "-qm", fmt.Sprintf("%d files", len(files)))
	gitIn(t, wt, "push", "-q", "origin", "main")
}

func content(i int, gen string) string {
	return fmt.Sprintf("memory u%04d %s\nline two\n", i, gen)
}

func memPath(i int) string { return fmt.Sprintf("/d%02d/m%04d.md", i%20, i) }

// killChild runs the child on dir and kills it once it has applied a third of its batches.
// It returns whether the child had finished before the kill.
func killChild(t *testing.T, dir, storeID string) (finished bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
	cmd.Env = append(os.Environ(), envKillDir+"="+dir, envKillStore+"="+storeID)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if line == "finished" {
			finished = true
			break
		}
		var done, total int
		if _, err := fmt.Sscanf(line, "batch %d %d", &done, &total); err == nil && done*3 >= total {
			t.Logf("killing the child after it indexed %d of %d changes", done, total)
			break
		}
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	return finished
}

// verify checks that a fresh process finds exactly the memories of want.
func verify(t *testing.T, dir, storeID string, want memoryState) {
	t.Helper()
	// The index may have to be built again from nothing, which takes a while under the race
	// detector: wait for it rather than take the "being rebuilt" answer.
	f := openFixture(t, dir, storeID, Options{RebuildWait: 5 * time.Minute})
	defer f.close()
	counts := map[string]int{}
	for _, gen := range want {
		counts[gen]++
	}
	if got := f.searchReq(Request{Query: "path:/"}).Total; got != uint64(len(want)) {
		t.Errorf("index holds %d memories, the store %d", got, len(want))
	}
	for _, gen := range []string{"genone", "gentwo", "genthree"} {
		if got := f.searchReq(Request{Query: strconv.Quote(gen)}).Total; got != uint64(counts[gen]) {
			t.Errorf("%s: %d memories found, want %d", gen, got, counts[gen])
		}
	}
	for i := 0; i < 3000; i += 7 {
		q := fmt.Sprintf(`"u%04d"`, i)
		res := f.searchReq(Request{Query: q})
		gen, ok := want[memPath(i)]
		switch {
		case !ok && len(res.Hits) != 0:
			t.Errorf("%s: deleted memory %s found: %q", q, memPath(i), paths(res))
		case ok && (len(res.Hits) != 1 || !strings.Contains(res.Hits[0].Snippets[0].Text, gen)):
			t.Errorf("%s: %+v, want %s with %s", q, res.Hits, memPath(i), gen)
		}
	}
}

// TestKill9DuringIndexing kills a process with SIGKILL while it builds an index from nothing,
// and again while it catches up with a large change; then changes the store again, partly
// back. A new process must find exactly what the store holds: nothing half indexed, nothing
// deleted, nothing stale.
func TestKill9DuringIndexing(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes thousands of memories in child processes")
	}
	dir := t.TempDir()
	f := newFixtureIn(t, dir)
	storeID := f.st.ID()
	wt := filepath.Join(t.TempDir(), "clone")
	gitIn(t, ".", "clone", "-q", f.st.RepoPath(), wt)
	f.close() // the data directory is the child's now

	// C1: 2000 memories, indexed from nothing by a child that is killed.
	state, files := memoryState{}, map[string]string{}
	for i := range 2000 {
		files[memPath(i)[1:]] = content(i, "genone")
		state[memPath(i)] = "genone"
	}
	push(t, wt, files)
	if killChild(t, dir, storeID) {
		t.Log("the child finished the build before it was killed")
	}
	verify(t, dir, storeID, state)

	// C2: 1000 changed, 500 deleted, 500 added; caught up by a child that is killed.
	files = map[string]string{}
	for i := range 2500 {
		switch {
		case i < 1000:
			files[memPath(i)[1:]], state[memPath(i)] = content(i, "gentwo"), "gentwo"
		case i < 1500:
			files[memPath(i)[1:]] = ""
			delete(state, memPath(i))
		case i >= 2000:
			files[memPath(i)[1:]], state[memPath(i)] = content(i, "gentwo"), "gentwo"
		}
	}
	push(t, wt, files)
	if killChild(t, dir, storeID) {
		t.Log("the child finished the catch-up before it was killed")
	}

	// C3: 300 of the changed memories back to what the index reflected before the kill
	// (so that a diff from that commit does not name them), 100 deleted ones back, and
	// 100 others changed again.
	files = map[string]string{}
	for i := range 300 {
		files[memPath(i)[1:]], state[memPath(i)] = content(i, "genone"), "genone"
	}
	for i := 1000; i < 1100; i++ {
		files[memPath(i)[1:]], state[memPath(i)] = content(i, "genone"), "genone"
	}
	for i := 2000; i < 2100; i++ {
		files[memPath(i)[1:]], state[memPath(i)] = content(i, "genthree"), "genthree"
	}
	push(t, wt, files)
	verify(t, dir, storeID, state)
}

// newFixtureIn is newFixture in a given directory.
func newFixtureIn(t *testing.T, dir string) *fixture {
	t.Helper()
	return openFixture(t, dir, "", Options{})
}
