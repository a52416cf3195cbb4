package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/gitsync"
	"github.com/gitmem/gitmem/internal/gitexec"
)

func init() { register(newRemoteCmd) }

func newRemoteCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remote",
		Short: "Add, list and remove the git remotes that a store syncs with",
		Long: `A store can sync with git remotes: any URL that git understands (a path, file://,
http(s):// or ssh), with credentials from git's usual places (credential helpers, ssh keys);
git never prompts. "gitmem sync" syncs once; "gitmem serve" syncs after writes and on an
interval. The remotes and the state of their syncs are kept in the data directory, under
remotes/, outside the store's repository.`,
	}
	cmd.AddCommand(newRemoteAddCmd(a), newRemoteListCmd(a), newRemoteRemoveCmd(a))
	return cmd
}

// remoteJSON is a store's remote as scripts read it.
func remoteJSON(storeID string, r gitsync.Remote) map[string]any {
	return map[string]any{"type": "remote", "memory_store_id": storeID, "name": r.Name, "url": r.URL,
		"added_at": r.AddedAt.UTC().Format(timeFormat)}
}

func newRemoteAddCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add STORE NAME URL",
		Short: "Add a remote to a store",
		Long: `Adds a remote. The remote must be empty (the first sync pushes the store to it) or hold
this store's history (pushed there by a gitmem sync or import of the store elsewhere).`,
		Example: `  gitmem remote add notes origin /srv/git/notes.git
  gitmem remote add notes origin git@example.com:team/notes.git
  gitmem remote add notes origin https://git.example.com/team/notes.git`,
		Args: exactArgs("STORE", "NAME", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), args[0], func(s *gitstore.Store) error {
				info, err := s.Info(cmd.Context())
				if err != nil {
					return err
				}
				r, err := gitsync.Add(a.dataDir, s.ID(), info.Name, args[1], args[2], time.Now())
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), remoteJSON(s.ID(), r))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added remote %s (%s) to store %s (%s)\nsync with \"gitmem sync %s\", or let \"gitmem serve\" do it\n",
					r.Name, r.URL, info.Name, s.ID(), info.Name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the remote as JSON")
	return cmd
}

func newRemoteRemoveCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "remove STORE NAME",
		Aliases: []string{"rm"},
		Short:   "Remove a remote from a store (the remote repository is left as it is)",
		Args:    exactArgs("STORE", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), args[0], func(s *gitstore.Store) error {
				r, err := gitsync.Remove(a.dataDir, s.ID(), args[1])
				if err != nil {
					return err
				}
				if err := gitsync.RemoveTrackingRef(cmd.Context(), s, r.Name); err != nil && !errors.Is(err, gitexec.ErrNoGit) {
					return err
				}
				if asJSON {
					out := remoteJSON(s.ID(), r)
					out["removed"] = true
					return printJSON(cmd.OutOrStdout(), out)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed remote %s (%s) from store %s\n", r.Name, r.URL, s.ID())
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the removed remote as JSON")
	return cmd
}

func newRemoteListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list [STORE]",
		Aliases: []string{"ls"},
		Short:   "List the remotes of a store (of every store without STORE) and how their syncs went",
		Long: `Lists remotes with the state of their syncs: the last sync that worked and what it did,
the remote's main as of then, the last error and, while a remote fails, when the next try
is (the server backs off: 5s, 10s, 20s, ... up to 10 minutes). It works while "gitmem serve"
runs; a store is then named by its id, or by the name it had when its remote was added.`,
		Example: `  gitmem remote list notes
  gitmem remote list --json`,
		Args: rangeArgs(nil, "STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if u, _ := a.serverURL(); u != "" {
				// The remotes are files of the data directory, not of the API.
				return a.needsDataDir(nil)
			}
			stores, err := gitsync.StoresWithRemotes(a.dataDir)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				id, err := a.remoteStore(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				stores = map[string]string{id: stores[id]}
			}
			list, err := remoteList(a.dataDir, stores)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []remoteEntry{}
				}
				return printJSON(cmd.OutOrStdout(), list)
			}
			if len(list) == 0 {
				a.sayNone(cmd, "no remotes (add one with \"gitmem remote add STORE NAME URL\")")
				return nil
			}
			printRemotes(cmd.OutOrStdout(), list, time.Now())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// remoteStore resolves STORE for remote list: through the data directory if it is free,
// else through the server that holds it.
func (a *app) remoteStore(ctx context.Context, ref string) (id string, err error) {
	err = a.withTarget(ctx, func(t target) error {
		id, err = resolveStore(ctx, t.lister(), ref)
		return err
	})
	return id, err
}

// remoteEntry is one remote of one store with its sync state, as remote list shows it.
type remoteEntry struct {
	StoreID   string `json:"store_id"`
	StoreName string `json:"store_name,omitempty"`
	gitsync.Remote
	State gitsync.State `json:"state"`
}

func remoteList(dataDir string, stores map[string]string) ([]remoteEntry, error) {
	var out []remoteEntry
	for id, name := range stores {
		remotes, err := gitsync.Remotes(dataDir, id)
		if err != nil {
			return nil, err
		}
		states, err := gitsync.States(dataDir, id)
		if err != nil {
			return nil, err
		}
		for _, r := range remotes {
			out = append(out, remoteEntry{StoreID: id, StoreName: name, Remote: r, State: states[r.Name]})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].StoreID != out[j].StoreID {
			return out[i].StoreID < out[j].StoreID
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func printRemotes(w io.Writer, list []remoteEntry, now time.Time) {
	store := ""
	for _, e := range list {
		if e.StoreID != store {
			store = e.StoreID
			fmt.Fprintf(w, "%s (%s)\n", e.StoreName, e.StoreID)
		}
		st := e.State
		fmt.Fprintf(w, "  %s  %s\n", e.Name, e.URL)
		switch {
		case st.LastSync.IsZero():
			fmt.Fprintf(w, "    last sync:   never\n")
		default:
			fmt.Fprintf(w, "    last sync:   %s: %s\n", ago(st.LastSync, now), st.Summary)
			fmt.Fprintf(w, "    remote head: %s\n", st.RemoteHead)
		}
		if st.LastError != "" {
			fmt.Fprintf(w, "    last error:  %s: %s\n", ago(st.LastTry, now), oneLine(st.LastError))
			fmt.Fprintf(w, "    next try:    %s (after %d failed tries in a row)\n", until(st.NextTry, now), st.Failures)
		}
	}
}

func ago(t, now time.Time) string {
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), now.Sub(t).Round(time.Second))
}

func until(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), t.Sub(now).Round(time.Second))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
