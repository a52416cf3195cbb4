package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/spf13/cobra"
)

const atUsage = "read the store as of a time (2026-01-02T15:04:05Z, 2026-01-02, today, yesterday, 1h, 2d) or a commit hash (at least 7 hex digits)"

// getMemoryIn finds a memory by path, or by id for arguments that look like one.
func getMemoryIn(ctx context.Context, rd gitstore.MemoryReader, ref string) (gitstore.Memory, error) {
	if strings.HasPrefix(ref, gitstore.MemoryPrefix) {
		return rd.Get(ctx, ref, true)
	}
	return rd.GetByPath(ctx, ref, true)
}

// atVar defines the --at flag of cmd, a read of the store that is its first argument. Its
// form is checked as the flag is parsed: a wrong one is a usage error that names --at, where
// the store's own error names the API's ?at=. A hash that names no commit, which only the
// read can tell, is put in the CLI's words (atError) for every such command here, once.
func atVar(cmd *cobra.Command, v *string, usage string) {
	cmd.Flags().Var(atValue{v}, "at", usage)
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return atError(args[0], *v, run(c, args))
	}
}

// atValue is the value of --at: a time or a commit hash, or "" for the store as it is.
type atValue struct{ v *string }

func (a atValue) String() string {
	if a.v == nil {
		return ""
	}
	return *a.v
}

func (a atValue) Type() string { return "string" } // as a StringVar, for help and GetString

func (a atValue) Set(s string) error {
	if s != "" && !gitstore.IsAtForm(s) {
		return usageError{fmt.Errorf("--at %q must be %s", s, gitstore.AtFormHint)}
	}
	*a.v = s
	return nil
}

// atError is err in the CLI's words where it is the store's refusal of an --at of a commit
// hash's form that names no commit of the store's history (said by the rule, alike locally
// and through a server, whose message names the API's ?at=): a usage error that names --at,
// as one of no form is, with what to pass instead. Any other error is returned as it is.
func atError(store, at string, err error) error {
	if at == "" || gitstore.ErrorRule(err) != gitstore.RuleAtCommit {
		return err
	}
	return usageError{fmt.Errorf(`--at %q names no commit of the history of %s: pass one that "git log --first-parent main" shows in the store's repository, or a time (such as a version's in "gitmem log %s")`,
		at, store, quoteArg(store))}
}
