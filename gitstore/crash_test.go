package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gitmem/gitmem/gitstore/internal/odb"
	"github.com/gitmem/gitmem/internal/durable"
)

const (
	crashDirEnv   = "GITMEM_CRASH_DIR"
	crashStoreEnv = "GITMEM_CRASH_STORE"
	crashRoundEnv = "GITMEM_CRASH_ROUND"
	crashFaultEnv = "GITMEM_CRASH_FAULT" // point:n: the child kills itself the nth time it reaches point
	crashPowerEnv = "GITMEM_CRASH_POWER" // set: the child reports what became durable
)

// faultPoints are the points of the write path (odb's publish.go, lockfile_linux.go, journal.go, recover.go)
// where a child can kill itself.
var faultPoints = []string{"pack-placed", "ref-locked", "journal-torn", "journal-synced", "ref-exchanged", "ref-moved", "recover",
	"checkpoint-packs", "checkpoint-ref", "journal-switch"}

// TestCrashChild is the child of TestCrash and TestPowerLoss: it writes from four goroutines
// until it is killed, and prints each write as soon as it is acknowledged.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrash and TestPowerLoss only")
	}
	var mu sync.Mutex // guards stdout
	out := bufio.NewWriter(os.Stdout)
	say := func(line string) {
		mu.Lock()
		fmt.Fprintln(out, line)
		out.Flush()
		mu.Unlock()
	}
	power := os.Getenv(crashPowerEnv) != ""
	var repo atomic.Value // the store's repository, once open
	point, nth, _ := strings.Cut(os.Getenv(crashFaultEnv), ":")
	n, _ := strconv.Atoi(nth)
	var hits atomic.Int64
	var syncing sync.Map // round -> the packs in the directory as it began
	odb.FaultHook = func(p, detail string) {
		// What is durable, for the power-loss test: the packs that were in the directory when
		// a syncfs began, once it succeeded; a merged pack (fsynced); main after a
		// checkpoint's fsync of it.
		if r, ok := repo.Load().(string); ok && power {
			switch p {
			case "syncing":
				entries, _ := os.ReadDir(filepath.Join(r, "objects", "pack"))
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				syncing.Store(detail, names)
			case "synced":
				if names, ok := syncing.LoadAndDelete(detail); ok {
					say(strings.Join(append([]string{"durable-files"}, names.([]string)...), " "))
				}
			case "merged":
				say("durable-files " + filepath.Base(detail) + ".pack " + filepath.Base(detail) + ".idx")
			case "checkpoint-ref":
				main, _ := os.ReadFile(filepath.Join(r, mainRef))
				say("durable-main " + strings.TrimSpace(string(main)))
			}
		}
		if p == point && hits.Add(1) == int64(n) {
			say("fault-hit " + p)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	if power {
		// The catalog as its last sync made it durable, for the parent to damage what came after.
		catalogSynced = func(path string) {
			if b, err := os.ReadFile(path); err == nil && os.WriteFile(path+".tmp-durable", b, 0o644) == nil {
				os.Rename(path+".tmp-durable", path+".durable")
			}
		}
	}
	// Checkpoints often: at the default, one took about 1,500 writes here, and a round to be
	// killed at the third checkpoint often did not get there in its 2 s on a loaded machine.
	opts := Options{MaxPacks: 4, checkpointBytes: 32 << 10}
	ctx := context.Background()
	d, err := Open(ctx, dir, opts)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	s, err := d.Store(ctx, os.Getenv(crashStoreEnv))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	repo.Store(s.RepoPath())
	round := os.Getenv(crashRoundEnv)
	say("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil { // the parent's go-ahead
		os.Exit(2)
	}
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

// crashRun is the state of a crash test across its rounds: what the children acknowledged.
type crashRun struct {
	t        *testing.T
	dir, id  string
	rng      *rand.Rand
	last     map[string]crashAck // path -> last acknowledged write
	versions []string
	// faults counts the rounds given a fault point, missed those whose point the child never
	// reached (it was then killed after 2 s).
	faults, missed int
}

type crashAck struct{ version, content string }

func newCrashRun(t *testing.T) *crashRun {
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
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	return &crashRun{t: t, dir: dir, id: id, rng: rand.New(rand.NewSource(seed)), last: map[string]crashAck{}}
}

// round runs one child until it dies: killed with SIGKILL by the test after a random time
// (early, one round in four, maybe while it opens the store), or by itself at fault
// (point:n), if given; the child then says "fault-hit". ready is called once the child has
// opened the store and before it writes. It returns how many writes were acknowledged.
func (c *crashRun) round(round int, fault string, power bool, ready func(), durable func(fields []string)) int {
	t := c.t
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+c.dir, crashStoreEnv+"="+c.id, crashRoundEnv+"="+strconv.Itoa(round))
	if fault != "" {
		cmd.Env = append(cmd.Env, crashFaultEnv+"="+fault)
	}
	if power {
		cmd.Env = append(cmd.Env, crashPowerEnv+"=1")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var deadline <-chan time.Time
	early := fault == "" && c.rng.Intn(4) == 0
	if fault != "" {
		deadline = time.After(5 * time.Second) // if the point is not reached (recover: no crash left records)
	}
	if early {
		deadline = time.After(time.Duration(c.rng.Intn(300)) * time.Millisecond)
	}
	giveUp := time.After(time.Minute)
	acked, hit := 0, false
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break read
			}
			f := strings.Fields(line)
			switch f[0] {
			case "ready":
				if ready != nil {
					ready()
				}
				fmt.Fprintln(stdin, "go")
				continue
			case "fault-hit":
				hit = true
				continue
			case "durable-files", "durable-main":
				if durable != nil {
					durable(f)
				}
				continue
			case "ack":
			default:
				t.Fatalf("round %d: child: %s", round, line)
			}
			c.last[f[1]] = crashAck{version: f[2], content: strings.ReplaceAll(f[3], "_", " ")}
			c.versions = append(c.versions, f[2])
			if acked++; acked == 1 && !early && fault == "" {
				deadline = time.After(time.Duration(150+c.rng.Intn(450)) * time.Millisecond)
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
	if acked == 0 && !early && fault == "" {
		t.Fatalf("round %d: the child acknowledged no write", round)
	}
	if fault != "" {
		c.faults++
		if !hit {
			c.missed++
			t.Logf("round %d: %s was not reached; the child was killed after 2 s", round, fault)
		}
	}
	return acked
}

// faultRound runs a round that kills the child at fault, after a round killed at random
// without a check (whose reopening would empty the journal) when fault is in the recovery:
// so that there is something to recover.
func (c *crashRun) faultRound(round int, fault string, power bool, ready func(), durable func([]string)) int {
	if strings.HasPrefix(fault, "recover") {
		c.round(round, "", false, nil, nil)
	}
	return c.round(round, fault, power, ready, durable)
}

// checkFaults fails the test when most fault points were never reached: a renamed point, or
// one the writes no longer pass, would otherwise turn those rounds into random kills.
func (c *crashRun) checkFaults() {
	if c.faults > 0 && 2*c.missed > c.faults {
		c.t.Errorf("%d of %d fault points were never reached", c.missed, c.faults)
	}
}

// check reopens the store as the next process would and checks every acknowledged write,
// git fsck, that no half-written file is left, and that the store takes writes.
func (c *crashRun) check(round int) {
	t := c.t
	ctx := context.Background()
	d, err := Open(ctx, c.dir, Options{})
	if err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	s, err := d.Store(ctx, c.id)
	if err != nil {
		t.Fatalf("round %d: open store: %v", round, err)
	}
	for path, a := range c.last {
		m, err := s.GetByPath(ctx, path, true)
		if err != nil {
			t.Fatalf("round %d: acknowledged %s lost: %v", round, path, err)
		}
		if !notOlder(*m.Content, a.content) {
			t.Fatalf("round %d: %s is %q, older than the acknowledged %q", round, path, *m.Content, a.content)
		}
	}
	for _, v := range c.versions {
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
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCrash kills a writing process with SIGKILL, at random moments and at each fault
// point of the write path (in the middle of a group, of a journal record, of a checkpoint,
// of the recovery of the last crash), and checks after each kill that every acknowledged
// write survived, the repository is valid for git fsck, and the store still takes writes.
func TestCrash(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		return
	}
	c := newCrashRun(t)
	rounds := 8 + 2*len(faultPoints)
	if testing.Short() {
		rounds = 3 + len(faultPoints)
	}
	for round := 1; round <= rounds; round++ {
		fault := ""
		if round%2 == 0 || testing.Short() && round > 3 {
			fault = c.fault(faultPoints)
		}
		acked := c.faultRound(round, fault, false, nil, nil)
		c.check(round)
		t.Logf("round %d (kill at %s): %d writes acknowledged before the kill, all present", round, orRandom(fault), acked)
	}
	c.checkFaults()
}

// TestPowerLoss simulates a power cut: after the child is killed (at a random moment or a
// fault point), every pack and index it wrote without fsync is, at random, kept, removed,
// cut short or zeroed, and main, if it moved since it was last made durable, is set back to
// that value, emptied or removed; the journal and the catalog, which it fsynced, stay. What
// is durable the child says as it goes, from the events themselves: the packs that were in
// the directory when a syncfs began, once it succeeded; a merged pack (fsynced before it is
// published); main, once a checkpoint fsynced it. So a checkpoint that dropped records whose
// packs no syncfs had covered would lose writes here. Every acknowledged write must survive.
func TestPowerLoss(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		return
	}
	c := newCrashRun(t)
	rounds := 10
	if testing.Short() {
		rounds = 4
	}
	totalCheckpoints := 0
	for round := 1; round <= rounds; round++ {
		fault := ""
		if round%2 == 0 {
			fault = c.fault(faultPoints)
		}
		repo := filepath.Join(c.dir, "stores", c.id+".git")
		packDir := filepath.Join(repo, "objects", "pack")
		durable := map[string]bool{} // a merge at open may report before ready
		ready := false
		var mainDurable []byte
		checkpoints := 0
		acked := c.faultRound(round, fault, true, func() {
			ready = true
			entries, _ := os.ReadDir(packDir)
			for _, e := range entries {
				durable[e.Name()] = true
			}
			mainDurable, _ = os.ReadFile(filepath.Join(repo, mainRef))
		}, func(f []string) {
			switch f[0] {
			case "durable-files":
				for _, name := range f[1:] {
					durable[name] = true
				}
			case "durable-main":
				checkpoints++
				mainDurable = []byte(f[1] + "\n")
			}
		})
		totalCheckpoints += checkpoints
		lost := 0
		if ready { // else the child died opening the store, which fsyncs what it writes
			lost = c.losePower(packDir, durable, filepath.Join(repo, mainRef), mainDurable)
			lost += c.loseCatalogPages(filepath.Join(c.dir, "catalog", c.id+".db"))
		}
		c.check(round)
		// Set back to its last sync, the catalog opened whole; one set aside would lose what
		// history does not hold.
		if damaged, _ := filepath.Glob(filepath.Join(c.dir, "catalog", "*.damaged")); len(damaged) > 0 {
			t.Fatalf("round %d: the catalog was set aside as damaged", round)
		}
		t.Logf("round %d (kill at %s): %d writes acknowledged, %d checkpoints, %d files damaged by the power cut; all writes present",
			round, orRandom(fault), acked, checkpoints, lost)
	}
	if totalCheckpoints == 0 {
		t.Error("no checkpoint in any round: the test no longer covers them")
	}
	c.checkFaults()
}

// losePower damages what was written without fsync since durable was listed, as a power
// cut may, and returns how many files it changed.
func (c *crashRun) losePower(packDir string, durable map[string]bool, ref string, refBefore []byte) int {
	n := 0
	entries, _ := os.ReadDir(packDir)
	for _, e := range entries {
		if durable[e.Name()] || !(strings.HasSuffix(e.Name(), ".pack") || strings.HasSuffix(e.Name(), ".idx")) {
			continue
		}
		path := filepath.Join(packDir, e.Name())
		info, err := os.Stat(path)
		if err != nil {
			c.t.Fatal(err)
		}
		switch c.rng.Intn(4) {
		case 0: // kept
			continue
		case 1:
			err = os.Remove(path)
		case 2:
			err = os.Truncate(path, c.rng.Int63n(info.Size()+1))
		case 3:
			err = os.WriteFile(path, make([]byte, info.Size()), 0o644)
		}
		if err != nil {
			c.t.Fatal(err)
		}
		n++
	}
	if now, _ := os.ReadFile(ref); string(now) == string(refBefore) {
		return n // not moved since it was durable
	}
	var err error
	switch c.rng.Intn(4) {
	case 0: // kept
		return n
	case 1:
		err = os.WriteFile(ref, refBefore, 0o644)
	case 2:
		err = os.WriteFile(ref, nil, 0o644)
	case 3:
		err = os.Remove(ref)
	}
	if err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
	return n + 1
}

// loseCatalogPages damages the pages of the catalog written since its last sync (catalog_sync.go),
// as a power cut may: each is kept, set back to what the sync left or zeroed. It returns how
// many it changed.
func (c *crashRun) loseCatalogPages(path string) int {
	before, err := os.ReadFile(path + ".durable")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		c.t.Fatal(err)
	}
	now, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatal(err)
	}
	const page = 4096
	n := 0
	for off := 0; off+page <= len(now); off += page {
		if off+page <= len(before) && bytes.Equal(now[off:off+page], before[off:off+page]) {
			continue
		}
		switch c.rng.Intn(3) {
		case 0: // kept
			continue
		case 1:
			if off+page <= len(before) {
				copy(now[off:off+page], before[off:off+page])
				break
			}
			fallthrough
		case 2:
			clear(now[off : off+page])
		}
		n++
	}
	if err := os.WriteFile(path, now, 0o644); err != nil {
		c.t.Fatal(err)
	}
	return n
}

// fault picks a point and how many times the child passes it before it dies: recovery runs
// once per process and a checkpoint seldom, the others once per group.
func (c *crashRun) fault(points []string) string {
	p := points[c.rng.Intn(len(points))]
	switch {
	case p == "recover":
		return p + ":1"
	case strings.HasPrefix(p, "checkpoint"):
		return fmt.Sprintf("%s:%d", p, 1+c.rng.Intn(3))
	case p == "journal-switch":
		// About every other round of the syncer, which pauses between them: with 60, half
		// the runs that chose it ended before reaching it.
		return fmt.Sprintf("%s:%d", p, 1+c.rng.Intn(20))
	}
	return fmt.Sprintf("%s:%d", p, 1+c.rng.Intn(60))
}

func orRandom(fault string) string {
	if fault == "" {
		return "a random moment"
	}
	return fault
}

// notOlder reports whether content ("round goroutine i") was written no earlier than want
// by the same goroutine.
func notOlder(content, want string) bool {
	var r1, g1, i1, r2, g2, i2 int
	fmt.Sscan(content, &r1, &g1, &i1)
	fmt.Sscan(want, &r2, &g2, &i2)
	return g1 == g2 && (r1 > r2 || r1 == r2 && i1 >= i2)
}
