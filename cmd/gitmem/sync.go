package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/gitsync"
	"github.com/gitmem/gitmem/internal/gitexec"
	"github.com/gitmem/gitmem/proposals"
)

func init() { register(newSyncCmd) }

func newSyncCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sync STORE [REMOTE]",
		Short: "Fetch, merge and push: sync a store with its remotes (or one of them)",
		Long: `For each remote: fetches its main, merges it into the store's main and pushes the result.
Changes to different memories merge; changes to one memory merge as text where they do not
overlap; where they do, the remote's content stays at the path and ours is kept beside it as
a conflict memory, /a/b.conflict-<commit>.md, listed below. Nothing is lost and nothing is
decided by time. The merge is a commit by gitmem whose message says what merged.
It needs the git program. "gitmem serve" does the same after writes and on an interval.`,
		Example: `  gitmem sync notes
  gitmem sync notes origin`,
		Args: rangeArgs([]string{"STORE"}, "REMOTE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			remote := ""
			if len(args) == 2 {
				remote = args[1]
			}
			return a.withTarget(cmd.Context(), func(t target) error {
				s, err := t.find(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if t.srv == nil {
					// A redaction that the sync takes from a remote reaches the store's
					// proposals too (their forks hold its history), as the server's does.
					m := proposals.New(t.data)
					defer m.Close()
				}
				results, failed, err := a.syncStore(cmd.Context(), s, remote)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					if err := printJSON(out, results); err != nil {
						return err
					}
					return errors.Join(failed...)
				}
				for _, res := range results {
					fmt.Fprintf(out, "%s: %s\n", res.Remote, res.Summary())
					for _, p := range res.TextMerged {
						fmt.Fprintf(out, "  merged as text: %s\n", p)
					}
					for _, p := range res.Kept {
						fmt.Fprintf(out, "  kept (deleted on one side, changed on the other): %s\n", p)
					}
					for _, c := range res.Conflicts {
						fmt.Fprintf(out, "  conflict: %s (the remote's content stays); ours is at %s\n", c.Path, c.CopyPath)
					}
				}
				return errors.Join(failed...)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what each sync did as JSON")
	return cmd
}

// syncStore syncs s with its remotes (the one named remote, or all for ""): through the
// server that answers for s, or here. It returns what each sync did and an error for each
// remote whose sync failed.
func (a *app) syncStore(ctx context.Context, s storeAPI, remote string) ([]gitsync.Result, []error, error) {
	if rs, ok := s.(*client.Store); ok {
		return rs.Sync(ctx, remote)
	}
	if err := gitexec.Need("gitmem sync"); err != nil {
		return nil, nil, err
	}
	y := &gitsync.Syncer{DataDir: a.dataDir}
	return y.SyncRemotes(ctx, s.(*gitstore.Store), remote)
}

// syncOptions are serve's flags for syncing with remotes.
type syncOptions struct{ every, afterWrite time.Duration }

// startSync starts the loop that syncs stores with their remotes, and returns what the
// banner says of it and a function that waits for the loop to stop once ctx is done, so that
// no sync is cut off by the data directory closing.
func startSync(ctx context.Context, y *gitsync.Syncer, d *gitstore.DataDir, log *slog.Logger, so syncOptions) (string, func()) {
	if so.every <= 0 && so.afterWrite <= 0 {
		return "off (--sync-interval 0 --sync-after-write 0)", func() {}
	}
	if err := gitexec.Need("sync"); err != nil {
		return "off: " + err.Error(), func() {}
	}
	l := &gitsync.Loop{Syncer: y, Data: d, Interval: so.every, AfterWrite: so.afterWrite, Log: log}
	stopped := make(chan struct{})
	go func() { defer close(stopped); l.Run(ctx) }()
	var when []string
	if so.afterWrite > 0 {
		when = append(when, fmt.Sprintf("%s after writes", so.afterWrite))
	}
	if so.every > 0 {
		when = append(when, fmt.Sprintf("every %s", so.every))
	}
	return "stores with remotes sync " + strings.Join(when, " and ") + " (gitmem remote list shows how it went)", func() { <-stopped }
}
