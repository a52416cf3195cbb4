package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gitmem/gitmem/gitstore"
)

func init() { register(newStoresCmd) }

func newStoresCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stores",
		Short: "Create, list, show, set the policy of, archive and delete memory stores",
		Long: `A memory store is a bare git repository under DATA/stores/. Commands that take a store
accept its id (memstore_...) or its name, when no other store has that name.`,
	}
	cmd.AddCommand(newStoresCreateCmd(a), newStoresListCmd(a), newStoresShowCmd(a), newStoresSetCmd(a),
		newStoresArchiveCmd(a), newStoresDeleteCmd(a))
	return cmd
}

func newStoresCreateCmd(a *app) *cobra.Command {
	var description string
	var metadata []string
	var asJSON bool
	var policy policyFlags
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a memory store",
		Example: `  gitmem stores create "User preferences" --description "What the user likes" --metadata team=core
  gitmem stores create scratch --secrets redact --expire-after 30d --max-memories 500`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			meta, err := parseMetadata(metadata)
			if err != nil {
				return err
			}
			pp, err := policy.patch(cmd)
			if err != nil {
				return err
			}
			return a.withTarget(cmd.Context(), func(t target) error {
				s, err := t.createStore(cmd.Context(), gitstore.CreateStoreInput{
					Name: args[0], Description: description, Metadata: meta, Policy: gitstore.ApplyPolicyPatch(gitstore.Policy{}, pp), Actor: cliActor()})
				if err != nil {
					return err
				}
				info, err := s.Info(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), storeJSON(info))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "created store %s (%s)\n", info.ID, info.Name)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&description, "description", "", "what the store is for")
	cmd.Flags().StringArrayVar(&metadata, "metadata", nil, "a key=value pair (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the store as JSON")
	policy.register(cmd.Flags())
	return cmd
}

func parseMetadata(pairs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("--metadata %q: want key=value", p)
		}
		m[k] = v
	}
	return m, nil
}

func newStoresListCmd(a *app) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List memory stores, newest first",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withTarget(cmd.Context(), func(t target) error {
				stores, err := allStores(cmd.Context(), t.lister(), all)
				if err != nil {
					return err
				}
				if asJSON {
					out := make([]any, len(stores))
					for i, s := range stores {
						out[i] = storeJSON(s)
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				if len(stores) == 0 {
					a.sayNone(cmd, "no stores yet; create one with: gitmem stores create NAME")
					return nil
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tCREATED\tSTATE")
				for _, s := range stores {
					state := "active"
					if s.ArchivedAt != nil {
						state = "archived"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.Name, s.CreatedAt.Local().Format(time.DateTime), state)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include archived stores")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the stores as JSON")
	return cmd
}

func newStoresShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show STORE",
		Short: "Show a memory store's metadata, policy, size and location",
		Args:  exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				info, err := s.Info(cmd.Context())
				if err != nil {
					return err
				}
				u, err := s.Usage(cmd.Context())
				if err != nil {
					return err
				}
				h, err := head(cmd.Context(), s)
				if err != nil {
					return err
				}
				if asJSON {
					v := storeWithPolicyJSON(info, u)
					v["memory_count"], v["content_bytes"], v["repository"], v["head"] = u.Memories, u.Bytes, repository(s), h
					return printJSON(cmd.OutOrStdout(), v)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "id\t%s\n", info.ID)
				fmt.Fprintf(tw, "name\t%s\n", info.Name)
				fmt.Fprintf(tw, "description\t%s\n", info.Description)
				for k, v := range info.Metadata {
					fmt.Fprintf(tw, "metadata\t%s=%s\n", k, v)
				}
				fmt.Fprintf(tw, "created\t%s\n", info.CreatedAt.Local().Format(time.DateTime))
				fmt.Fprintf(tw, "updated\t%s\n", info.UpdatedAt.Local().Format(time.DateTime))
				if info.ArchivedAt != nil {
					fmt.Fprintf(tw, "archived\t%s\n", info.ArchivedAt.Local().Format(time.DateTime))
				}
				fmt.Fprintf(tw, "memories\t%d (%d bytes)\n", u.Memories, u.Bytes)
				fmt.Fprintf(tw, "quotas\t%s\n", quotas(info.Policy))
				fmt.Fprintf(tw, "secrets\t%s\n", info.Policy.Secrets.Effective())
				expire := "never"
				if info.Policy.ExpireAfter != 0 {
					expire = "after " + info.Policy.ExpireAfter.String() + " unread and unwritten"
				}
				fmt.Fprintf(tw, "expire\t%s\n", expire)
				if p := info.Policy; len(p.ReviewPaths) > 0 {
					fmt.Fprintf(tw, "review\t%s", strings.Join(p.ReviewPaths, " "))
					if len(p.ReviewExempt) > 0 {
						fmt.Fprintf(tw, " (directly: %s)", strings.Join(p.ReviewExempt, " "))
					}
					fmt.Fprintln(tw)
				}
				fmt.Fprintf(tw, "repository\t%s\n", repository(s))
				fmt.Fprintf(tw, "head\t%s\n", h)
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the store as JSON")
	return cmd
}

func newStoresArchiveCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "archive STORE",
		Short: "Archive a memory store: it stays readable and refuses every write, for good",
		Args:  exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				info, err := s.Archive(cmd.Context(), cliActor())
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), storeJSON(info))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "archived store %s (%s)\n", info.ID, info.Name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the archived store as JSON")
	return cmd
}

func newStoresDeleteCmd(a *app) *cobra.Command {
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "delete STORE",
		Short: "Delete a memory store with all its memories and history, for good",
		Args:  exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withTarget(cmd.Context(), func(t target) error {
				id, err := resolveStore(cmd.Context(), t.lister(), args[0])
				if err != nil {
					return err
				}
				s, err := t.store(cmd.Context(), id)
				if err != nil {
					return err
				}
				info, err := s.Info(cmd.Context())
				if err != nil {
					return err
				}
				if !yes {
					ok, err := confirm(cmd.Context(), cmd.InOrStdin(), cmd.ErrOrStderr(),
						fmt.Sprintf("Delete store %s (%s) and all its history? Type the store's name to confirm: ", info.ID, info.Name), info.Name)
					if err != nil {
						return err
					}
					if !ok {
						return fmt.Errorf("not deleted")
					}
				}
				if err := t.deleteStore(cmd.Context(), info.ID); err != nil {
					return err
				}
				if asJSON { // as the API answers a delete
					return printJSON(cmd.OutOrStdout(), map[string]any{"type": "memory_store_deleted", "id": info.ID})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted store %s (%s)\n", info.ID, info.Name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deletion as JSON, as the API answers it")
	return cmd
}

// confirm asks on a terminal; without one it refuses, so scripts must say --yes.
// Ctrl-C (which cancels ctx, as gitmem catches the signal) ends the question.
func confirm(ctx context.Context, in io.Reader, out io.Writer, prompt, want string) (bool, error) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, usageError{fmt.Errorf("refusing to delete without confirmation: standard input is not a terminal; pass --yes")}
	}
	fmt.Fprint(out, prompt)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(in).ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(out)
		return false, fmt.Errorf("cancelled")
	case a := <-got:
		if a.err != nil && a.err != io.EOF {
			return false, a.err
		}
		return strings.TrimSpace(a.line) == want, nil
	}
}

// storeJSON is a store as the API shows it.
func storeJSON(s gitstore.StoreInfo) map[string]any {
	var archived any
	if s.ArchivedAt != nil {
		archived = s.ArchivedAt.UTC().Format(timeFormat)
	}
	meta := s.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return map[string]any{"type": "memory_store", "id": s.ID, "name": s.Name, "description": s.Description,
		"metadata": meta, "created_at": s.CreatedAt.UTC().Format(timeFormat),
		"updated_at": s.UpdatedAt.UTC().Format(timeFormat), "archived_at": archived}
}

// timeFormat is RFC 3339 with milliseconds, as the API writes times.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"
