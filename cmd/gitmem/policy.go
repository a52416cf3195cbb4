package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets"
)

// policyFlags are the flags that set a store's hygiene policy, on stores create and set.
type policyFlags struct {
	secrets, expireAfter string
	maxMemories          int
	maxBytes             int64
	review, reviewExempt []string
}

func (p *policyFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.secrets, "secrets", "", "what a write holding a secret does: reject (fail, naming kind and place; a new store's default), redact (store a marker in its place) or off")
	fs.StringVar(&p.expireAfter, "expire-after", "", `delete memories nobody read or wrote for this long, as restorable versions (e.g. 720h, 30d; "never", a new store's default, turns it off)`)
	fs.IntVar(&p.maxMemories, "max-memories", 0, "the most memories the store may hold (0: no limit)")
	fs.Int64Var(&p.maxBytes, "max-bytes", 0, "the most content bytes the store may hold, all memories together (0: no limit)")
	fs.StringArrayVar(&p.review, "review", nil, `a folder (such as /team/) whose memories change only through review: others' writes there become proposals (repeatable; --review "" for none)`)
	fs.StringArrayVar(&p.reviewExempt, "review-exempt", nil, `an API key id that may change the reviewed folders directly (repeatable; --review-exempt "" for none)`)
}

// patch is the change the flags that were given make; nil if none was.
func (p *policyFlags) patch(cmd *cobra.Command) (*gitstore.PolicyPatch, error) {
	var pp gitstore.PolicyPatch
	changed := cmd.Flags().Changed
	if changed("secrets") {
		v := gitstore.SecretsPolicy(p.secrets)
		pp.Secrets = &v
	}
	if changed("expire-after") {
		var d gitstore.Duration
		if p.expireAfter != "never" {
			var err error
			if d, err = gitstore.ParseDuration(p.expireAfter); err != nil {
				return nil, fmt.Errorf("--expire-after: %w", err)
			}
		}
		pp.ExpireAfter = &d
	}
	if changed("max-memories") {
		pp.MaxMemories = &p.maxMemories
	}
	if changed("max-bytes") {
		pp.MaxBytes = &p.maxBytes
	}
	nonEmpty := func(l []string) *[]string {
		out := []string{}
		for _, s := range l {
			if s != "" {
				out = append(out, s)
			}
		}
		return &out
	}
	if changed("review") {
		pp.ReviewPaths = nonEmpty(p.review)
	}
	if changed("review-exempt") {
		pp.ReviewExempt = nonEmpty(p.reviewExempt)
	}
	if pp == (gitstore.PolicyPatch{}) {
		return nil, nil
	}
	return &pp, nil
}

func newStoresSetCmd(a *app) *cobra.Command {
	var flags policyFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "set STORE",
		Short: "Set a store's hygiene policy: secrets, expiry, quotas",
		Long: `Sets what the store does with secrets in writes, when unused memories expire, and how
much it may hold. The policy is kept in the store's .gitmem/store.json, so it travels with
clones and sync; flags not given are left as they are.`,
		Example: `  gitmem stores set notes --secrets redact --expire-after 30d
  gitmem stores set notes --max-memories 1000 --max-bytes 10485760
  gitmem stores set notes --expire-after never --max-bytes 0`,
		Args: exactArgs("STORE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			pp, err := flags.patch(cmd)
			if err != nil {
				return err
			}
			if pp == nil {
				return usageError{fmt.Errorf("nothing to set: give --secrets, --expire-after, --max-memories or --max-bytes")}
			}
			return a.withStoreAPI(cmd.Context(), args[0], func(s storeAPI) error {
				info, err := s.UpdateInfo(cmd.Context(), gitstore.StorePatch{Policy: pp, Actor: cliActor()})
				if err != nil {
					return err
				}
				u, err := s.Usage(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), storeWithPolicyJSON(info, u))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "store %s (%s): %s\n", info.ID, info.Name, describePolicy(info.Policy, u))
				return nil
			})
		},
	}
	flags.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the store with its policy and usage as JSON")
	return cmd
}

// describePolicy says a policy in one line, with the usage against its quotas.
func describePolicy(p gitstore.Policy, u gitstore.Usage) string {
	expire := "never"
	if p.ExpireAfter != 0 {
		expire = "after " + p.ExpireAfter.String() + " unused"
	}
	s := fmt.Sprintf("secrets %s, expire %s, memories %s, bytes %s", p.Secrets.Effective(), expire,
		ofLimit(int64(u.Memories), int64(p.MaxMemories)), ofLimit(u.Bytes, p.MaxBytes))
	if len(p.ReviewPaths) > 0 {
		s += ", review " + strings.Join(p.ReviewPaths, " ")
		if len(p.ReviewExempt) > 0 {
			s += " (directly: " + strings.Join(p.ReviewExempt, " ") + ")"
		}
	}
	return s
}

// quotas says a policy's quotas: "at most 1000 memories, 10485760 bytes", or "none".
func quotas(p gitstore.Policy) string {
	var parts []string
	if p.MaxMemories > 0 {
		parts = append(parts, fmt.Sprintf("%d memories", p.MaxMemories))
	}
	if p.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes", p.MaxBytes))
	}
	if len(parts) == 0 {
		return "none"
	}
	return "at most " + strings.Join(parts, ", ")
}

func ofLimit(n, limit int64) string {
	if limit == 0 {
		return fmt.Sprintf("%d (no limit)", n)
	}
	return fmt.Sprintf("%d of %d", n, limit)
}

// redactedNote tells on stderr which secrets a write had replaced by markers.
func redactedNote(cmd *cobra.Command, fs []secrets.Finding) {
	if len(fs) == 0 {
		return
	}
	kinds := make([]string, len(fs))
	for i, f := range fs {
		kinds[i] = f.String()
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "gitmem: redacted %d secret(s) before saving (the store's secrets policy): %s\n", len(fs), strings.Join(kinds, "; "))
}

// policyJSON is a policy and usage as the API shows them.
func policyJSON(p gitstore.Policy, u gitstore.Usage) (map[string]any, map[string]any) {
	pol := map[string]any{"secrets": p.Secrets.Effective(), "expire_after": nil, "max_memories": nil, "max_bytes": nil}
	if p.ExpireAfter != 0 {
		pol["expire_after"] = p.ExpireAfter.String()
	}
	if p.MaxMemories != 0 {
		pol["max_memories"] = p.MaxMemories
	}
	if p.MaxBytes != 0 {
		pol["max_bytes"] = p.MaxBytes
	}
	if len(p.ReviewPaths) > 0 {
		pol["review_paths"] = p.ReviewPaths
	}
	if len(p.ReviewExempt) > 0 {
		pol["review_exempt"] = p.ReviewExempt
	}
	return pol, map[string]any{"memories": u.Memories, "bytes": u.Bytes}
}

// storeWithPolicyJSON is a store with its policy and usage, as stores show --json has them.
func storeWithPolicyJSON(info gitstore.StoreInfo, u gitstore.Usage) map[string]any {
	v := storeJSON(info)
	v["policy"], v["usage"] = policyJSON(info.Policy, u)
	return v
}
