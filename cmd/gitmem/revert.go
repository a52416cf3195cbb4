package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/httpapi"
)

func init() { register(newRevertCmd) }

func newRevertCmd(a *app) *cobra.Command {
	var session, key, since, until string
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "revert STORE (--session SESSION_ID | --key API_KEY_ID) [--since TIME] [--until TIME] [--dry-run]",
		Short: "Undo what one session or one API key changed, as new versions",
		Long: `Puts every memory that the session (or the API key, directly or through its sessions) changed
between --since and --until back in the state it had just before its first change in that range:
content and path come back (a rename is undone, the id stays), a memory it created is deleted,
one it deleted comes back with its id. Each memory gets one new version, and all of them are
published together. A memory that someone else changed after the session first touched it is
left alone and listed as skipped, as is one whose earlier path another memory has taken.
TIME is 2026-01-02T15:04:05Z, a date (2026-01-02), today, yesterday, or a time ago (90m,
1h, 2d); without --since or --until that end is open.
--dry-run shows what would happen and writes nothing.`,
		Example: `  gitmem log prefs --session sesn_01M83PZ34EVJY3C18AZVHGZ9ME
  gitmem revert prefs --session sesn_01M83PZ34EVJY3C18AZVHGZ9ME --dry-run
  gitmem revert prefs --key apikey_01M83EQW76530MXJ2NYMV3BFCX --since 2026-11-23T09:00:00Z`,
		Args: exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (session == "") == (key == "") {
				return usageError{fmt.Errorf("give exactly one of --session and --key")}
			}
			in := gitstore.RevertInput{SessionID: session, APIKeyID: key, DryRun: dryRun, Actor: cliActor()}
			var err error
			if in.Since, in.Until, err = timeSpan(since, until); err != nil {
				return err
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				res, err := s.Revert(cmd.Context(), in)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), httpapi.RevertJSON(res))
				}
				printRevert(cmd, in, res)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "revert the changes of this session (sesn_…)")
	cmd.Flags().StringVar(&key, "key", "", "revert the changes made with this API key (apikey_…), also through sessions")
	cmd.Flags().StringVar(&since, "since", "", "only changes made at or after this time (2026-01-02, today, 1h, or RFC 3339)")
	cmd.Flags().StringVar(&until, "until", "", "only changes made at or before this time (2026-01-02, today, 1h, or RFC 3339); a day up to its end")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what would be reverted, and write nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON, as the HTTP API answers it")
	return cmd
}

func printRevert(cmd *cobra.Command, in gitstore.RevertInput, res gitstore.RevertResult) {
	w := cmd.OutOrStdout()
	who := "session " + in.SessionID
	if in.APIKeyID != "" {
		who = "API key " + in.APIKeyID
	}
	if len(res.Reverted)+len(res.Skipped)+len(res.Unchanged) == 0 {
		fmt.Fprintf(w, "%s changed no memory in that range: nothing to revert\n", who)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tPATH\tMEMORY\tDETAIL")
	for _, r := range res.Reverted {
		var detail string
		switch r.Action {
		case gitstore.RevertDeleted:
			detail = "created in the range"
		case gitstore.RevertRecreated:
			detail = "deleted in the range; back as of " + r.RevertedTo
		default:
			detail = "as of " + r.RevertedTo
			if r.FromPath != r.Path {
				detail = "moved back from " + r.FromPath + ", " + detail
			}
		}
		if r.VersionID != "" {
			detail += ": new version " + r.VersionID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Action, r.Path, r.MemoryID, detail)
	}
	for _, sk := range res.Skipped {
		detail := sk.Message
		if b := sk.Blocking; b != nil && sk.Reason == gitstore.SkipChangedLater {
			detail = fmt.Sprintf("changed later by %s (%s, %s)", actorString(b.CreatedBy), b.ID,
				b.CreatedAt.Local().Format(time.DateTime))
		}
		fmt.Fprintf(tw, "skipped\t%s\t%s\t%s\n", sk.Path, sk.MemoryID, detail)
	}
	for _, u := range res.Unchanged {
		fmt.Fprintf(tw, "unchanged\t%s\t%s\t%s\n", u.Path, u.MemoryID, "already as before the range")
	}
	tw.Flush()
	verb := "reverted"
	if res.DryRun {
		verb = "would revert"
	}
	fmt.Fprintf(w, "%s %d, skipped %d, unchanged %d (changes of %s)", verb, len(res.Reverted), len(res.Skipped), len(res.Unchanged), who)
	if res.DryRun {
		fmt.Fprint(w, "; dry run: nothing was written")
	}
	fmt.Fprintln(w)
}
