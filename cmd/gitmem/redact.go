package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/gitsync"
	"github.com/gitmem/gitmem/internal/gitexec"
	"github.com/gitmem/gitmem/proposals"
)

func init() { register(newRedactCmd) }

func newRedactCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "redact STORE VERSION_ID",
		Short: "Remove a version's content from the store's history for good",
		Long: `Scrubs the content and path of one version out of the store's git history: the commits that
hold the content are rewritten (a "[redacted]" marker takes its place, up to the memory's next
version), main moves to the new history and the old objects are pruned, packed or loose. Every
version keeps its id, memory, author and time; the version then shows no path or content, and
who redacted it and when.

The current version of a live memory cannot be redacted: update or delete the memory first.
Redacting a redacted version changes nothing. The store's remotes get the new history at the
next sync ("gitmem sync STORE", or the server's own), which force-pushes it over theirs;
other replicas take the redaction when they sync. Clones made before still hold the content.
It needs the git program. Find version ids with "gitmem log STORE PATH".`,
		Example: `  gitmem log prefs /creds.md
  gitmem redact prefs memver_01M83RXJE06891D7CSNGD1TFB7`,
		Args: exactArgs("STORE", "VERSION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withTarget(cmd.Context(), func(t target) error {
				s, err := t.find(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if t.srv == nil {
					if err := gitexec.Need("gitmem redact"); err != nil {
						return err
					}
					// The store's proposals get the redaction too (their forks hold its history).
					m := proposals.New(t.data)
					defer m.Close()
				}
				res, err := s.Redact(cmd.Context(), gitstore.RedactInput{VersionID: args[1], Actor: cliActor()})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if asJSON {
					return printJSON(out, versionJSON(res.Version))
				}
				v := res.Version
				if res.NewHead == "" {
					fmt.Fprintf(out, "version %s of memory %s was redacted already (%s by %s); nothing changed\n",
						v.ID, v.MemoryID, v.RedactedAt.Local().Format(timeFormat), v.RedactedBy.ID)
					return nil
				}
				fmt.Fprintf(out, "redacted version %s of memory %s: rewrote %d commits, main %.12s -> %.12s (%s)\n",
					v.ID, v.MemoryID, res.Rewritten, res.OldHead, res.NewHead, res.Took.Round(1e6))
				if res.ContentRemains {
					fmt.Fprintln(out, "note: the same content is also another version's or another file's, and stays as theirs")
				}
				for _, f := range res.Forks {
					if f.Closed {
						fmt.Fprintf(out, "proposal %s: could not be redacted in its fork; its changes were removed (rejected if it was open)\n", f.ID)
					} else {
						fmt.Fprintf(out, "proposal %s: redacted in it too\n", f.ID)
					}
				}
				if remotes, err := gitsync.Remotes(a.dataDir, s.ID()); err == nil && len(remotes) > 0 {
					var names []string
					for _, r := range remotes {
						names = append(names, r.Name)
					}
					fmt.Fprintf(out, "remotes (%s): the next sync puts this history in place of theirs (gitmem sync %s)\n",
						strings.Join(names, ", "), args[0])
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the redacted version as JSON, as the HTTP API answers it")
	return cmd
}
