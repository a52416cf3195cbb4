package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/english"
	"github.com/gitmem/gitmem/search"
)

func init() { register(newReindexCmd) }

func newReindexCmd(a *app) *cobra.Command {
	var only string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reindex STORE",
		Short: "Rebuild a store's catalog and search index from its git history",
		Long: `The catalog (memory ids, paths and versions) and the search index are derived from the
history of main and kept outside the repository. reindex throws them away and builds them again:
the catalog from the whole history, then the search index from the memories at the head.`,
		Example: `  gitmem reindex prefs
  gitmem reindex prefs --only search`,
		Args: exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if only != "" && only != "catalog" && only != "search" {
				return usageError{fmt.Errorf("--only %q: use catalog or search", only)}
			}
			return a.withData(cmd.Context(), func(d *gitstore.DataDir) (err error) {
				s, err := findStore(cmd.Context(), d, args[0])
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				report := map[string]any{"type": "reindex", "memory_store_id": s.ID()}
				if asJSON {
					out = io.Discard
					defer func() {
						if err == nil {
							err = printJSON(cmd.OutOrStdout(), report)
						}
					}()
				}
				if only != "search" {
					start := time.Now()
					progress, done := progressBar(cmd.ErrOrStderr(), "reading history", "commits")
					err := d.Reindex(cmd.Context(), s.ID(), progress)
					commits := done()
					if err != nil {
						return err
					}
					page, err := s.Versions(cmd.Context(), gitstore.VersionFilter{Limit: 1})
					if err != nil {
						return err
					}
					latest := "none"
					if len(page.Versions) > 0 {
						latest = page.Versions[0].ID
					}
					report["catalog"] = map[string]any{"commits": commits, "head": s.Head(), "latest_version_id": nilIfEmpty(strings.TrimPrefix(latest, "none")),
						"took_ms": time.Since(start).Milliseconds()}
					fmt.Fprintf(out, "reindexed %s: %s in %s; head %s, latest version %s\n",
						s.ID(), english.Count(commits, "commit"), time.Since(start).Round(time.Millisecond), s.Head(), latest)
				}
				if only != "catalog" {
					start := time.Now()
					progress, done := progressBar(cmd.ErrOrStderr(), "indexing memories", "memories")
					err := search.Reindex(cmd.Context(), d, s.ID(), progress)
					memories := done()
					if err != nil {
						return err
					}
					report["search"] = map[string]any{"memories": memories, "took_ms": time.Since(start).Milliseconds()}
					fmt.Fprintf(out, "rebuilt the search index of %s: %s in %s\n",
						s.ID(), english.Count(memories, "memory"), time.Since(start).Round(time.Millisecond))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&only, "only", "", "rebuild only the `catalog` or only the `search` index")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was rebuilt as JSON")
	return cmd
}

// progressBar returns a progress callback that draws a bar on w if it is a terminal, and a
// function that finishes the bar and returns the last total it was told.
func progressBar(w io.Writer, description, unit string) (gitstore.Progress, func() int) {
	var bar *progressbar.ProgressBar
	last := 0
	progress := func(done, total int) {
		last = total
		if f, ok := w.(*os.File); bar == nil && ok && isTerminal(f) {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(description), progressbar.OptionShowCount(),
				progressbar.OptionSetItsString(unit), progressbar.OptionShowIts(),
				progressbar.OptionClearOnFinish())
		}
		if bar != nil {
			bar.Set(done)
		}
	}
	return progress, func() int {
		if bar != nil {
			bar.Finish()
		}
		return last
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
