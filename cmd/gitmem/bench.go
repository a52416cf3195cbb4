package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/loadtest"
	"github.com/gitmem/gitmem/search"
	"github.com/gitmem/gitmem/tooladapter"
)

func init() { register(newBenchCmd) }

func newBenchCmd(a *app) *cobra.Command {
	var (
		clients   string
		workloads string
		duration  time.Duration
		memories  int
		size      int
		keep      bool
		noLocal   bool
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load a running server with concurrent clients and measure throughput and latency",
		Long: `Drives a running gitmem serve (the one that holds the data directory, or --server) with
concurrent clients over its HTTP API, on a new store that it seeds with --memories memories of
--size bytes, and reports for each workload and number of clients the operations per second
and the latency percentiles (p50, p90, p99, max). The workloads: read (a memory by id),
write (a new memory), update (read-modify-write with a content_sha256 precondition), tool
(the memory tool's view), search (one word), mixed (70% reads, 15% writes, 5% of each other).

Beside each run it does the same work against a store opened in this process (a temporary
data directory, seeded alike), so the last column is what the server adds: the server's
throughput as a share of the in-process store's. The bench store is deleted at the end
unless --keep.`,
		Example: `  gitmem bench
  gitmem bench --clients 1,8,64 --duration 10s --memories 10000
  gitmem bench --workloads read,write --server http://team:7437   # with GITMEM_API_KEY`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			counts, err := parseCounts(clients)
			if err != nil {
				return usageError{err}
			}
			var wls []loadtest.Workload
			for _, w := range strings.Split(workloads, ",") {
				wl := loadtest.Workload(strings.TrimSpace(w))
				if !slices.Contains(loadtest.Workloads, wl) {
					return usageError{fmt.Errorf("unknown workload %q: --workloads takes read, write, update, tool, search and mixed, comma-separated", w)}
				}
				wls = append(wls, wl)
			}
			if memories < 1 || memories > 1_000_000 {
				return usageError{errors.New("--memories must be between 1 and 1,000,000")}
			}
			if size < 1 || size > 100*1024 {
				return usageError{errors.New("--size must be between 1 and 102400 bytes")}
			}
			if duration < 100*time.Millisecond || duration > time.Hour {
				return usageError{errors.New("--duration must be between 100ms and 1h")}
			}
			return a.withTarget(cmd.Context(), func(t target) error {
				if t.srv == nil {
					return fmt.Errorf("gitmem bench drives a running server, and none holds %s: start gitmem serve (or name a server with --server)", a.dataDir)
				}
				b := &bench{out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), quiet: asJSON || a.quiet,
					counts: counts, workloads: wls, duration: duration, memories: memories, size: size}
				return b.run(cmd.Context(), client.NewPooled(t.srv.URL(), os.Getenv("GITMEM_API_KEY"), slicesMax(counts)+4), keep, !noLocal, asJSON)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&clients, "clients", "1,8,64", "numbers of concurrent clients, comma-separated; each workload runs with each")
	f.StringVar(&workloads, "workloads", "read,write,update,tool,search,mixed", "workloads to run, comma-separated")
	f.DurationVar(&duration, "duration", 5*time.Second, "how long each run lasts")
	f.IntVar(&memories, "memories", 1000, "memories to seed the bench store with")
	f.IntVar(&size, "size", 600, "bytes of each memory")
	f.BoolVar(&keep, "keep", false, "keep the bench store on the server")
	f.BoolVar(&noLocal, "no-local", false, "skip the same work against a store in this process")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("--clients takes numbers from 1 to 1024, comma-separated, got %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

type bench struct {
	out, errOut io.Writer
	quiet       bool
	counts      []int
	workloads   []loadtest.Workload
	duration    time.Duration
	memories    int
	size        int
}

// row is one workload at one number of clients: the server's run and the in-process one.
type row struct {
	Server loadtest.Result  `json:"server"`
	Local  *loadtest.Result `json:"in_process,omitempty"`
	// Ratio is the server's throughput as a share of the in-process store's.
	Ratio float64 `json:"server_to_in_process,omitempty"`
}

func (b *bench) say(format string, args ...any) {
	if !b.quiet {
		fmt.Fprintf(b.errOut, format+"\n", args...)
	}
}

func (b *bench) run(ctx context.Context, c *client.Client, keep, local, asJSON bool) error {
	name := "bench-" + time.Now().UTC().Format("20060102-150405")
	st, err := c.CreateStore(ctx, gitstore.CreateStoreInput{Name: name, Description: "made by gitmem bench"})
	if err != nil {
		return fmt.Errorf("create the bench store: %w", err)
	}
	if !keep {
		defer func() {
			if err := c.DeleteStore(context.WithoutCancel(ctx), st.ID()); err != nil {
				fmt.Fprintf(b.errOut, "gitmem bench: delete the bench store %s: %v\n", name, err)
			}
		}()
	}
	remote := loadtest.Target{
		Store:  st,
		Search: func(ctx context.Context, req search.Request) error { _, err := st.Search(ctx, req); return err },
		Tool: func(ctx context.Context, input []byte) error {
			content, isErr, err := st.CallTool(ctx, tooladapter.MemoryToolName, input)
			if err == nil && isErr {
				err = errors.New(content)
			}
			return err
		},
	}
	b.say("gitmem bench: seeding store %s on %s with %d memories of %d bytes", name, c.URL(), b.memories, b.size)
	ids, err := loadtest.Seed(ctx, remote, b.memories, b.size, 64, nil)
	if err != nil {
		return err
	}
	var lt *localTarget
	if local {
		if lt, err = newLocalTarget(ctx); err != nil {
			return err
		}
		defer lt.close()
		b.say("gitmem bench: seeding a store in this process alike")
		if lt.ids, err = loadtest.Seed(ctx, lt.Target, b.memories, b.size, 64, nil); err != nil {
			return err
		}
	}
	var rows []row
	for i, w := range b.workloads {
		for _, n := range b.counts {
			run := fmt.Sprintf("r%d-%d", i, n)
			if w == loadtest.Search || w == loadtest.Mixed {
				if err := waitIndexed(ctx, remote); err != nil {
					return err
				}
			}
			res, err := loadtest.Run(ctx, remote, w, n, b.duration, ids, b.size, run)
			if err != nil {
				return err
			}
			r := row{Server: res}
			if lt != nil {
				lres, err := loadtest.Run(ctx, lt.Target, w, n, b.duration, lt.ids, b.size, run)
				if err != nil {
					return err
				}
				r.Local = &lres
				if lres.OpsPerSecond > 0 {
					r.Ratio = res.OpsPerSecond / lres.OpsPerSecond
				}
			}
			rows = append(rows, r)
			b.say("  %s with %d clients: %.0f ops/s", w, n, res.OpsPerSecond)
		}
	}
	if asJSON {
		return printJSON(b.out, map[string]any{"server": c.URL(), "memories": b.memories, "size": b.size,
			"duration_ns": b.duration, "data": rows})
	}
	b.table(rows)
	return nil
}

// waitIndexed waits until a search finds the seeded memories: the index catches up in the
// background after the seed's writes.
func waitIndexed(ctx context.Context, t loadtest.Target) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := t.Search(ctx, search.Request{Query: "note", Limit: 1})
		if err == nil || !gitstore.IsKind(err, gitstore.KindUnavailable) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (b *bench) table(rows []row) {
	w := tabwriter.NewWriter(b.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload\tclients\tops/s\tp50\tp90\tp99\tmax\terrors\tin-process ops/s\tp50\tp99\tserver/in-process\t")
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + "ms"
	}
	for _, r := range rows {
		s := r.Server
		fmt.Fprintf(w, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%d\t", s.Workload, s.Clients, s.OpsPerSecond, ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Max), s.Errors)
		if l := r.Local; l != nil {
			fmt.Fprintf(w, "%.0f\t%s\t%s\t%.2f\t\n", l.OpsPerSecond, ms(l.P50), ms(l.P99), r.Ratio)
		} else {
			fmt.Fprintf(w, "\t\t\t\t\n")
		}
	}
	w.Flush()
	for _, r := range rows {
		if r.Server.FirstError != "" {
			fmt.Fprintf(b.out, "%s with %d clients: %d errors, the first: %s\n", r.Server.Workload, r.Server.Clients, r.Server.Errors, r.Server.FirstError)
		}
	}
}

// localTarget is a store opened in this process, in a temporary data directory, with its
// search index and memory tool: the in-process side of the comparison.
type localTarget struct {
	loadtest.Target
	ids   []string
	dir   string
	data  *gitstore.DataDir
	index *search.Service
	stop  context.CancelFunc
}

func newLocalTarget(ctx context.Context) (*localTarget, error) {
	dir, err := os.MkdirTemp("", "gitmem-bench-")
	if err != nil {
		return nil, err
	}
	lt := &localTarget{dir: dir}
	if lt.data, err = gitstore.Open(ctx, dir, gitstore.Options{}); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	st, err := lt.data.CreateStore(ctx, gitstore.CreateStoreInput{Name: "bench", Actor: loadtest.Actor})
	if err != nil {
		lt.close()
		return nil, err
	}
	var watch context.Context
	watch, lt.stop = context.WithCancel(ctx)
	lt.index = search.New(lt.data, search.Options{Logger: slog.New(slog.DiscardHandler)})
	go lt.index.WatchAll(watch)
	sess, err := tooladapter.NewSession(ctx, tooladapter.Options{Stores: []tooladapter.Attachment{{Store: st}}, Search: lt.index})
	if err != nil {
		lt.close()
		return nil, err
	}
	lt.Target = loadtest.Target{
		Store: st,
		Search: func(ctx context.Context, req search.Request) error {
			_, err := lt.index.Search(ctx, st.ID(), req)
			return err
		},
		Tool: func(ctx context.Context, input []byte) error {
			res, err := sess.Call(ctx, tooladapter.MemoryToolName, input)
			if err == nil && res.IsError {
				err = errors.New(res.Content)
			}
			return err
		},
	}
	return lt, nil
}

func (lt *localTarget) close() {
	if lt.stop != nil {
		lt.stop()
	}
	if lt.index != nil {
		lt.index.Close()
	}
	if lt.data != nil {
		lt.data.Close()
	}
	os.RemoveAll(lt.dir)
}
