package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/internal/gitexec"
)

func init() { register(newGCCmd) }

func newGCCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "gc [STORE]",
		Short: "Repack a store's git objects (all stores without STORE)",
		Long: `Packs every object of the store's repository into one pack with fresh deltas (git repack
-a -f), removes the old packs and the loose objects now packed, and prunes unreachable loose
objects older than ten minutes. It needs the git program. A running server does the same
on POST /v1/memory_stores/{id}/gc.`,
		Example: `  gitmem gc prefs
  gitmem gc`,
		Args: rangeArgs(nil, "STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withTarget(cmd.Context(), func(t target) error {
				if t.local() {
					if err := gitexec.Need("gitmem gc"); err != nil {
						return err
					}
				}
				var ids []string
				if len(args) == 1 {
					id, err := resolveStore(cmd.Context(), t.lister(), args[0])
					if err != nil {
						return err
					}
					ids = append(ids, id)
				} else {
					infos, err := allStores(cmd.Context(), t.lister(), true)
					if err != nil {
						return err
					}
					for _, info := range infos {
						ids = append(ids, info.ID)
					}
				}
				out := cmd.OutOrStdout()
				var results []any
				for _, id := range ids {
					s, err := t.store(cmd.Context(), id)
					if err != nil {
						return err
					}
					res, err := s.GC(cmd.Context())
					if err != nil {
						return fmt.Errorf("gc %s: %w", id, err)
					}
					if asJSON {
						results = append(results, httpapi.GCJSON(id, res))
						continue
					}
					fmt.Fprintf(out, "%s: %s in %d packs and %d loose objects -> %s in %d pack(s) and %d loose objects (%s)\n",
						id, humanBytes(res.Before.Bytes()), res.Before.Packs, res.Before.LooseObjects,
						humanBytes(res.After.Bytes()), res.After.Packs, res.After.LooseObjects, res.Took.Round(1e6))
					if res.KeptOldPacks {
						fmt.Fprintf(out, "%s: main moved during gc (a push); the old packs were kept: run gc again\n", id)
					}
				}
				if asJSON { // one store's answer as the gc route gives it, or a list of them
					if len(args) == 1 {
						return printJSON(out, results[0])
					}
					return printJSON(out, results)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON, as the HTTP API answers it (a list without STORE)")
	return cmd
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
