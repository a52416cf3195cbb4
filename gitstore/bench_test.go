package gitstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
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

// The benchmarks compare, in one run, a gitmem write with the same write done through the
// git CLI plumbing and with an atomic write of a plain file. Sizes of 100,000 memories are
// opt-in: set GITMEM_BENCH_LARGE=1.
//
//	go test ./gitstore -run '^$' -bench 'Write|Read|Plumbing' -benchtime 1000x
//	GITMEM_BENCH_LARGE=1 go test ./gitstore -run '^$' -bench 'Write|Read|Plumbing' -benchtime 1000x -timeout 60m
//
// BenchmarkWriteAlternating compares the sizes with each other in blocks of 1,000 writes taken
// in turn, each round begun by another size: e.g. -bench Alternating -benchtime 9000x.
//
// BenchmarkRedact rewrites a whole history per operation: run it alone, with -benchtime 1x.

func benchSizes() []int {
	if benchLarge() {
		return []int{100, 10000, 100000}
	}
	return []int{100, 10000}
}

// benchLarge tells whether the sizes of 100,000 memories were asked for.
func benchLarge() bool { return os.Getenv("GITMEM_BENCH_LARGE") != "" }

// benchPath is where agents put memories: nested, about a hundred per folder.
func benchPath(i int) string {
	return fmt.Sprintf("/projects/p%04d/notes/n%05d.md", i/100, i)
}

// benchContent is about 1 KB of text.
func benchContent(i int) string {
	return fmt.Sprintf("memory %d\n%s", i, strings.Repeat("The user prefers short answers. ", 32))
}

// fill writes n memories with 64 concurrent writers, so that group commit makes it quick.
func fill(tb testing.TB, s *Store, n int, path func(int) string) {
	tb.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if _, err := s.Write(context.Background(), WriteInput{Path: path(i), Content: benchContent(i), Actor: apiActor}); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func benchStore(b *testing.B) *Store { return benchStoreWith(b, Options{}) }

func benchStoreWith(b *testing.B, opts Options) *Store {
	b.Helper()
	d := newTestDataDir(b, opts)
	s, err := d.CreateStore(context.Background(), CreateStoreInput{Name: "bench", Actor: apiActor})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkWrite is sequential writes (updates of existing memories) in a store that
// already holds n memories. The cost per write should not grow with n.
//
// It also reports merge-s, the seconds of pack merges that ended while it wrote. The timing
// begins once the merges that the fill left are done (settle).
//
// With the large sizes, the size of 100 runs again at the end, as memories=100,again. The
// cost of creating a file on this project's disk grows with the files removed in the last
// minutes (architecture.md, the write path), and the fills of the large stores remove
// thousands: the first run at 100 is the only one on a quiet disk, and the last one stands
// on the same footing as the large ones.
func BenchmarkWrite(b *testing.B) {
	type run struct {
		name string
		n    int
	}
	var runs []run
	for _, n := range benchSizes() {
		runs = append(runs, run{fmt.Sprintf("memories=%d", n), n})
	}
	if benchLarge() {
		runs = append(runs, run{"memories=100,again", 100})
	}
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) { benchWrites(b, r.n, nil) })
	}
}

// BenchmarkWriteAlternating times writes in stores of each of benchSizes in turn, blocks of
// 1,000 writes each, so that all sizes meet the same state of a shared, noisy machine.
// BenchmarkWrite runs the sizes one after another, minutes apart, and in one run of it the
// write at 100 took 1.15 ms at first and 1.65 ms again after the larger sizes (performance.md):
// more than the difference it measures.
//
// Each size reports its mean and median write (<n>-us, <n>-p50-us) and their ratio to the
// first size's (<n>-ratio, <n>-p50-ratio). Between blocks the merges that a block left are
// finished, untimed (settle), so that one store's merges do not slow another's writes. That
// takes out of the timing the merging that would have run beside the next writes (more of it
// in the larger stores, whose merges are longer), so each size also reports that untimed time
// a write (<n>-settle-us) and the ratio with it counted as if the writer had waited for it
// (<n>-settled-ratio): the true cost lies between the two ratios. <n>-merge-us is the time of
// all of a store's merges a write, <n>-beside-% the share of its timed writes beside a merge
// of any of the stores. ns/op is one write at each size.
func BenchmarkWriteAlternating(b *testing.B) {
	const block = 1000
	type side struct {
		n       int
		s       *Store
		merges  *mergeTimer
		starts  []time.Time
		took    []time.Duration
		settled time.Duration
	}
	var sides []*side
	sampleRSS(b)
	for _, n := range benchSizes() {
		sd := &side{n: n, merges: &mergeTimer{}}
		// A store waits for the others' blocks, longer than IdlePack: its idle work (a
		// merge down to a few packs, a checkpoint) would then run beside their writes.
		sd.s = benchStoreWith(b, Options{Observer: sd.merges, IdlePack: time.Hour})
		fill(b, sd.s, n, benchPath)
		settle(sd.s)
		sd.merges.start()
		sides = append(sides, sd)
	}
	ctx := context.Background()
	b.ResetTimer()
	defer cpuProfile(b)()
	for i := 0; i < b.N; i += block {
		round := i / block
		for r := range sides {
			// Each round starts with another size, so that none always follows the same.
			sd := sides[(r+round)%len(sides)]
			for j := i; j < min(i+block, b.N); j++ {
				k := (j * 7919) % sd.n
				start := time.Now()
				if _, err := sd.s.Write(ctx, WriteInput{Path: benchPath(k), Content: benchContent(k + j + 1), Actor: apiActor}); err != nil {
					b.Fatal(err)
				}
				sd.starts, sd.took = append(sd.starts, start), append(sd.took, time.Since(start))
			}
			b.StopTimer()
			start := time.Now()
			settle(sd.s)
			sd.settled += time.Since(start)
			b.StartTimer()
		}
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		d = slices.Sorted(slices.Values(d))
		return float64(d[len(d)/2].Microseconds())
	}
	perWrite := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	first := sides[0]
	for _, sd := range sides {
		beside := 0
		for i, from := range sd.starts {
			if slices.ContainsFunc(sides, func(o *side) bool { return o.merges.ranDuring(from, from.Add(sd.took[i])) }) {
				beside++
			}
		}
		name := strconv.Itoa(sd.n)
		b.ReportMetric(meanUS(sd.took), name+"-us")
		b.ReportMetric(p50(sd.took), name+"-p50-us")
		b.ReportMetric(perWrite(sd.settled), name+"-settle-us")
		b.ReportMetric(perWrite(sd.merges.stop()), name+"-merge-us")
		b.ReportMetric(100*float64(beside)/float64(b.N), name+"-beside-%")
		if sd != first {
			b.ReportMetric(meanUS(sd.took)/meanUS(first.took), name+"-ratio")
			b.ReportMetric(p50(sd.took)/p50(first.took), name+"-p50-ratio")
			b.ReportMetric((meanUS(sd.took)+perWrite(sd.settled))/(meanUS(first.took)+perWrite(first.settled)), name+"-settled-ratio")
		}
	}
	reportMaxRSS(b)
}

// BenchmarkWriteBesideMerge is BenchmarkWrite while all of the store's packs merge into one,
// as happens now and then to the largest ones (git's geometric progression): at 100,000
// memories that merge takes about a second, and a writer that waited for it at its backlog
// of packs took 0.7 s for one write (max-us).
func BenchmarkWriteBesideMerge(b *testing.B) {
	n := slices.Max(benchSizes())
	b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
		benchWrites(b, n, func(s *Store) (wait func()) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.maintain(1)
			}()
			return func() { <-done }
		})
	})
}

// benchWrites times sequential writes in a store of n memories, with beside (if any) called
// once the fill's merges are done, as the timing begins; what it started ends before the
// store closes.
func benchWrites(b *testing.B, n int, beside func(s *Store) (wait func())) {
	sampleRSS(b)
	merges := &mergeTimer{}
	s := benchStoreWith(b, Options{Observer: merges})
	fill(b, s, n, benchPath)
	settle(s)
	fillRSS := maxRSS() // the peak so far: the fill's and its merges'
	ctx := context.Background()
	merges.start()
	took := make([]time.Duration, b.N)
	starts := make([]time.Time, b.N)
	b.ResetTimer()
	if beside != nil {
		defer beside(s)()
	}
	defer cpuProfile(b)()
	for i := 0; i < b.N; i++ {
		k := (i * 7919) % n
		starts[i] = time.Now()
		if _, err := s.Write(ctx, WriteInput{Path: benchPath(k), Content: benchContent(k + i + 1), Actor: apiActor}); err != nil {
			b.Fatal(err)
		}
		took[i] = time.Since(starts[i])
	}
	b.StopTimer()
	b.ReportMetric(merges.stop().Seconds(), "merge-s")
	merges.reportBeside(b, starts, took)
	reportLatency(b, took)
	if st, err := s.repo.Stats(); err == nil {
		b.ReportMetric(float64(st.Bytes())/1e6, "objects-MB")
	}
	if fillRSS > 0 {
		b.ReportMetric(fillRSS, "fillRSS-MB")
	}
	reportMaxRSS(b)
}

// cpuProfile writes a CPU profile of the writes, without the fill, to
// $GITMEM_BENCH_CPUPROFILE.<n>, and returns what ends it; n counts the runs of benchmarks (go
// test runs each once with b.N = 1 before the run that counts). go test's -cpuprofile takes
// in the fill, which at 100,000 memories is most of the time (and cannot run beside this one).
// In BenchmarkWriteAlternating the profile also holds the settles between blocks.
func cpuProfile(b *testing.B) (stop func()) {
	prefix := os.Getenv("GITMEM_BENCH_CPUPROFILE")
	if prefix == "" {
		return func() {}
	}
	profiles++
	f, err := os.Create(fmt.Sprintf("%s.%d", prefix, profiles))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// profiles counts the CPU profiles written in this run (benchmarks run one at a time).
var profiles int

// settle waits for the merges that a fill left behind. Its 64 writers make packs faster than
// the maintainer merges them, and the first writes timed after a fill of 100,000 memories
// waited for the merging of that backlog: one write took 0.4-0.8 s in three runs of six
// (performance.md). That is the cost of the fill's writes, not of those timed.
func settle(s *Store) {
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	s.packAndMerge(s.opts.MaxPacks)
}

// mergeTimer counts the pack maintenance runs that end between start and stop, adds up
// their time and keeps when each ran.
type mergeTimer struct {
	nopObserver
	mu     sync.Mutex
	on     bool
	runs   int
	merged time.Duration
	spans  [][2]time.Time // from, to
}

func (m *mergeTimer) PacksMerged(_ string, _ int, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.on {
		m.runs++
		m.merged += took
		now := time.Now()
		m.spans = append(m.spans, [2]time.Time{now.Add(-took), now})
	}
}

func (m *mergeTimer) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on, m.runs, m.merged, m.spans = true, 0, 0, nil
}

// reportBeside splits the writes that began at starts and took took into those during which
// a merge ran and those apart from any, and reports the share of the first (beside-%) and
// the mean of each (beside-us, apart-us): at 100,000 memories merges run a larger share of
// the time, and a write beside one takes longer, which a mean alone does not tell apart from
// a write that costs more itself.
func (m *mergeTimer) reportBeside(b *testing.B, starts []time.Time, took []time.Duration) {
	var beside, apart []time.Duration
	for i, from := range starts {
		if m.ranDuring(from, from.Add(took[i])) {
			beside = append(beside, took[i])
		} else {
			apart = append(apart, took[i])
		}
	}
	b.ReportMetric(100*float64(len(beside))/float64(len(starts)), "beside-%")
	b.ReportMetric(meanUS(beside), "beside-us")
	b.ReportMetric(meanUS(apart), "apart-us")
}

// ranDuring tells whether a merge that ended since start ran between from and to.
func (m *mergeTimer) ranDuring(from, to time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.ContainsFunc(m.spans, func(s [2]time.Time) bool { return s[0].Before(to) && from.Before(s[1]) })
}

// meanUS is the mean of d in microseconds, 0 if d is empty.
func meanUS(d []time.Duration) float64 {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64(sum.Microseconds()) / float64(max(len(d), 1))
}

// count returns how many runs ended since start.
func (m *mergeTimer) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs
}

func (m *mergeTimer) stop() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = false
	return m.merged
}

// BenchmarkWriteFlat is the same in one flat folder, where every write rewrites the root
// tree: the case that nested paths avoid.
func BenchmarkWriteFlat(b *testing.B) {
	for _, n := range []int{100, 2000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			s := benchStore(b)
			flat := func(i int) string { return fmt.Sprintf("/n%05d.md", i) }
			fill(b, s, n, flat)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := (i * 7919) % n
				if _, err := s.Write(context.Background(), WriteInput{Path: flat(k), Content: benchContent(k + i + 1), Actor: apiActor}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConcurrentWrites is writes by 1, 8 and 64 concurrent writers; group commit
// should make throughput grow with them. ns/op is per write.
func BenchmarkConcurrentWrites(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := benchStore(b)
			concurrentWrites(b, s, writers)
		})
	}
}

// concurrentWrites fills s with 1,000 memories, then times b.N updates of them by writers
// concurrent writers, and reports their rate and the p50 and p99 of a write's latency
// (a stall of the writer shows as a p99 far above the p50).
func concurrentWrites(b *testing.B, s *Store, writers int) {
	fill(b, s, 1000, benchPath)
	var next atomic.Int64
	var wg sync.WaitGroup
	lat := make([][]time.Duration, writers)
	b.ResetTimer()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				k := (i * 7919) % 1000
				t0 := time.Now()
				if _, err := s.Write(context.Background(), WriteInput{Path: benchPath(k), Content: benchContent(k + i + 1), Actor: apiActor}); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		p50, p99 := all[len(all)/2], all[len(all)*99/100]
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(p99)/float64(p50), "p99/p50")
	}
}

// BenchmarkGitCLIPlumbing is the baseline: the same write done with git's own plumbing on
// a bare repository (hash-object, read-tree and update-index in a temporary index,
// write-tree, commit-tree, update-ref), as a script would do it. With git's defaults
// (fsync=default) nothing is fsynced: git fsyncs packs but neither loose objects nor refs,
// so that write does not survive a power loss, where gitmem's answered write does. With
// core.fsync=committed (fsync=committed) git fsyncs the objects and the ref, though not
// the directories naming them: the nearest git comes to gitmem's guarantee.
func BenchmarkGitCLIPlumbing(b *testing.B) {
	b.Run("fsync=default", func(b *testing.B) { benchGitCLI(b) })
	b.Run("fsync=committed", func(b *testing.B) {
		benchGitCLI(b, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsync", "GIT_CONFIG_VALUE_0=committed")
	})
}

func benchGitCLI(b *testing.B, extraEnv ...string) {
	repo := filepath.Join(b.TempDir(), "r.git")
	if err := odb.Init(repo); err != nil {
		b.Fatal(err)
	}
	index := filepath.Join(b.TempDir(), "index")
	env := append(os.Environ(), "GIT_DIR="+repo, "GIT_INDEX_FILE="+index, "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	env = append(env, extraEnv...)
	git := func(stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	parent := ""
	write := func(i int) {
		blob := git(benchContent(i), "hash-object", "-w", "--stdin")
		if parent != "" {
			git("", "read-tree", parent)
		}
		git("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+strings.TrimPrefix(benchPath(i%100), "/"))
		tree := git("", "write-tree")
		args := []string{"commit-tree", tree, "-m", "update " + benchPath(i%100)}
		if parent != "" {
			args = append(args, "-p", parent)
		}
		commit := git("", args...)
		old := parent
		if old == "" {
			old = strings.Repeat("0", 40)
		}
		git("", "update-ref", "refs/heads/main", commit, old)
		parent = commit
	}
	for i := 0; i < 100; i++ {
		write(i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		write(i + 100)
	}
}

// BenchmarkPlainFileWrite is the floor: an atomic, durable write of one plain file (temp
// file, write, fsync, rename, fsync of the directory).
func BenchmarkPlainFileWrite(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		p := filepath.Join(dir, fmt.Sprintf("n%d.md", i%100))
		f, err := os.CreateTemp(dir, ".tmp")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteString(benchContent(i)); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.Rename(f.Name(), p); err != nil {
			b.Fatal(err)
		}
		if err := durable.SyncDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead is reads by id with content, in a store of 10,000 memories.
func BenchmarkRead(b *testing.B) {
	s := benchStore(b)
	const n = 10000
	fill(b, s, n, benchPath)
	page, err := s.List(context.Background(), ListOptions{Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m := page.Items[i%len(page.Items)].Memory
			if _, err := s.Get(context.Background(), m.ID, true); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// reportLatency reports the median, the 99th percentile and the slowest of the times taken:
// a mean that moves with one stall and one that moves with every write tell apart so.
func reportLatency(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-us")
	b.ReportMetric(float64(took[len(took)-1].Microseconds()), "max-us")
}

// reportMaxRSS reports the process's peak resident memory so far.
func reportMaxRSS(b *testing.B) {
	if mb := maxRSS(); mb > 0 {
		b.ReportMetric(mb, "maxRSS-MB")
	}
}

// maxRSS returns the process's peak resident memory so far in MB, or 0 if it cannot tell.
func maxRSS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024
}

// sampleRSS samples, every 20 ms until the benchmark ends, the two parts of resident memory
// that Linux tells apart: anonymous (the heap and stacks) and file pages mapped (mostly the
// catalog, which bbolt reads through a mapping; the kernel may drop them at any time), and
// reports the peak of each. Elsewhere it reports nothing.
func sampleRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		return
	}
	var anon, file int
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			a, f := procStatusKB("RssAnon"), procStatusKB("RssFile")
			anon, file = max(anon, a), max(file, f)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	b.Cleanup(func() {
		close(stop)
		<-done
		b.ReportMetric(float64(anon)/1024, "peakAnon-MB")
		b.ReportMetric(float64(file)/1024, "peakFile-MB")
	})
}

// procStatusKB reads a field of /proc/self/status given in kB.
func procStatusKB(field string) int {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}

// BenchmarkCatalogRebuild is the opening of a store of n memories whose catalog must be
// read again from the whole history: gone (rebuilt, as after a catalog format change or a
// damaged catalog), or at a commit that main's history does not hold (rewound: main set
// back by one commit, as after a forced push that rewrote main, and as in a proposal's fork
// of a pushed branch, which starts from a copy of the store's catalog). It reports the
// microseconds a commit of history.
func BenchmarkCatalogRebuild(b *testing.B) {
	for _, n := range benchSizes()[1:] {
		for _, how := range []string{"gone", "rewound"} {
			b.Run(fmt.Sprintf("memories=%d/catalog=%s", n, how), func(b *testing.B) {
				dir := b.TempDir()
				d := openDir(b, dir)
				s := mustCreate(b, d, "bench")
				fill(b, s, n, benchPath)
				id, repo := s.ID(), s.RepoPath()
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
				catalog := d.Layout().CatalogFile(id)
				saved := filepath.Join(b.TempDir(), "catalog.db")
				if err := exec.Command("cp", catalog, saved).Run(); err != nil {
					b.Fatal(err)
				}
				if how == "rewound" {
					if out, err := exec.Command("git", "-C", repo, "update-ref", odb.MainRef, odb.MainRef+"~1").CombinedOutput(); err != nil {
						b.Fatalf("%v: %s", err, out)
					}
				}
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					if err := os.Remove(catalog); err != nil {
						b.Fatal(err)
					}
					if how == "rewound" {
						if err := exec.Command("cp", saved, catalog).Run(); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					d := openDir(b, dir) // it may open its stores at once
					if _, err := d.Store(context.Background(), id); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if err := d.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n+1), "us/commit")
			})
		}
	}
}
