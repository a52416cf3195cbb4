package main

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gitmem/gitmem/gitstore"
)

func init() { register(newReindexCmd) }

func newReindexCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "reindex STORE",
		Short: "Rebuild a store's catalog from its git history",
		Long: `The catalog (memory ids, paths and versions) is derived from the history of main and kept
outside the repository. reindex throws it away and reads the whole history again.`,
		Args: exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withData(cmd.Context(), func(d *gitstore.DataDir) error {
				s, err := findStore(cmd.Context(), d, args[0])
				if err != nil {
					return err
				}
				start := time.Now()
				var bar *progressbar.ProgressBar
				commits := 0
				progress := func(done, total int) {
					commits = total
					if bar == nil && isTerminal(os.Stderr) {
						bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
							progressbar.OptionSetDescription("reading history"), progressbar.OptionShowCount(),
							progressbar.OptionSetItsString("commits"), progressbar.OptionShowIts(),
							progressbar.OptionClearOnFinish())
					}
					if bar != nil {
						bar.Set(done)
					}
				}
				if err := d.Reindex(cmd.Context(), s.ID(), progress); err != nil {
					return err
				}
				if bar != nil {
					bar.Finish()
				}
				page, err := s.Versions(cmd.Context(), gitstore.VersionFilter{Limit: 1})
				if err != nil {
					return err
				}
				latest := "none"
				if len(page.Versions) > 0 {
					latest = page.Versions[0].ID
				}
				fmt.Fprintf(cmd.OutOrStdout(), "reindexed %s: %d commits in %s; head %s, latest version %s\n",
					s.ID(), commits, time.Since(start).Round(time.Millisecond), s.Head(), latest)
				return nil
			})
		},
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
