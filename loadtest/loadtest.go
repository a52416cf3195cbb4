// Package loadtest drives one store with concurrent clients and measures what they get:
// throughput and latency percentiles of reads, writes, updates with preconditions, memory
// tool commands, searches and a mix of them. The same workload runs against a store behind
// a server (over HTTP) or one opened in this process, so that the two can be set side by
// side: what the server adds is their ratio. gitmem bench is its command.
package loadtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

// Store is what the workloads need of a store: *gitstore.Store and *client.Store have it.
type Store interface {
	Get(ctx context.Context, id string, withContent bool) (gitstore.Memory, error)
	Write(ctx context.Context, in gitstore.WriteInput) (gitstore.WriteResult, error)
	UpdateMemory(ctx context.Context, in gitstore.UpdateInput) (gitstore.WriteResult, error)
}

// Target is a store and the ways to search it and call its memory tool.
type Target struct {
	Store  Store
	Search func(ctx context.Context, req search.Request) error
	// Tool calls the memory tool with a raw input; a result with is_error is an error.
	Tool func(ctx context.Context, input []byte) error
}

// Actor is who the writes are by, for a store opened in this process (a server records its
// caller instead).
var Actor = gitstore.Actor{Type: gitstore.UserActor, ID: "user_gitmem_bench", Name: "gitmem bench", Email: "bench@gitmem"}

// Workload names what the clients do.
type Workload string

// The workloads.
const (
	Read   Workload = "read"   // a memory by id, with its content
	Write  Workload = "write"  // a new memory at a new path
	Update Workload = "update" // read-modify-write of the client's own memory, with content_sha256
	Tool   Workload = "tool"   // the memory tool's view of a memory
	Search Workload = "search" // a one-word search
	Mixed  Workload = "mixed"  // 70% reads, 15% writes, 5% updates, 5% tool views, 5% searches
)

// Workloads lists every workload, in the order gitmem bench runs them.
var Workloads = []Workload{Read, Write, Update, Tool, Search, Mixed}

// Result is what one run measured.
type Result struct {
	Workload      Workload      `json:"workload"`
	Clients       int           `json:"clients"`
	Ops           int           `json:"ops"`
	Errors        int           `json:"errors"`
	FirstError    string        `json:"first_error,omitempty"`
	Duration      time.Duration `json:"duration_ns"`
	OpsPerSecond  float64       `json:"ops_per_second"`
	P50, P90, P99 time.Duration `json:"-"`
	Max           time.Duration `json:"-"`
	Percentiles   Percentiles   `json:"latency_ms"`
}

// Percentiles are latencies in milliseconds, for JSON.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Words are what seeded memories are made of and what searches look for.
var words = strings.Fields("billing invoice refund customer plan yearly monthly discount escalate outage " +
	"deploy rollback latency cache index schema migration backup restore token session agent review " +
	"memory project deadline budget contract vendor support ticket priority")

// Content is a memory of about size bytes, different for each i.
func Content(i, size int) string {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	var b strings.Builder
	fmt.Fprintf(&b, "# note %d\n\n", i)
	for b.Len() < size {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:size]
}

// SeedPath is where the seed puts memory i: a hundred to a folder.
func SeedPath(i int) string { return fmt.Sprintf("/bench/p%04d/n%06d.md", i/100, i) }

// Seed writes n memories of size bytes with clients concurrent writers, and returns their ids
// in order. progress, if not nil, is told how many are written.
func Seed(ctx context.Context, t Target, n, size, clients int, progress func(done int)) ([]string, error) {
	ids := make([]string, n)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				res, err := t.Store.Write(ctx, gitstore.WriteInput{Path: SeedPath(i), Content: Content(i, size), Actor: Actor})
				if err != nil {
					errc <- fmt.Errorf("seed %s: %w", SeedPath(i), err)
					return
				}
				ids[i] = res.Memory.ID
				if d := done.Add(1); progress != nil && d%100 == 0 {
					progress(int(d))
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return ids, ctx.Err()
}

// Run runs workload w with clients concurrent clients for d, over a store seeded with ids.
// run names this run, so that the paths its writes create are new.
func Run(ctx context.Context, t Target, w Workload, clients int, d time.Duration, ids []string, size int, run string) (Result, error) {
	if len(ids) == 0 {
		return Result{}, errors.New("the store must be seeded first")
	}
	if !slices.Contains(Workloads, w) {
		return Result{}, fmt.Errorf("unknown workload %q (one of read, write, update, tool, search, mixed)", w)
	}
	// Each client updates a memory of its own, so that its preconditions fail only if
	// something else wrote it.
	own := make([]ownMemory, clients)
	if w == Update || w == Mixed {
		for c := range own {
			res, err := t.Store.Write(ctx, gitstore.WriteInput{Path: fmt.Sprintf("/bench/own/%s/c%03d.md", run, c), Content: Content(c, size), Actor: Actor})
			if err != nil {
				return Result{}, fmt.Errorf("prepare the update workload: %w", err)
			}
			own[c] = ownMemory{id: res.Memory.ID, sha: res.Memory.ContentSHA256, n: c}
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	lat := make([][]time.Duration, clients)
	errs := make([]int, clients)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			cl := &clientState{t: t, ids: ids, size: size, r: r, own: &own[c], prefix: fmt.Sprintf("/bench/w/%s/c%03d/", run, c)}
			for runCtx.Err() == nil {
				op := w
				if w == Mixed {
					op = cl.pick()
				}
				t0 := time.Now()
				err := cl.do(runCtx, op)
				if runCtx.Err() != nil {
					return // cut off by the end of the run: neither counted nor an error
				}
				lat[c] = append(lat[c], time.Since(t0))
				if err != nil {
					errs[c]++
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	res := Result{Workload: w, Clients: clients, Duration: elapsed}
	var all []time.Duration
	for c := range clients {
		all = append(all, lat[c]...)
		res.Errors += errs[c]
	}
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	res.Ops = len(all)
	res.OpsPerSecond = float64(res.Ops) / elapsed.Seconds()
	slices.Sort(all)
	if len(all) > 0 {
		at := func(q float64) time.Duration { return all[int(q*float64(len(all)-1))] }
		res.P50, res.P90, res.P99, res.Max = at(0.50), at(0.90), at(0.99), all[len(all)-1]
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		res.Percentiles = Percentiles{ms(res.P50), ms(res.P90), ms(res.P99), ms(res.Max)}
	}
	return res, nil
}

type ownMemory struct {
	id, sha string
	n       int // its contents' next number
}

// clientState is one client of a run.
type clientState struct {
	t      Target
	ids    []string
	size   int
	r      *rand.Rand
	own    *ownMemory
	prefix string
	writes int
}

func (c *clientState) pick() Workload {
	switch p := c.r.IntN(100); {
	case p < 70:
		return Read
	case p < 85:
		return Write
	case p < 90:
		return Update
	case p < 95:
		return Tool
	default:
		return Search
	}
}

func (c *clientState) do(ctx context.Context, op Workload) error {
	switch op {
	case Read:
		_, err := c.t.Store.Get(ctx, c.ids[c.r.IntN(len(c.ids))], true)
		return err
	case Write:
		c.writes++
		_, err := c.t.Store.Write(ctx, gitstore.WriteInput{Path: fmt.Sprintf("%sn%06d.md", c.prefix, c.writes), Content: Content(c.writes, c.size), Actor: Actor})
		return err
	case Update:
		c.own.n += 1000
		content := Content(c.own.n, c.size)
		_, err := c.t.Store.UpdateMemory(ctx, gitstore.UpdateInput{ID: c.own.id, Content: &content, Actor: Actor,
			Precondition: &gitstore.Precondition{Type: gitstore.ContentSHA256, ContentSHA256: c.own.sha}})
		if err == nil {
			sum := sha256.Sum256([]byte(content))
			c.own.sha = hex.EncodeToString(sum[:])
		}
		return err
	case Tool:
		i := c.r.IntN(len(c.ids))
		return c.t.Tool(ctx, fmt.Appendf(nil, `{"command":"view","path":"/memories%s"}`, SeedPath(i)))
	case Search:
		return c.t.Search(ctx, search.Request{Query: words[c.r.IntN(len(words))], Limit: 10})
	}
	return fmt.Errorf("unknown operation %q", op)
}
