package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
)

func init() { register(newExpireCmd) }

func newExpireCmd(a *app) *cobra.Command {
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "expire [STORE]",
		Short: "Delete the memories nobody has read or written for the store's expire-after",
		Long: `Deletes, in STORE or in every store, the memories that nobody has read or written for
the store's expiry ("gitmem stores set STORE --expire-after 30d"). Each is an ordinary
versioned delete made by gitmem's system actor, so "gitmem restore" brings it back. Reads
are tracked outside the repository: reading makes no commit. A listing is not a read.
"gitmem serve" runs this on a schedule (--expire-every).`,
		Example: `  gitmem expire notes --dry-run
  gitmem expire`,
		Args: rangeArgs(nil, "STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withTarget(cmd.Context(), func(t target) error {
				if len(args) == 0 {
					reps, err := t.expireAll(cmd.Context(), dryRun)
					if err != nil {
						return err
					}
					ids := make([]string, 0, len(reps))
					for id := range reps {
						ids = append(ids, id)
					}
					sort.Strings(ids)
					if asJSON { // the reports of the stores where something expired
						out := make([]any, len(ids))
						for i, id := range ids {
							out[i] = httpapi.ExpireJSON(id, reps[id])
						}
						return printJSON(cmd.OutOrStdout(), out)
					}
					if len(reps) == 0 {
						fmt.Fprintln(cmd.OutOrStdout(), "no memory expires")
					}
					for _, id := range ids {
						if err := printExpiry(cmd.OutOrStdout(), id, reps[id]); err != nil {
							return err
						}
					}
					return nil
				}
				id, err := resolveStore(cmd.Context(), t.lister(), args[0])
				if err != nil {
					return err
				}
				s, err := t.store(cmd.Context(), id)
				if err != nil {
					return err
				}
				rep, err := s.Expire(cmd.Context(), dryRun)
				if err != nil {
					return err
				}
				if rep.ExpireAfter == 0 {
					return invalidf("store %s has no expiry (or is archived); set one with: gitmem stores set %s --expire-after 30d", s.ID(), args[0])
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), httpapi.ExpireJSON(s.ID(), rep))
				}
				return printExpiry(cmd.OutOrStdout(), s.ID(), rep)
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only show what would expire")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON, as the HTTP API answers it (a list without STORE)")
	return cmd
}

// expireAll expires the memories of every store on the target; the report has the stores
// where something expired.
func (t target) expireAll(ctx context.Context, dryRun bool) (map[string]gitstore.ExpireReport, error) {
	if t.srv == nil {
		return t.data.ExpireAll(ctx, dryRun)
	}
	stores, err := allStores(ctx, t.srv, true)
	if err != nil {
		return nil, err
	}
	out := map[string]gitstore.ExpireReport{}
	for _, info := range stores {
		rep, err := t.srv.Store(info.ID).Expire(ctx, dryRun)
		if err != nil {
			return out, fmt.Errorf("expire memories of %s: %w", info.ID, err)
		}
		if len(rep.Expired) > 0 {
			out[info.ID] = rep
		}
	}
	return out, nil
}

func printExpiry(w io.Writer, storeID string, rep gitstore.ExpireReport) error {
	verb := "expired"
	if rep.DryRun {
		verb = "would expire"
	}
	fmt.Fprintf(w, "%s: %s %d memor%s unused for %s (last read or written before %s)\n", storeID, verb, len(rep.Expired),
		map[bool]string{true: "y", false: "ies"}[len(rep.Expired) == 1], rep.ExpireAfter, rep.Cutoff.Local().Format(time.DateTime))
	if len(rep.Expired) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PATH\tBYTES\tLAST USED\tMEMORY\tDELETE VERSION")
	for _, e := range rep.Expired {
		ver := e.VersionID
		if ver == "" {
			ver = "-"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\n", e.Path, e.SizeBytes, e.LastUsed.Local().Format(time.DateTime), e.MemoryID, ver)
	}
	return tw.Flush()
}

// startExpiry runs expiry over every store each time every passes, until ctx ends or the
// returned stop is called; stop waits for a run in progress. A failure is logged and tried
// again at the next tick. every <= 0 runs nothing.
func startExpiry(ctx context.Context, d *gitstore.DataDir, every time.Duration, log *slog.Logger) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		expireEvery(ctx, d, every, log)
	}()
	return func() {
		cancel()
		<-done
	}
}

func expireEvery(ctx context.Context, d *gitstore.DataDir, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			reps, err := d.ExpireAll(ctx, false)
			if err != nil && ctx.Err() == nil {
				log.Error("expire memories", "err", err)
			}
			for id, rep := range reps {
				log.Info("expired memories", "store", id, "count", len(rep.Expired), "expire_after", rep.ExpireAfter.String())
			}
		}
	}
}
