package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
)

func init() { register(newKeysCmd) }

func newKeysCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys",
		Long: `API keys authenticate HTTP requests (x-api-key or Authorization: Bearer). Once a key exists,
every request needs one. Secrets are shown once and stored only as their SHA-256. A running
server picks up created and revoked keys without a restart. Once a running server has seen a
key, it requires keys until it stops, even if every key is revoked.`,
	}
	cmd.AddCommand(newKeysCreateCmd(a), newKeysListCmd(a), newKeysRevokeCmd(a))
	return cmd
}

func newKeysCreateCmd(a *app) *cobra.Command {
	var name, access, store string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create --name NAME [--access read_write|read_only|propose] [--store STORE]",
		Short: "Create an API key and print its secret, once",
		Example: `  gitmem keys create --name laptop
  gitmem keys create --name dashboard --access read_only --store notes`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return usageError{errors.New("missing --name NAME: a key needs a name, to tell it apart later")}
			}
			if err := checkAccess(access); err != nil {
				return err
			}
			if store != "" && !strings.HasPrefix(store, gitstore.StorePrefix) {
				// A name: the data directory, or the server that holds it, says which store.
				ref := store
				err := a.withTarget(cmd.Context(), func(t target) error {
					id, err := resolveStore(cmd.Context(), t.lister(), store)
					store = id
					return err
				})
				if errors.Is(err, client.ErrAuth) {
					// The key file is this command's, but the name is the server's to look up.
					return fmt.Errorf("--store %q is a store's name, which the running server looks up: %w; or give the store's id (%s...)", ref, err, gitstore.StorePrefix)
				}
				if err != nil {
					return err
				}
			}
			keys, err := apikeys.Open(a.dataDir)
			if err != nil {
				return err
			}
			hadKey, err := keys.AnyActive()
			if err != nil {
				return err
			}
			key, secret, err := keys.Create(name, apikeys.Access(access), store)
			if err != nil {
				return err
			}
			if !hadKey && !a.quiet {
				defer fmt.Fprint(cmd.ErrOrStderr(), "note: this is the first API key, so gitmem serve (a running one too) now wants a key on every request:\n"+
					"x-api-key or Authorization: Bearer over HTTP, GITMEM_API_KEY for the CLI, the password for git, the UI's sign-in page.\n")
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, map[string]any{"type": "api_key", "id": key.ID, "name": key.Name,
					"access": key.Access, "memory_store_id": nilIfEmpty(key.StoreID), "secret": secret,
					"created_at": key.CreatedAt.UTC().Format(timeFormat)})
			}
			if a.quiet { // what was asked for, alone: S=$(gitmem keys create --name ci -q)
				fmt.Fprintln(out, secret)
				return nil
			}
			fmt.Fprintf(out, "created key %s (%s, %s", key.ID, key.Name, key.Access)
			if key.StoreID != "" {
				fmt.Fprintf(out, ", store %s", key.StoreID)
			}
			fmt.Fprintf(out, ")\n\n  %s\n\nThis secret is shown only now: keep it somewhere safe.\n", secret)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a name to tell the key apart (required)")
	cmd.Flags().StringVar(&access, "access", string(apikeys.ReadWrite), "read_write, read_only, or propose (memory writes go to a proposal for review)")
	cmd.Flags().StringVar(&store, "store", "", "limit the key to this store (id or name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the key as JSON, its secret in the field secret (for scripts)")
	return cmd
}

// keyJSON is a key as scripts read it: never its secret, only the first characters (hint).
func keyJSON(k apikeys.Key) map[string]any {
	var revoked any
	if k.RevokedAt != nil {
		revoked = k.RevokedAt.UTC().Format(timeFormat)
	}
	return map[string]any{"type": "api_key", "id": k.ID, "name": k.Name, "access": k.Access,
		"memory_store_id": nilIfEmpty(k.StoreID), "secret_hint": k.Hint,
		"created_at": k.CreatedAt.UTC().Format(timeFormat), "revoked_at": revoked}
}

func newKeysListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List API keys (never their secrets)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := apikeys.Open(a.dataDir)
			if err != nil {
				return err
			}
			list, err := keys.List()
			if err != nil {
				return err
			}
			if asJSON {
				data := []any{}
				for _, k := range list {
					data = append(data, keyJSON(k))
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"data": data})
			}
			if len(list) == 0 {
				a.sayNone(cmd, "no API keys: gitmem serve runs without authentication, on loopback only")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tACCESS\tSTORE\tSECRET\tCREATED\tSTATE")
			for _, k := range list {
				state, storeID := "active", k.StoreID
				if !k.Active() {
					state = "revoked " + k.RevokedAt.Local().Format(time.DateTime)
				}
				if storeID == "" {
					storeID = "all"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s…\t%s\t%s\n", k.ID, k.Name, k.Access, storeID, k.Hint,
					k.CreatedAt.Local().Format(time.DateTime), state)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the keys as JSON (without secrets)")
	return cmd
}

func newKeysRevokeCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "revoke ID|NAME",
		Short: "Revoke an API key; requests with it fail from now on",
		Args:  exactArgs("ID|NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := apikeys.Open(a.dataDir)
			if err != nil {
				return err
			}
			k, err := keys.Revoke(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), keyJSON(k)); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "revoked key %s (%s)\n", k.ID, k.Name)
			}
			if anyKey, err := keys.AnyActive(); err == nil && !anyKey {
				fmt.Fprint(cmd.ErrOrStderr(), "warning: no active API key is left. A running gitmem serve keeps requiring keys: it refuses every request (401)\n"+
					"until a key is created with \"gitmem keys create\". A gitmem serve restarted on a loopback address serves\n"+
					"without authentication; on any other address it refuses to start.\n")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the revoked key as JSON")
	return cmd
}

// checkAccess is the usage error of a --access that names no access level, with the level
// it most likely meant ("readonly", "Read-Only" for read_only).
func checkAccess(access string) error {
	if apikeys.Access(access).Valid() {
		return nil
	}
	squash := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
	}
	for _, l := range apikeys.Accesses {
		if squash(access) == squash(string(l)) {
			return usageError{fmt.Errorf("--access %q is not an access level: did you mean --access %s?", access, l)}
		}
	}
	return usageError{fmt.Errorf("--access %q is not an access level: give %s", access, apikeys.AccessNames())}
}
