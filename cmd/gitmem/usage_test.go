package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A wrong call of a command and what it must print: a usage error (what starts its message,
// after the command's name), or, for want "", the command's help.
type usageCase struct {
	args []string
	want string
}

// usageCases are, for cmd and every command below it, the wrong calls that a command line
// can make: too few arguments, one too many, an unknown flag, an unknown command after a
// group; and the calls for help, --help and -h, and a group alone. The arguments a
// command takes are found by calling its own check with 0 to 8 of them.
func usageCases(t *testing.T, cmd *cobra.Command) []usageCase {
	t.Helper()
	path := strings.Fields(cmd.CommandPath())[1:]
	call := func(more ...string) []string { return append(append([]string{}, path...), more...) }
	cases := []usageCase{
		{call("--no-such-flag"), "unknown flag: --no-such-flag"},
		{call("--help"), ""},
		{call("-h"), ""},
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) { // every flag of a whole number, given none
		if intFlagTypes[f.Value.Type()] {
			cases = append(cases, usageCase{call("--" + f.Name + "=zz"), "--" + f.Name + " takes a "})
		}
	})
	switch {
	case cmd.Name() == "help":
		cases = append(cases, usageCase{call("no-such-command"), `unknown command "no-such-command"`})
	case cmd.HasAvailableSubCommands():
		cases = append(cases, usageCase{call(), ""}, usageCase{call("no-such-command"), `unknown command "no-such-command"`})
		for _, sub := range cmd.Commands() {
			if !sub.Hidden {
				cases = append(cases, usageCases(t, sub)...)
			}
		}
	case cmd.Args == nil:
		t.Errorf("%s does not declare its arguments (Args)", cmd.CommandPath())
	default:
		var accepted []int
		for n := range 9 {
			if cmd.Args(cmd, strings.Fields(strings.Repeat("x ", n))) == nil {
				accepted = append(accepted, n)
			}
		}
		if len(accepted) == 0 {
			t.Fatalf("%s accepts no number of arguments", cmd.CommandPath())
		}
		if least := accepted[0]; least > 0 {
			cases = append(cases, usageCase{call(strings.Fields(strings.Repeat("x ", least-1))...), "missing "})
		}
		if most := accepted[len(accepted)-1]; most < 8 {
			cases = append(cases, usageCase{call(strings.Fields(strings.Repeat("x ", most) + "extra")...), `extra argument "extra"`})
		}
	}
	return cases
}

// TestEveryUsageError makes every wrong call of every command (usageCases) with the binary, and
// checks that each answers in the one shape: exit 2, nothing on stdout, and one line on
// stderr that says what was wrong, the command's usage line and where its help is; and that
// help goes to stdout with exit 0. Nothing makes the data directory.
func TestEveryUsageError(t *testing.T) {
	c := newCLI(t)
	cases := usageCases(t, newRootCmd())
	if len(cases) < 200 {
		t.Fatalf("only %d cases: the walk of the commands missed some", len(cases))
	}
	for _, tc := range cases {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := c.run("", tc.args...)
			if tc.want == "" {
				if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage:") {
					t.Errorf("gitmem %s: exit %d, stderr %q, stdout %.200q; want its help on stdout and exit 0", name, code, stderr, stdout)
				}
				return
			}
			// The command is the leading words that are not the test's own.
			var words []string
			for _, w := range tc.args {
				if w == "x" || w == "extra" || strings.HasPrefix(w, "-") || w == "no-such-command" {
					break
				}
				words = append(words, w)
			}
			prefix := ""
			if len(words) > 0 {
				prefix = strings.Join(words, " ") + ": "
			}
			full := strings.TrimSpace("gitmem " + strings.Join(words, " "))
			shape := regexp.MustCompile(`^gitmem: ` + regexp.QuoteMeta(prefix+tc.want) + `.* \(usage: ` +
				regexp.QuoteMeta(full) + `( .+)?; see "` + regexp.QuoteMeta(full+` --help`) + `"\)\n$`)
			if code != exitUsage || stdout != "" || !shape.MatchString(stderr) {
				t.Errorf("gitmem %s: exit %d, stdout %q, stderr %q;\nwant exit %d and one line on stderr like %s", name, code, stdout, stderr, exitUsage, shape)
			}
		})
	}
	if _, err := os.Stat(c.data); !os.IsNotExist(err) {
		t.Errorf("a wrong call made the data directory: %v", err)
	}
}
