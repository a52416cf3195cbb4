package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
)

func init() {
	register(newPutCmd)
	register(newCatCmd)
	register(newRmCmd)
	register(newMvCmd)
	register(newLsCmd)
}

func newPutCmd(a *app) *cobra.Command {
	var ifAbsent, asJSON bool
	var ifSHA string
	cmd := &cobra.Command{
		Use:   "put STORE PATH [FILE|-]",
		Short: "Write a memory: create it, or replace its content",
		Long: `Writes the content of FILE (or standard input, for "-" or no FILE) to the memory at PATH,
creating it or replacing what is there. Each write that changes something is one commit.`,
		Example: `  gitmem put prefs /style.md style.md
  echo "Prefers tabs" | gitmem put prefs /style.md
  gitmem put prefs /style.md new.md --if-sha 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824`,
		Args: rangeArgs([]string{"STORE", "PATH"}, "FILE|-"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := folderArg("put", args[0], "PATH", args[1]); err != nil {
				return err
			}
			if ifAbsent && ifSHA != "" {
				return usageError{fmt.Errorf("--if-absent and --if-sha exclude each other")}
			}
			if err := checkIfSHA(ifSHA); err != nil {
				return err
			}
			content, err := readContent(cmd, args[2:])
			if errors.Is(err, fs.ErrNotExist) && len(args) == 3 {
				return noContentFile(args)
			}
			if err != nil {
				return err
			}
			in := gitstore.WriteInput{Path: args[1], Content: content, Actor: cliActor()}
			if ifAbsent {
				in.Precondition = &gitstore.Precondition{Type: gitstore.NotExists}
			} else if ifSHA != "" {
				in.Precondition = &gitstore.Precondition{Type: gitstore.ContentSHA256, ContentSHA256: ifSHA}
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				res, err := s.Write(cmd.Context(), in)
				if err != nil {
					return err
				}
				redactedNote(cmd, res.Redacted)
				if asJSON { // as the API answers a write
					return printJSON(cmd.OutOrStdout(), memoryJSON(res.Memory))
				}
				switch {
				case res.Version == nil && res.Proposal != "":
					fmt.Fprintf(cmd.OutOrStdout(), "proposed %s%s\n", res.Memory.Path, inProposal(args[0], res))
				case res.Version == nil:
					fmt.Fprintf(cmd.OutOrStdout(), "unchanged %s (%s)\n", res.Memory.Path, res.Memory.ID)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, %d bytes, version %s)%s\n", res.Version.Operation,
						res.Memory.Path, res.Memory.ID, res.Memory.SizeBytes, res.Version.ID, inProposal(args[0], res))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&ifAbsent, "if-absent", false, "create only: fail if the path is taken")
	cmd.Flags().StringVar(&ifSHA, "if-sha", "", "replace only if the current content has this sha256")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the memory as JSON, as the HTTP API answers a write")
	return cmd
}

// checkIfSHA refuses an --if-sha that is not a sha256 before anything is sent, with the
// flag's name (the store's own check names the API's field, which the command line lacks).
func checkIfSHA(h string) error {
	if h == "" {
		return nil
	}
	if err := gitstore.ValidateSHA256("--if-sha", h); err != nil {
		return usageError{fmt.Errorf("%w (the sha256 of the current content: gitmem cat --json shows it as content_sha256)", err)}
	}
	return nil
}

// inProposal is what the line of a write that went to a proposal (res.Proposal) adds: where
// it is, and how to see it; "" for a write to main.
func inProposal(store string, res gitstore.WriteResult) string {
	if res.Proposal == "" {
		return ""
	}
	return fmt.Sprintf(" in proposal %s, not in main until a person approves it (gitmem proposals show %s %s)", res.Proposal, store, res.Proposal)
}

// noContentFile is the usage error of a put whose FILE (args[2]) does not exist: most often
// the content itself, given where the name of a file to read it from goes.
func noContentFile(args []string) error {
	echo := "echo " + quoteArg(args[2])
	if len(args[2]) > 60 || strings.ContainsAny(args[2], "\n\r") {
		echo = "echo CONTENT"
	}
	return usageError{fmt.Errorf("no file %q: FILE names a file to read the content from; to give the content itself, pipe it in: %s | gitmem put %s %s",
		args[2], echo, quoteArg(args[0]), quoteArg(args[1]))}
}

func readContent(cmd *cobra.Command, args []string) (string, error) {
	var r io.Reader = cmd.InOrStdin()
	if f, ok := r.(*os.File); ok && isTerminal(f) && (len(args) == 0 || args[0] == "-") {
		fmt.Fprintln(cmd.ErrOrStderr(), "reading the content from standard input; end it with Ctrl-D (or give a FILE)")
	}
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return "", err
		}
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			f.Close()
			return "", usageError{fmt.Errorf("FILE %s is a folder, not a file to read the content from", args[0])}
		}
		defer f.Close()
		r = f
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() { // a read of a terminal does not end at Ctrl-C: the context does
		b, err := io.ReadAll(io.LimitReader(r, gitstore.MaxContentBytes+1))
		done <- read{b, err}
	}()
	var got read
	select {
	case got = <-done:
	case <-cmd.Context().Done():
		return "", cmd.Context().Err()
	}
	if got.err != nil {
		return "", fmt.Errorf("read content: %w", got.err)
	}
	if len(got.b) > gitstore.MaxContentBytes { // read no further: its size is unknown
		return "", invalidf("content is over the limit of %d bytes", gitstore.MaxContentBytes)
	}
	return string(got.b), nil
}

func newCatCmd(a *app) *cobra.Command {
	var at string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cat STORE PATH",
		Short: "Print the content of a memory",
		Example: `  gitmem cat prefs /style.md
  gitmem cat prefs /style.md --at 2025-01-02T15:04:05Z`,
		Args: exactArgs("STORE", "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := folderArg("cat", args[0], "PATH", args[1]); err != nil {
				return err
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				rd, err := s.ReaderAt(cmd.Context(), at)
				if err != nil {
					return err
				}
				m, err := getMemoryIn(cmd.Context(), rd, args[1])
				if err != nil {
					return notFoundHint(cmd.Context(), rd, args[0], args[1], err)
				}
				if asJSON { // as the API answers a read with view=full
					out := memoryJSON(m)
					out["content"] = *m.Content
					return printJSON(cmd.OutOrStdout(), out)
				}
				_, err = io.WriteString(cmd.OutOrStdout(), *m.Content)
				return err
			})
		},
	}
	atVar(cmd, &at, atUsage)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the memory with its content as JSON, as the API answers a read")
	return cmd
}

func newRmCmd(a *app) *cobra.Command {
	var ifSHA string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rm STORE PATH",
		Short: "Delete a memory (its history stays)",
		Args:  exactArgs("STORE", "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkIfSHA(ifSHA); err != nil {
				return err
			}
			if err := folderArg("rm", args[0], "PATH", args[1]); err != nil {
				return err
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				v, err := s.Delete(cmd.Context(), gitstore.DeleteInput{Path: args[1], ExpectedSHA256: ifSHA, Actor: cliActor()})
				if err != nil {
					return notFoundHint(cmd.Context(), s, args[0], args[1], err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), versionJSON(v))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s (%s, version %s)\n", v.Path, v.MemoryID, v.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&ifSHA, "if-sha", "", "delete only if the current content has this sha256")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deleting version as JSON")
	return cmd
}

func newMvCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "mv STORE FROM TO",
		Short:   "Rename a memory; it keeps its id and history",
		Example: `  gitmem mv prefs /style.md /preferences/style.md`,
		Args:    exactArgs("STORE", "FROM", "TO"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := folderArg("mv", args[0], "FROM", args[1]); err != nil {
				return err
			}
			if err := moveTarget(args[0], args[1], args[2]); err != nil {
				return err
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				to := args[2]
				res, err := s.UpdateMemory(cmd.Context(), gitstore.UpdateInput{FromPath: args[1], Path: &to, Actor: cliActor()})
				if err != nil {
					return notFoundHint(cmd.Context(), s, args[0], args[1], err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), memoryJSON(res.Memory))
				}
				switch {
				case res.Version == nil && res.Proposal != "":
					fmt.Fprintf(cmd.OutOrStdout(), "proposed renaming %s to %s%s\n", args[1], to, inProposal(args[0], res))
				case res.Version == nil:
					fmt.Fprintf(cmd.OutOrStdout(), "unchanged %s (%s)\n", res.Memory.Path, res.Memory.ID)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "renamed %s to %s (%s)%s\n", args[1], res.Memory.Path, res.Memory.ID, inProposal(args[0], res))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the memory as JSON, as the HTTP API answers a write")
	return cmd
}

func newLsCmd(a *app) *cobra.Command {
	var recursive, long, asJSON bool
	var at string
	cmd := &cobra.Command{
		Use:   "ls STORE [PREFIX]",
		Short: "List memories below a prefix (one level; -R for all)",
		Example: `  gitmem ls prefs
  gitmem ls prefs /projects/ -R --long`,
		Args: rangeArgs([]string{"STORE"}, "PREFIX"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := gitstore.ListOptions{Depth: 1}
			if recursive {
				opts.Depth = 0
			}
			if len(args) == 2 {
				if !strings.HasPrefix(args[1], "/") { // the store's message names the API's path_prefix
					return usageError{fmt.Errorf("PREFIX %q must start with /, as in %s", args[1], quoteArg("/"+args[1]))}
				}
				opts.PathPrefix = args[1]
				if !strings.HasSuffix(opts.PathPrefix, "/") {
					opts.PathPrefix += "/"
				}
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				rd, err := s.ReaderAt(cmd.Context(), at)
				if err != nil {
					return err
				}
				items, err := allMemories(cmd.Context(), rd, opts)
				if err != nil {
					return err
				}
				if len(items) == 0 && !asJSON && !a.quiet { // stdout stays empty, for scripts
					fmt.Fprintln(cmd.ErrOrStderr(), emptyListing(cmd, rd, args))
				}
				if asJSON {
					out := make([]any, len(items))
					for i, it := range items {
						if it.Memory == nil {
							out[i] = map[string]any{"type": "memory_prefix", "path": it.Prefix}
						} else {
							out[i] = memoryJSON(*it.Memory)
						}
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				for _, it := range items {
					switch {
					case it.Memory == nil && long:
						fmt.Fprintf(tw, "-\t-\t%s\t-\n", it.Prefix)
					case it.Memory == nil:
						fmt.Fprintln(tw, it.Prefix)
					case long:
						m := it.Memory
						fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.SizeBytes, m.UpdatedAt.Local().Format(time.DateTime), m.Path, m.ID)
					default:
						fmt.Fprintln(tw, it.Memory.Path)
					}
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "R", false, "list every memory below the prefix")
	cmd.Flags().BoolVarP(&long, "long", "l", false, "show size, update time and id")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the listing as JSON")
	atVar(cmd, &at, atUsage)
	return cmd
}

// memoryJSON is a memory as the API shows it, without content.
func memoryJSON(m gitstore.Memory) map[string]any {
	return map[string]any{"type": "memory", "id": m.ID, "memory_store_id": m.StoreID,
		"memory_version_id": m.VersionID, "path": m.Path, "content_sha256": m.ContentSHA256,
		"content_size_bytes": m.SizeBytes, "created_at": m.CreatedAt.UTC().Format(timeFormat),
		"updated_at": m.UpdatedAt.UTC().Format(timeFormat)}
}
