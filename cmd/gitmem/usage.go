package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError is an error in how the command was called.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// markUsage makes the argument and flag errors of cmd and its subcommands usage errors.
func markUsage(cmd *cobra.Command) {
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if s := flagSuggestions(c, name); len(s) > 0 {
				err = fmt.Errorf("%w; did you mean --%s?", err, strings.Join(s, " or --"))
			}
		} else if s := shorthandSuggestion(c, err.Error()); s != "" {
			err = fmt.Errorf("%w; did you mean %s?", err, s)
		}
		return usageError{err}
	})
	if cmd.HasParent() && cmd.HasSubCommands() && !cmd.Runnable() {
		// A group (gitmem stores): cobra prints its help for any word after it, and
		// exits 0, also for a typo of a subcommand.
		cmd.RunE = func(c *cobra.Command, a []string) error {
			if len(a) == 0 {
				return c.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", a[0], c.CommandPath())
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2 // as cobra sets it for the root
			}
			if s := c.SuggestionsFor(a[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return usageError{fmt.Errorf("%s (%s --help lists them)", msg, c.CommandPath())}
		}
	}
	for _, sub := range cmd.Commands() {
		markUsage(sub)
	}
}

// shorthandSuggestion is, for pflag's error about an unknown one-letter flag (-r), the flag
// of c whose shorthand is the same letter in the other case (-R), if any.
func shorthandSuggestion(c *cobra.Command, msg string) string {
	rest, ok := strings.CutPrefix(msg, "unknown shorthand flag: '")
	if !ok || len(rest) < 2 || rest[1] != '\'' {
		return ""
	}
	other := strings.ToUpper(rest[:1])
	if other == rest[:1] {
		other = strings.ToLower(rest[:1])
	}
	if f := c.Flags().ShorthandLookup(other); f != nil && !f.Hidden {
		return "-" + other + " (--" + f.Name + ")"
	}
	if name, ok := shorthandAliases[rest[:1]]; ok {
		if f := c.Flags().Lookup(name); f != nil && !f.Hidden {
			return "--" + name
		}
	}
	return ""
}

// shorthandAliases are the one-letter flags that other servers give to a flag of gitmem's
// (gitmem serve -p 8000).
var shorthandAliases = map[string]string{"p": "addr"}

// flagSuggestions are the flags of c whose names are within two edits of name, or begin
// with it, as cobra suggests commands (it suggests no flags).
func flagSuggestions(c *cobra.Command, name string) []string {
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (editDistance(name, f.Name) <= 2 || strings.HasPrefix(f.Name, name) || flagAliases[name] == f.Name) {
			out = append(out, f.Name)
		}
	})
	return out
}

// flagAliases are the names that other servers and tools give to a flag of gitmem's.
var flagAliases = map[string]string{"port": "addr", "host": "addr", "listen": "addr", "bind": "addr",
	"data-dir": "data", "datadir": "data", "dir": "data"}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// exactArgs is cobra.ExactArgs with a message that names the missing arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		return fmt.Errorf("%s takes %d argument(s): %s (got %d); see %q", cmd.CommandPath(), len(names),
			strings.Join(names, " "), len(args), cmd.CommandPath()+" --help")
	}
}

// rangeArgs accepts the required arguments and then up to len(optional) more.
func rangeArgs(required []string, optional ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= len(required) && len(args) <= len(required)+len(optional) {
			return nil
		}
		usage := strings.Join(required, " ")
		for _, o := range optional {
			usage += " [" + o + "]"
		}
		return fmt.Errorf("usage: %s %s (got %d arguments); see %q", cmd.CommandPath(), usage, len(args), cmd.CommandPath()+" --help")
	}
}
