package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/search"
)

func init() { register(newSearchCmd) }

func newSearchCmd(a *app) *cobra.Command {
	var req search.Request
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search STORE QUERY...",
		Short: "Search a store's memories",
		Long: `Searches the memories of a store, best match first, and shows the lines that matched
with their line numbers. The index lives in the data directory (search/) and is built on
first use; it catches up with every change, including pushes and commits made with git.

A query is words (ranked with BM25; a memory with more of them ranks higher), and:
  "exact phrase"   a phrase that must appear
  deplo*           words that start with deplo
  -word            memories without the word (or -"a phrase")
  path:/dir/       memories below /dir/ only     path:word   memories whose path has the word
Case and accents do not matter ("resume" finds "résumé"); English words match their other
forms ("deploying" finds "deploy"); a typo in a longer word is forgiven. Chinese, Japanese
and Korean text is found by any part of it.`,
		Example: `  gitmem search prefs coffee
  gitmem search prefs '"code review" checklist'
  gitmem search prefs deplo* --path-prefix /projects/
  gitmem search prefs tea --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			// One argument is the store or the query: RunE asks which, to say what is missing.
			if err := rangeArgs([]string{"STORE"}, "QUERY...")(cmd, args); err != nil {
				return fmt.Errorf("%w and QUERY: %s", err, queryForms)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Query = strings.Join(args[1:], " ")
			if err := checkSearchArgs(args, req); err != nil {
				return err
			}
			return a.withTarget(cmd.Context(), func(t target) error {
				if len(args) == 1 {
					return missingQuery(cmd.Context(), t.lister(), args[0])
				}
				res, id, err := t.search(cmd.Context(), args[0], req, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if asJSON { // as the API answers it
					return printJSON(cmd.OutOrStdout(), map[string]any{"type": "memory_search_result", "memory_store_id": id,
						"query": req.Query, "commit": res.Commit, "total": res.Total, "data": res.Hits})
				}
				printHits(cmd.OutOrStdout(), res, useColor(cmd.OutOrStdout()))
				return nil
			})
		},
	}
	// pflag takes a QUERY of "-word" for flags, and refuses the first letter it has no flag of.
	cmd.Annotations = map[string]string{dashArgHint: `a QUERY that starts with - goes after --, as in "gitmem search STORE -- -word"`}
	cmd.Flags().StringVar(&req.PathPrefix, "path-prefix", "", "only memories below this path (like /projects/)")
	// Out of its range, a --limit or --lines is refused in its own name, where the search would
	// name the API's limit or snippets, or take 0 for its default.
	inRangeVarP(cmd.Flags(), &req.Limit, "limit", "n", 10, 1, search.MaxLimit, fmt.Sprintf("how many memories to show (1 to %d)", search.MaxLimit))
	inRangeVarP(cmd.Flags(), &req.Snippets, "lines", "", 3, 1, search.MaxSnippets, fmt.Sprintf("how many matching lines to show per memory (1 to %d)", search.MaxSnippets))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// checkSearchArgs refuses, as a usage error, a QUERY of spaces alone, which the search would
// refuse in the terms of its API (a query parameter q).
func checkSearchArgs(args []string, req search.Request) error {
	if len(args) > 1 && strings.TrimSpace(req.Query) == "" {
		return usageError{fmt.Errorf("QUERY is empty; say what to search %s for: %s", quoteArg(args[0]), queryForms)}
	}
	return nil
}

// queryForms is what a query of gitmem search may hold, for its usage errors.
const queryForms = `words, "a phrase", prefix*, -word, path:/dir/`

// maxStoresNamed is how many stores a usage error lists by name; more are left to
// "gitmem stores list".
const maxStoresNamed = 5

// missingQuery is the usage error of gitmem search with one argument, arg: the store without
// its query, or, if no store has that name, most likely the query without its store, in
// which case it names the stores to search. The stores are listed once, for both: through a
// server, one request. A failed lookup (no server, a refused key) leaves the store list out
// rather than hide the usage error.
func missingQuery(ctx context.Context, l storeLister, arg string) error {
	stores, err := allStores(ctx, l, true) // as resolveStore finds a store: archived ones too
	if err == nil {
		_, err = gitstore.ResolveStoreRef(stores, arg)
		if err == nil && strings.HasPrefix(arg, gitstore.StorePrefix) {
			err = storeExists(ctx, l, arg) // an id, which ResolveStoreRef takes as it is
		}
	}
	if err == nil {
		return usageError{fmt.Errorf("missing QUERY, what to search %s for: %s", arg, queryForms)}
	}
	msg := fmt.Sprintf("%q names no store, so it is likely the QUERY: search takes STORE QUERY", arg)
	if !errors.Is(err, gitstore.ErrNoStore) {
		return usageError{fmt.Errorf(`%s ("gitmem stores list" lists the stores)`, msg)}
	}
	stores = slices.DeleteFunc(stores, func(s gitstore.StoreInfo) bool { return s.ArchivedAt != nil })
	switch {
	case len(stores) > maxStoresNamed:
		msg += fmt.Sprintf(`, as in "gitmem search STORE %s" ("gitmem stores list" lists the stores)`, quoteArg(arg))
	case len(stores) == 0:
		msg += "; there is no store yet: create one with \"gitmem stores create NAME\""
	default:
		names := make([]string, len(stores))
		for i, s := range stores {
			names[i] = quoteArg(cmp.Or(s.Name, s.ID))
		}
		msg += fmt.Sprintf(`, as in "gitmem search %s %s" (stores: %s)`, names[0], quoteArg(arg), strings.Join(names, ", "))
	}
	return usageError{errors.New(msg)}
}

// search searches the store named by ref on the target.
func (t target) search(ctx context.Context, ref string, req search.Request, progress io.Writer) (*search.Result, string, error) {
	id, err := resolveStore(ctx, t.lister(), ref)
	if err != nil {
		return nil, "", err
	}
	var res *search.Result
	if t.srv != nil {
		res, err = t.srv.Store(id).Search(ctx, req)
	} else {
		res, err = runSearch(ctx, t.data, id, req, progress)
	}
	return res, id, err
}

// runSearch searches a store of the open data directory. An index being built is waited
// for, with its progress on stderr.
func runSearch(ctx context.Context, d *gitstore.DataDir, storeID string, req search.Request, progress io.Writer) (*search.Result, error) {
	// Only warnings: that an index is built on first use shows as progress, if it takes long.
	log := slog.New(slog.NewTextHandler(progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc := search.New(d, search.Options{RebuildWait: time.Second, Logger: log})
	defer svc.Close()
	for {
		res, err := svc.Search(ctx, storeID, req)
		var unavailable *search.UnavailableError
		if !errors.As(err, &unavailable) {
			if err == nil {
				fmt.Fprint(progress, clearLine(progress))
			}
			return res, err
		}
		fmt.Fprintf(progress, "%sbuilding the search index: %d of %d memories", clearLine(progress), unavailable.Done, unavailable.Total)
		if !isTerminalWriter(progress) {
			fmt.Fprintln(progress)
		}
	}
}

// useColor reports whether to color output to w: a terminal, unless NO_COLOR is set.
func useColor(w io.Writer) bool { return os.Getenv("NO_COLOR") == "" && isTerminalWriter(w) }

func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// clearLine returns what erases a progress line on a terminal, and "" elsewhere.
func clearLine(w io.Writer) string {
	if isTerminalWriter(w) {
		return "\r\033[K"
	}
	return ""
}

func printHits(w io.Writer, res *search.Result, color bool) {
	open, close := "", ""
	if color {
		open, close = "\033[1;31m", "\033[0m"
	}
	for _, h := range res.Hits {
		fmt.Fprintf(w, "%s  (%s, score %.2f)\n", shown(h.Path), h.MemoryID, h.Score)
		for _, sn := range h.Snippets {
			fmt.Fprintf(w, "  %4d: %s\n", sn.Line, sn.MarkedFunc(open, close, shownText)) // a line that its writer chose
		}
	}
	commit := res.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	switch {
	case res.Total == 0:
		fmt.Fprintf(w, "no memory matches (searched commit %s)\n", commit)
	default:
		fmt.Fprintf(w, "%d of %d matching memories (searched commit %s)\n", len(res.Hits), res.Total, commit)
	}
}
