package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError is an error in how a command was called: a missing or an extra argument, an
// unknown command or flag, a flag's value, flags that exclude each other. It exits with
// exitUsage, and main prints it with usageMessage, in the same shape for every command. An
// error that exits 2 as well but is not in the command line (a config file, content over the
// limit, the state of a store) is an invalidf error, printed as it is.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// usageMessage is what gitmem prints after "gitmem: " for err, the error of cmd: a usage
// error as
//
//	COMMAND: WHAT WAS WRONG (usage: USAGE LINE; see "gitmem COMMAND --help")
//
// (the root's without "COMMAND: "), in one line; any other error as it is.
func usageMessage(cmd *cobra.Command, err error) string {
	if cmd == nil || !errors.As(err, new(usageError)) {
		return err.Error()
	}
	msg := err.Error()
	if cmd.HasParent() {
		msg = strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": " + msg
	}
	line := cmd.UseLine()
	if cmd.HasAvailableSubCommands() { // the root, or a group such as gitmem stores
		line = cmd.CommandPath() + " COMMAND [flags]"
	}
	return fmt.Sprintf("%s (usage: %s; see %q)", msg, line, cmd.CommandPath()+" --help")
}

// markUsage makes the argument and flag errors of cmd and its subcommands usage errors.
// The root and each group (gitmem stores) print their help when called alone, and refuse a
// word that names none of their commands: cobra would print the group's help for it and
// exit 0, and the root's error would take three lines.
func markUsage(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if len(a) > 0 {
				return unknownCommand(c, a[0])
			}
			return nil
		}
		cmd.RunE = func(c *cobra.Command, a []string) error { return c.Help() }
	}
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			err := args(c, a)
			if err != nil && !errors.As(err, new(usageError)) {
				err = usageError{err}
			}
			return err
		}
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if bad := badFlagValue(err); bad != nil {
			return bad
		}
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if s := flagSuggestions(c, name); len(s) > 0 {
				err = fmt.Errorf("%w; did you mean --%s?", err, strings.Join(s, " or --"))
			}
		} else if s := shorthandSuggestion(c, err.Error()); s != "" {
			err = fmt.Errorf("%w; did you mean %s?", err, s)
		} else if hint := c.Annotations[dashArgHint]; hint != "" && strings.HasPrefix(err.Error(), "unknown shorthand flag: ") {
			err = fmt.Errorf("%w; %s", err, hint)
		}
		return usageError{err}
	})
	for _, sub := range cmd.Commands() {
		markUsage(sub)
	}
}

// badFlagValue is the usage error, in the CLI's words, of a flag's value that pflag refused
// (nil for any other error): the flag's own if its Set gives a usageError (--at); for a flag
// of a whole number given something else, what it takes (pflag's would be strconv's).
func badFlagValue(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return nil
	}
	var ue usageError
	if errors.As(bad, &ue) {
		return ue
	}
	f := bad.GetFlag()
	if !intFlagTypes[f.Value.Type()] {
		return nil
	}
	v := bad.GetValue()
	if _, perr := strconv.ParseInt(strings.TrimSpace(v), 0, 64); perr == nil {
		return nil // a number that the flag refused (a positive flag's 0): its Set says why
	} else if errors.Is(perr, strconv.ErrRange) {
		return usageError{fmt.Errorf("--%s takes %s, got %s, which is too large", f.Name, numberTaken(f), v)}
	}
	return usageError{fmt.Errorf("--%s takes %s, got %q", f.Name, numberTaken(f), v)}
}

// intFlagTypes are the types, as pflag names them, of flags that take a whole number.
var intFlagTypes = map[string]bool{"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "count": true}

// numberTaken says what number the flag f takes.
func numberTaken(f *pflag.Flag) string {
	if _, ok := f.Value.(positive[int]); ok {
		return "a whole number more than 0"
	}
	return "a whole number"
}

// unknownCommand is the usage error of a word after c (the root or a group) that names none
// of its commands, with the commands it may have meant.
func unknownCommand(c *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q", word)
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // as cobra sets it for the root
	}
	if s := c.SuggestionsFor(word); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{errors.New(msg)}
}

// helpArgs refuses, for gitmem help, a topic that names no command, which cobra answers
// with the root's help on stdout and exit 0.
func helpArgs(c *cobra.Command, args []string) error {
	target, rest, err := c.Root().Find(args)
	if err == nil && len(rest) > 0 && target.HasAvailableSubCommands() {
		err = unknownCommand(target, rest[0])
	}
	return err
}

// dashArgHint is the annotation of a command whose arguments may start with "-" (a search's
// -word): what its unknown one-letter flag, which such an argument is taken for, may have been.
const dashArgHint = "gitmem:dash-arg-hint"

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

// exactArgs accepts exactly the arguments names, as cobra.ExactArgs, with a message that
// names what is missing or extra.
func exactArgs(names ...string) cobra.PositionalArgs { return rangeArgs(names) }

// rangeArgs accepts the required arguments and then up to len(optional) more; any number
// more if the last name ends in "..." (QUERY...). Its errors say which are missing, or
// which are extra.
func rangeArgs(required []string, optional ...string) cobra.PositionalArgs {
	names := append(slices.Clone(required), optional...)
	variadic := len(names) > 0 && strings.HasSuffix(names[len(names)-1], "...")
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(required):
			missing := slices.Clone(required[len(args):])
			missing[len(missing)-1] = strings.TrimSuffix(missing[len(missing)-1], "...")
			return fmt.Errorf("missing %s", joinAnd(missing))
		case len(args) > len(names) && !variadic:
			extra := args[len(names):]
			quoted := make([]string, len(extra))
			for i, a := range extra {
				quoted[i] = strconv.Quote(a)
			}
			what := "extra argument"
			if len(extra) > 1 {
				what += "s"
			}
			return fmt.Errorf("%s %s", what, strings.Join(quoted, " "))
		}
		return nil
	}
}

// joinAnd joins words as a sentence does: "A", "A and B", "A, B and C".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
