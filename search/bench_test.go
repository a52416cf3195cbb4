package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/gitmem/gitmem/gitstore"
)

// The benchmarks measure search against baselines measured in the same run: queries
// against `git grep` over the same repository, and writes with a search service watching
// the store against the same writes without one. One op is a whole round (an index build
// from nothing, a round of 300 queries, a phase of writes), so run them with -benchtime 1x;
// the figures to read are the reported metrics, not ns/op. Stores of 100,000 memories are
// opt-in: set GITMEM_BENCH_LARGE=1.
//
//	go test ./search -run '^$' -bench . -benchtime 1x
//	GITMEM_BENCH_LARGE=1 go test ./search -run '^$' -bench . -benchtime 1x -timeout 90m

func benchSizes() []int {
	if os.Getenv("GITMEM_BENCH_LARGE") != "" {
		return []int{1000, 10000, 100000}
	}
	return []int{1000, 10000}
}

// The text of the memories: words drawn from a vocabulary of 4,000 with a Zipf
// distribution, as in English, the most frequent being English function words, then words
// of the agents' trade, then made-up words built from syllables.
var benchVocab = buildVocab(4000)

const englishWords = `the of and to a in is that for it on with as was be by this are or from at not
have an but they which you one all were we when there can more if use has will each about
how up out them then she many some so these would other into her like him see time two
could no make than first been its who now people my made over did down only way find any
new work part take get place year back give most very after thing our just name good man
think say great where help through much before line right too mean old same tell follow
came want show also around form three small set put end does another well large must big
even such because turn here why ask went men read need land different home us move try
kind hand picture again change off play air away point page letter answer found study
still learn should world user prefers deploy staging production database migration review
test build release branch commit server client config token cache latency query index
schema service endpoint request response error retry timeout memory agent session project
note meeting decision customer ticket bug feature design key backup monitor alert metric
log deadline budget team manager report draft summary invoice contract vendor laptop
password account email calendar schedule holiday travel flight hotel dinner coffee tea
morning evening weekly monthly quarter goal plan roadmap sprint estimate priority risk
issue patch upgrade version library framework language python golang rust java script
docker cluster node region storage network firewall certificate domain dashboard chart
spreadsheet document folder archive recipe garden music movie book article paper`

func buildVocab(size int) []string {
	seen := map[string]bool{}
	var vocab []string
	for _, w := range strings.Fields(englishWords) {
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	onsets := strings.Fields("b c d f g h j k l m n p r s t v w z br cr dr fl gr pl st tr ch sh th")
	vowels := strings.Fields("a e i o u ai ea ou io")
	codas := strings.Fields("n r s t l m nd st")
	r := rand.New(rand.NewPCG(1, 1))
	for len(vocab) < size {
		var w strings.Builder
		for range []int{1, 2, 2, 2, 3}[r.IntN(5)] {
			w.WriteString(onsets[r.IntN(len(onsets))])
			w.WriteString(vowels[r.IntN(len(vowels))])
			if r.IntN(3) == 0 {
				w.WriteString(codas[r.IntN(len(codas))])
			}
		}
		if s := w.String(); !seen[s] {
			seen[s] = true
			vocab = append(vocab, s)
		}
	}
	return vocab
}

// benchPath is where agents put memories: nested, 300 per folder, so that no tree on a
// write's path holds more than about 300 entries even at 100,000 memories.
func benchPath(i int) string {
	return fmt.Sprintf("/projects/p%03d/notes/%04d.md", i/300, i%300)
}

// benchContent is about 1 KB of English-ish text: a title, then lines of one to three
// sentences, some of them bullets. The same (i, version) always gives the same text.
func benchContent(i, version int) string {
	r := rand.New(rand.NewPCG(uint64(i), uint64(version)))
	z := rand.NewZipf(r, 1.07, 2, uint64(len(benchVocab)-1))
	word := func() string { return benchVocab[z.Uint64()] }
	var sb strings.Builder
	sb.WriteString("# ")
	for k := range 2 + r.IntN(4) {
		if k > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(word())
	}
	sb.WriteString("\n\n")
	for sb.Len() < 1000 {
		if r.IntN(4) == 0 {
			sb.WriteString("- ")
		}
		for s := range 1 + r.IntN(3) {
			if s > 0 {
				sb.WriteByte(' ')
			}
			for k := range 5 + r.IntN(12) {
				w := word()
				if k == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				} else {
					sb.WriteByte(' ')
				}
				sb.WriteString(w)
				if k > 2 && r.IntN(9) == 0 {
					sb.WriteByte(',')
				}
			}
			sb.WriteByte('.')
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// benchCorpus is a data directory with one store of n memories.
type benchCorpus struct {
	data *gitstore.DataDir
	st   *gitstore.Store
	n    int
}

// newBenchCorpus fills a store with n memories from 64 concurrent writers, so that group
// commit makes it quick. Everything is removed when b ends.
func newBenchCorpus(b *testing.B, n int) *benchCorpus {
	b.Helper()
	ctx := context.Background()
	data, err := gitstore.Open(ctx, b.TempDir(), gitstore.Options{Logger: quietLog})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { data.Close() })
	st, err := data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "bench", Actor: actor})
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
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if _, err := st.Write(ctx, gitstore.WriteInput{Path: benchPath(i), Content: benchContent(i, 0), Actor: actor}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	b.Logf("filled a store with %d memories in %s", n, time.Since(start).Round(time.Millisecond))
	return &benchCorpus{data: data, st: st, n: n}
}

// newService opens a search service over the corpus; a search waits for an index being
// built however long it takes.
func (c *benchCorpus) newService() *Service {
	return New(c.data, Options{Logger: quietLog, RebuildWait: time.Hour})
}

// catchUp brings svc's index of the store up to the store's head, building it if needed.
func (c *benchCorpus) catchUp(b *testing.B, svc *Service) {
	b.Helper()
	// A word that is nowhere: the search itself costs next to nothing.
	if _, err := svc.Search(context.Background(), c.st.ID(), Request{Query: "qqqzzzq"}); err != nil {
		b.Fatal(err)
	}
}

func dirSize(dir string) int64 {
	var size int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	return size
}

// settle waits until the files of dir stay the same for two seconds, or max.
func settle(dir string, max time.Duration) {
	deadline := time.Now().Add(max)
	last, since := "", time.Now()
	for time.Now().Before(deadline) && time.Since(since) < 2*time.Second {
		var names []string
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if info, err := d.Info(); err == nil {
				names = append(names, fmt.Sprint(path, info.Size()))
			}
			return nil
		})
		if now := strings.Join(names, " "); now != last {
			last, since = now, time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// percentile returns the p-th percentile (0 to 100) of ds, in milliseconds.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(p / 100 * float64(len(s)-1))
	return float64(s[k]) / float64(time.Millisecond)
}

func mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum) / float64(len(ds)) / float64(time.Millisecond)
}

// BenchmarkSearch fills a store with n memories, then times a full build of its index from
// nothing (index) and a mix of queries against git grep over the same repository (query).
func BenchmarkSearch(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			c := newBenchCorpus(b, n)
			var svc *Service
			defer func() {
				if svc != nil {
					svc.Close()
				}
			}()
			b.Run("index", func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					if svc != nil {
						svc.Close()
					}
					svc = c.newService()
					if err := os.RemoveAll(svc.IndexPath(c.st.ID())); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					// What a first search, or gitmem serve, does: open the store's index,
					// find it missing, build it from the store's head.
					if err := svc.Watch(context.Background(), c.st.ID()); err != nil {
						b.Fatal(err)
					}
					c.catchUp(b, svc)
				}
				b.StopTimer()
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "memories/s")
				b.ReportMetric(float64(dirSize(svc.IndexPath(c.st.ID())))/(1<<20), "index-MB")
			})
			b.Run("query", func(b *testing.B) {
				if svc == nil {
					svc = c.newService()
					c.catchUp(b, svc)
				}
				// Steady state: bleve merges the segments of a build in the background.
				start := time.Now()
				settle(svc.IndexPath(c.st.ID()), time.Minute)
				b.Logf("the index's files settled %s after the build", time.Since(start).Round(100*time.Millisecond))
				benchQueries(b, c, svc)
			})
		})
	}
}

// benchQuery is one query of the mix.
type benchQuery struct {
	kind string
	req  Request
}

// queryMix is 50 queries of each kind (word, two words, a phrase, a prefix, a word in one
// folder, a word with a typo), the same for every run. Query words are drawn with
// log-uniform ranks from 40 to the vocabulary's end: none of the most frequent words, and
// as many of the middle as of the rare ones. The words of "word" are also git grep's.
func queryMix(n int) (mix []benchQuery, words []string) {
	r := rand.New(rand.NewPCG(7, 7))
	pick := func(minLen int) string {
		for {
			lo, hi := 40.0, float64(len(benchVocab))
			rank := int(lo * math.Pow(hi/lo, r.Float64()))
			if w := benchVocab[rank]; len(w) >= minLen {
				return w
			}
		}
	}
	for range 50 {
		w := pick(1)
		words = append(words, w)
		mix = append(mix, benchQuery{"word", Request{Query: w}})
	}
	for range 50 {
		mix = append(mix, benchQuery{"two-words", Request{Query: pick(1) + " " + pick(1)}})
	}
	rank := map[string]int{}
	for i, w := range benchVocab {
		rank[w] = i
	}
	for len(mix) < 150 {
		// Two words in a row from some memory's text, neither of the 40 most frequent.
		text := strings.FieldsFunc(strings.ToLower(benchContent(r.IntN(n), 0)), func(c rune) bool { return !unicode.IsLetter(c) })
		for k := 1 + r.IntN(len(text)-2); k < len(text)-1; k++ {
			if rank[text[k]] >= 40 && rank[text[k+1]] >= 40 {
				mix = append(mix, benchQuery{"phrase", Request{Query: `"` + text[k] + " " + text[k+1] + `"`}})
				break
			}
		}
	}
	for range 50 {
		mix = append(mix, benchQuery{"prefix", Request{Query: pick(6)[:4] + "*"}})
	}
	for range 50 {
		folder := fmt.Sprintf("/projects/p%03d/", r.IntN((n+299)/300))
		mix = append(mix, benchQuery{"path-prefix", Request{Query: pick(1), PathPrefix: folder}})
	}
	for range 50 {
		w := []byte(pick(5))
		k := 2 + r.IntN(len(w)-2) // keep the first letters: typos there are rare
		w[k] = byte('a' + (int(w[k]-'a')+1+r.IntN(25))%26)
		mix = append(mix, benchQuery{"typo", Request{Query: string(w)}})
	}
	return mix, words
}

// gitGrepWords is how many of the single words each round also greps for.
const gitGrepWords = 5

// benchQueries runs the query mix once per op and reports the latencies; after each round,
// outside the timer, git grep looks for the first single words in the same repository.
func benchQueries(b *testing.B, c *benchCorpus, svc *Service) {
	ctx := context.Background()
	mix, words := queryMix(c.n)
	// Warm up: the first searches map the index's segments.
	for i := 0; i < len(mix); i += 10 {
		if _, err := svc.Search(ctx, c.st.ID(), mix[i].req); err != nil {
			b.Fatal(err)
		}
	}
	var all []time.Duration
	byKind := map[string][]time.Duration{}
	hits := map[string]int{}
	var grep []time.Duration
	grepFound := 0
	b.ResetTimer()
	for range b.N {
		for _, q := range mix {
			start := time.Now()
			res, err := svc.Search(ctx, c.st.ID(), q.req)
			d := time.Since(start)
			if err != nil {
				b.Fatalf("search %q: %v", q.req.Query, err)
			}
			all = append(all, d)
			byKind[q.kind] = append(byKind[q.kind], d)
			if res.Total > 0 {
				hits[q.kind]++
			}
		}
		b.StopTimer()
		for _, w := range words[:gitGrepWords] {
			start := time.Now()
			out, err := gitGrep(c.st.RepoPath(), w)
			grep = append(grep, time.Since(start))
			if err != nil {
				b.Fatalf("git grep %s: %v", w, err)
			}
			grepFound += strings.Count(out, "\n")
		}
		b.StartTimer()
	}
	b.StopTimer()
	wordP50 := percentile(byKind["word"], 50)
	b.ReportMetric(percentile(all, 50), "p50-ms")
	b.ReportMetric(percentile(all, 99), "p99-ms")
	b.ReportMetric(wordP50, "word-p50-ms")
	b.ReportMetric(percentile(grep, 50), "gitgrep-p50-ms")
	b.ReportMetric(percentile(grep, 50)/wordP50, "gitgrep/search")
	for _, kind := range []string{"word", "two-words", "phrase", "prefix", "path-prefix", "typo"} {
		ds := byKind[kind]
		b.Logf("%-11s p50 %6.2f ms  p99 %6.2f ms  mean %6.2f ms  (%d of %d queries found something)",
			kind, percentile(ds, 50), percentile(ds, 99), mean(ds), hits[kind], len(ds))
	}
	b.Logf("git grep: p50 %.1f ms over %d greps, %.0f files listed per grep", percentile(grep, 50), len(grep),
		float64(grepFound)/float64(max(len(grep), 1)))
}

// gitGrep lists the memories of main that hold word, in any case, with the real git.
func gitGrep(repo, word string) (string, error) {
	cmd := exec.Command("git", "--git-dir="+repo, "grep", "-l", "-i", "-w", "-e", word, "main")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return "", nil // nothing found
	}
	return string(out), err
}

// writeCostMemories is the size of the store of BenchmarkWriteCost.
const writeCostMemories = 10000

// BenchmarkWriteCost measures what search costs the writes of a store of 10,000 memories:
// the throughput of 1, 8 and 64 concurrent writers updating memories with a search service
// watching the store (search=on) and without (search=off), in alternating phases of the
// same op (off, on, on, off), and how long a search takes that must find a write made just
// before (read-your-writes).
func BenchmarkWriteCost(b *testing.B) {
	c := newBenchCorpus(b, writeCostMemories)
	svc := c.newService()
	c.catchUp(b, svc) // the index exists from here on: "on" phases start from a current one
	svc.Close()
	var version atomic.Int64 // the version of the next write, across phases
	version.Store(1)
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			perPhase := map[int]int{1: 200, 8: 1000, 64: 2000}[writers]
			var took, cpu [2]time.Duration // off, on
			var count [2]int
			var lat [2][]time.Duration
			for range b.N {
				for _, on := range []int{0, 1, 1, 0, 0, 1, 1, 0} {
					b.StopTimer()
					v := int(version.Add(int64(perPhase))) - perPhase
					contents := make([]string, perPhase)
					for i := range contents {
						k := ((v + i) * 7919) % c.n
						contents[i] = benchContent(k, v+i)
					}
					var svc *Service
					if on == 1 {
						svc = c.newService()
						if err := svc.Watch(context.Background(), c.st.ID()); err != nil {
							b.Fatal(err)
						}
						c.catchUp(b, svc) // the writes of the phases without search
					}
					b.StartTimer()
					start, cpu0 := time.Now(), cpuTime()
					l := c.writePhase(b, writers, v, contents)
					if svc != nil {
						c.catchUp(b, svc) // the phase ends when the index holds its writes
					}
					took[on] += time.Since(start)
					cpu[on] += cpuTime() - cpu0
					b.StopTimer()
					count[on] += perPhase
					if writers == 1 {
						lat[on] = append(lat[on], l...)
					}
					if svc != nil {
						svc.Close()
					}
				}
			}
			off := float64(count[0]) / took[0].Seconds()
			on := float64(count[1]) / took[1].Seconds()
			b.ReportMetric(off, "off-writes/s")
			b.ReportMetric(on, "on-writes/s")
			b.ReportMetric(on/off, "on/off")
			b.ReportMetric(float64(cpu[0])/float64(count[0])/float64(time.Millisecond), "off-cpu-ms/write")
			b.ReportMetric(float64(cpu[1])/float64(count[1])/float64(time.Millisecond), "on-cpu-ms/write")
			if writers == 1 {
				b.ReportMetric(percentile(lat[0], 50), "off-p50-ms")
				b.ReportMetric(percentile(lat[1], 50), "on-p50-ms")
				b.ReportMetric(percentile(lat[1], 50)-percentile(lat[0], 50), "added-p50-ms")
				b.Logf("one write at a time: p50 %.2f ms without search, %.2f ms with; p99 %.2f and %.2f ms",
					percentile(lat[0], 50), percentile(lat[1], 50), percentile(lat[0], 99), percentile(lat[1], 99))
			}
		})
	}
	b.Run("read-your-writes", func(b *testing.B) {
		const rounds = 50
		ctx := context.Background()
		svc := c.newService()
		defer svc.Close()
		if err := svc.Watch(ctx, c.st.ID()); err != nil {
			b.Fatal(err)
		}
		c.catchUp(b, svc)
		var write, ryw, fresh []time.Duration
		b.ResetTimer()
		for range b.N {
			for range rounds {
				b.StopTimer()
				v := int(version.Add(1)) - 1
				k := (v * 7919) % c.n
				marker := fmt.Sprintf("rywmark%07d", v)
				content := benchContent(k, v) + marker + "\n"
				b.StartTimer()
				t0 := time.Now()
				if _, err := c.st.Write(ctx, gitstore.WriteInput{Path: benchPath(k), Content: content, Actor: actor}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				res, err := svc.Search(ctx, c.st.ID(), Request{Query: marker})
				t2 := time.Now()
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Hits) != 1 || res.Hits[0].Path != benchPath(k) {
					b.Fatalf("search right after writing %s found %v", benchPath(k), paths(res))
				}
				// The same search again, with nothing new to index: the baseline.
				if _, err := svc.Search(ctx, c.st.ID(), Request{Query: marker}); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				write, ryw, fresh = append(write, t1.Sub(t0)), append(ryw, t2.Sub(t1)), append(fresh, t3.Sub(t2))
			}
		}
		b.StopTimer()
		b.ReportMetric(percentile(write, 50), "write-p50-ms")
		b.ReportMetric(percentile(ryw, 50), "ryw-search-p50-ms")
		b.ReportMetric(percentile(ryw, 99), "ryw-search-p99-ms")
		b.ReportMetric(percentile(fresh, 50), "fresh-search-p50-ms")
		b.ReportMetric(percentile(ryw, 50)/percentile(fresh, 50), "ryw/fresh")
	})
}

// cpuTime is the CPU time the process used so far, in user and system mode: the writer,
// the indexer, bleve's merges and the garbage collector.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writePhase updates memories from writers concurrent writers, the i-th write putting
// contents[i] at memory (v+i)*7919 mod n. With one writer it returns each write's latency.
func (c *benchCorpus) writePhase(b *testing.B, writers, v int, contents []string) []time.Duration {
	ctx := context.Background()
	var lat []time.Duration
	var next atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(contents) {
					return
				}
				k := ((v + i) * 7919) % c.n
				start := time.Now()
				if _, err := c.st.Write(ctx, gitstore.WriteInput{Path: benchPath(k), Content: contents[i], Actor: actor}); err != nil {
					b.Error(err)
					return
				}
				if writers == 1 {
					lat = append(lat, time.Since(start))
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return lat
}

// BenchmarkWorstQuery measures the costliest queries that the bounds accept (see
// MaxQueryBytes and the limits beside it) against a normal two-word query, in the same run,
// over a store of 10,000 memories: wall time per query (ns/op), CPU time per query, bytes
// allocated per query, and the peak heap and peak RSS of the process while they ran.
//
//	go test ./search -run '^$' -bench WorstQuery -benchtime 20x
func BenchmarkWorstQuery(b *testing.B) {
	c := newBenchCorpus(b, 10000)
	svc := c.newService()
	defer svc.Close()
	c.catchUp(b, svc)
	settle(svc.IndexPath(c.st.ID()), time.Minute)
	x, err := svc.index(context.Background(), c.st.ID())
	if err != nil {
		b.Fatal(err)
	}
	// The prefixes of two letters that stand for the most words of the store.
	type expansion struct {
		prefix string
		n      int
	}
	var exps []expansion
	for a := 'a'; a <= 'z'; a++ {
		for z := 'a'; z <= 'z'; z++ {
			p := string(a) + string(z)
			n, err := countPrefix(x.idx, fieldContent, p, MaxPrefixExpansion+1)
			if err != nil {
				b.Fatal(err)
			}
			exps = append(exps, expansion{p, n})
		}
	}
	slices.SortFunc(exps, func(a, b expansion) int { return b.n - a.n })
	var prefixes []string
	for _, e := range exps[:MaxPrefixes] {
		prefixes = append(prefixes, e.prefix+"*")
	}
	b.Logf("widest prefixes: %v (%d, %d, %d, %d words)", prefixes, exps[0].n, exps[1].n, exps[2].n, exps[3].n)
	frequent := func(n int) string { return strings.Join(benchVocab[:n], " ") }
	long := func(n int) string { // n letters-only words of maxFuzzyRunes letters each, none of the store's
		var ws []string
		for i := range n {
			w := strings.Repeat(benchVocab[100+i]+benchVocab[200+i], 10)[:maxFuzzyRunes-1] + "q"
			ws = append(ws, strings.Map(func(r rune) rune {
				if unicode.IsLetter(r) {
					return r
				}
				return 'x'
			}, w))
		}
		return strings.Join(ws, " ")
	}
	phrase := `"` + strings.TrimSpace(strings.Repeat("the ", MaxPhraseWords)) + `"`
	shapes := []struct{ name, q string }{
		{"normal", "deploy staging"},
		{"fuzzy", long(MaxQueryWords)},
		{"prefixes", strings.Join(prefixes, " ") + " " + frequent(MaxQueryWords-MaxPrefixes)},
		{"phrase", phrase + " " + frequent(MaxQueryWords-MaxPhraseWords)},
		{"words", frequent(MaxQueryWords)},
		{"mixed", strings.Join(prefixes, " ") + " " + phrase + " " + long(MaxQueryWords-MaxPrefixes-MaxPhraseWords)},
	}
	type figures struct{ wall, cpu, heap, rss float64 }
	got := map[string]figures{}
	for _, s := range shapes {
		req := Request{Query: s.q}
		if _, err := svc.Search(context.Background(), c.st.ID(), req); err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.GC()
			base := heapBytes()
			resetPeakRSS()
			stop, peak := watchHeap()
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				if _, err := svc.Search(context.Background(), c.st.ID(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := float64(cpuTime()-cpu0) / float64(b.N) / 1e6
			stop()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			f := figures{wall: float64(b.Elapsed()) / float64(b.N) / 1e6, cpu: cpu, heap: float64(*peak-base) / (1 << 20), rss: peakRSS()}
			b.ReportMetric(f.cpu, "cpu-ms/op")
			b.ReportMetric(f.heap, "peak-heap-MB")
			b.ReportMetric(f.rss, "peak-rss-MB")
			got[s.name] = f
		})
	}
	base := got["normal"]
	for _, s := range shapes {
		f := got[s.name]
		b.Logf("%-9s wall %8.2f ms (%5.1fx)  cpu %8.2f ms (%5.1fx)  peak heap +%6.1f MB  peak RSS %6.1f MB  %d bytes: %.70s",
			s.name, f.wall, f.wall/base.wall, f.cpu, f.cpu/base.cpu, f.heap, f.rss, len(s.q), s.q)
	}
}

// heapBytes is the bytes of the heap's live and not yet collected objects.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// watchHeap samples heapBytes every half millisecond until stop is called; peak is the
// highest it saw.
func watchHeap() (stop func(), peak *uint64) {
	peak = new(uint64)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			if h := heapBytes(); h > *peak {
				*peak = h
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }, peak
}

// resetPeakRSS resets the kernel's high-water mark of the process's RSS (Linux).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the high-water mark of the process's RSS in MB since resetPeakRSS, 0 where
// the kernel does not say.
func peakRSS() float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb)
			return kb / 1024
		}
	}
	return 0
}
