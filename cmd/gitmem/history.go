package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
)

func init() {
	register(newRestoreCmd)
	register(newDiffCmd)
	register(newBlameCmd)
}

func newRestoreCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "restore STORE VERSION_ID | restore BACKUP --data DIR",
		Short: "Restore a memory to an earlier version; or a data directory from a backup",
		Long: `gitmem restore STORE VERSION_ID gives the memory of VERSION_ID that version's content and
path again, as a new "modified" version on top of its history (nothing is rewritten or lost).
A deleted memory comes back with its id. A deletion cannot be restored (restore the version
before it), and a path that another memory took since is a conflict. Find version ids with
"gitmem log STORE PATH".

gitmem restore BACKUP --data DIR makes the data directory DIR (new, or empty) from a backup
made by "gitmem backup" (a directory, or a .tar file): each store's history is fetched and
checked, its catalog and search index built from it (a progress bar on a terminal), and keys,
remotes and webhooks put back. The backup's config file (gitmem.toml) is left for you to put
where it was. Then run "gitmem serve --data DIR".`,
		Example: `  gitmem log prefs /style.md
  gitmem restore prefs memver_01M83RXJE06891D7CSNGD1TFB7
  gitmem restore /backups/gitmem --data /var/lib/gitmem`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 3 && strings.HasPrefix(args[1], "/") {
				// As log and diff take it: the version names its memory already.
				return fmt.Errorf("no PATH, as the version names its memory: gitmem restore %s %s", quoteArg(args[0]), quoteArg(args[2]))
			}
			return rangeArgs([]string{"STORE|BACKUP"}, "VERSION_ID")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return a.restoreBackup(cmd, args[0], asJSON)
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				res, err := s.Restore(cmd.Context(), gitstore.RestoreInput{VersionID: args[1], Actor: cliActor()})
				if err != nil {
					return err
				}
				if asJSON { // as the restore route answers
					return printJSON(cmd.OutOrStdout(), memoryJSON(res.Memory))
				}
				if res.Version == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "unchanged %s (%s): it is already as of version %s\n", res.Memory.Path, res.Memory.ID, args[1])
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s (%s, %d bytes) to version %s: new version %s\n",
					res.Memory.Path, res.Memory.ID, res.Memory.SizeBytes, args[1], res.Version.ID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the memory as JSON, as the HTTP API answers a restore (the backup's manifest for a backup)")
	return cmd
}

// memoryRef finds a memory by id (mem_…), or by path: the memory at it, or the last one there.
// store is how the command line names s.
func memoryRef(cmd *cobra.Command, s storeAPI, store, ref string) (string, error) {
	if strings.HasPrefix(ref, gitstore.MemoryPrefix) {
		return ref, nil
	}
	return memoryAtPath(cmd, s, store, ref)
}

func newDiffCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff STORE PATH|MEMORY_ID [FROM [TO]]",
		Short: "Show the changes between two versions of a memory, as a unified diff",
		Long: `Prints the unified diff (3 lines of context, as git diff shows it) between two versions of a
memory: FROM and TO are version ids. Without TO it diffs FROM against the memory's current
version; without FROM, it shows the memory's last change. A deletion diffs as empty content.
Prints nothing if the two contents are the same.`,
		Example: `  gitmem diff prefs /style.md
  gitmem diff prefs /style.md memver_01M83RXJE06891D7CSNGD1TFB7
  gitmem diff prefs mem_01M83RXK2EH10MFKXZ50THRDCT memver_01M83RXJE06891D7CSNGD1TFB7 memver_01M83S0C3MCD1N1HRFKTGPFD4W`,
		Args: rangeArgs([]string{"STORE", "PATH|MEMORY_ID"}, "FROM", "TO"),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, to := "", ""
			if len(args) > 2 {
				from = args[2]
			}
			if len(args) > 3 {
				to = args[3]
			}
			if err := folderArg("diff", args[0], "PATH", args[1]); err != nil {
				return err
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				id, err := memoryRef(cmd, s, args[0], args[1])
				if err != nil {
					return err
				}
				d, err := s.DiffMemory(cmd.Context(), id, from, to)
				if err != nil {
					return err
				}
				if asJSON {
					out := map[string]any{"type": "memory_diff", "memory_id": d.MemoryID, "from": nilIfEmpty(d.From.ID),
						"to": d.To.ID, "from_path": nilIfEmpty(d.From.Path), "to_path": d.To.Path, "diff": d.Diff}
					return printJSON(cmd.OutOrStdout(), out)
				}
				// Its lines are what the memory's writers chose: shown escaped, as a proposal's.
				_, err = io.WriteString(cmd.OutOrStdout(), colorDiff(shownText(d.Diff), useColor(cmd.OutOrStdout())))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the diff as JSON, as the HTTP API answers it")
	return cmd
}

func newBlameCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "blame STORE PATH|MEMORY_ID",
		Short: "Show, for each line of a memory, the version that last changed it",
		Long: `Prints each line of the memory's current content with the version that last changed it, who
made that version (an API key, a session, or a person) and when, as git blame does for a file.
The memory is followed through its renames.`,
		Example: `  gitmem blame prefs /style.md
  gitmem blame prefs /style.md --json`,
		Args: exactArgs("STORE", "PATH|MEMORY_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := folderArg("blame", args[0], "PATH", args[1]); err != nil {
				return err
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				var id string
				if strings.HasPrefix(args[1], gitstore.MemoryPrefix) {
					id = args[1]
				} else {
					m, err := s.GetByPath(cmd.Context(), args[1], false)
					if err != nil {
						return notFoundHint(cmd.Context(), s, args[0], args[1], err)
					}
					id = m.ID
				}
				lines, err := s.Blame(cmd.Context(), id)
				if err != nil {
					return err
				}
				if asJSON {
					out := make([]any, len(lines))
					for i, l := range lines {
						v := versionJSON(l.Version)
						out[i] = map[string]any{"line": l.Line, "text": l.Text, "version_id": l.Version.ID,
							"created_by": v["created_by"], "session_id": nilIfEmpty(l.Version.CreatedBy.SessionID()),
							"created_at": v["created_at"]}
					}
					return printJSON(cmd.OutOrStdout(), map[string]any{"type": "memory_blame", "memory_id": id, "lines": out})
				}
				by := make([]string, len(lines))
				width, numWidth := 0, len(fmt.Sprint(len(lines)))
				for i, l := range lines {
					by[i] = shown(l.Version.CreatedBy.ID)
					if a := l.Version.CreatedBy; a.Type == gitstore.UserActor && a.Name != "" {
						by[i] = shown(a.Name) // as git blame names the author; a pushed commit's
					}
					width = max(width, len(by[i]))
				}
				w := cmd.OutOrStdout()
				for i, l := range lines {
					fmt.Fprintf(w, "%s (%-*s %s %*d) %s\n", l.Version.ID, width, by[i],
						l.Version.CreatedAt.Local().Format(time.DateTime), numWidth, l.Line, shownText(l.Text))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the lines as JSON, as the HTTP API answers them")
	return cmd
}

// colorDiff colors a unified diff as git does on a terminal: headers bold, hunks cyan,
// removed lines red, added lines green.
func colorDiff(diff string, color bool) string {
	if !color || diff == "" {
		return diff
	}
	lines := strings.SplitAfter(diff, "\n")
	for i, l := range lines {
		code := ""
		switch {
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "+++ "):
			code = "1"
		case strings.HasPrefix(l, "@@"):
			code = "36"
		case strings.HasPrefix(l, "-"):
			code = "31"
		case strings.HasPrefix(l, "+"):
			code = "32"
		}
		if code != "" {
			body, nl := strings.CutSuffix(l, "\n")
			lines[i] = "\033[" + code + "m" + body + "\033[0m"
			if nl {
				lines[i] += "\n"
			}
		}
	}
	return strings.Join(lines, "")
}
