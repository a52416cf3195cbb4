// Command gitmem is a memory store for AI agents in which git is the database.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitserve"
	"github.com/gitmem/gitmem/internal/buildinfo"
)

// commands are the subcommands; each file adds its own with register.
var commands []func(*app) *cobra.Command

func register(c func(*app) *cobra.Command) { commands = append(commands, c) }

// app holds what every subcommand shares: the global flags.
type app struct {
	dataDir string
	server  string // --server: a gitmem server to talk to instead of a data directory
	command string // the command being run ("gitmem ls"), for messages
	quiet   bool   // --quiet: commands that report what they did print nothing on success
	config  string // --config: the config file (config.go)
}

// reports are the commands whose output only says what they did, which --quiet silences;
// the others print what was asked for (cat, ls, log, a key's secret...), and keep it.
var reports = map[string]bool{
	"gitmem put": true, "gitmem rm": true, "gitmem mv": true, "gitmem restore": true,
	"gitmem revert": true, "gitmem redact": true, "gitmem gc": true, "gitmem expire": true,
	"gitmem stores create": true, "gitmem stores set": true, "gitmem stores archive": true,
	"gitmem stores delete": true, "gitmem keys revoke": true, "gitmem sync": true,
	"gitmem remote add": true, "gitmem remote remove": true, "gitmem import": true, "gitmem reindex": true,
}

func defaultDataDir() string {
	if d := os.Getenv("GITMEM_DATA"); d != "" {
		return d
	}
	return "./gitmem-data"
}

func newRootCmd() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:   "gitmem",
		Short: "A memory store for AI agents in which git is the database",
		Long: `gitmem keeps memories for AI agents in git: every change is a commit in a bare
repository, with versions, authorship and history that plain git can read.

Start the server with "gitmem serve", or work on the data directory directly with the
commands below.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Read().String(),
	}
	root.SetVersionTemplate("gitmem {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.dataDir, "data", defaultDataDir(), "data directory (env GITMEM_DATA)")
	root.PersistentFlags().StringVar(&a.server, "server", "", "talk to the gitmem server at this URL instead of a data directory (env GITMEM_SERVER; its key in GITMEM_API_KEY)")
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "print nothing on success but what was asked for (errors still go to stderr)")
	root.PersistentFlags().StringVar(&a.config, "config", "", "read flags from this TOML `file` (default: $GITMEM_CONFIG, ./gitmem.toml, ~/.config/gitmem/gitmem.toml; gitmem config show --help)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		a.command = cmd.CommandPath()
		cf, err := loadConfig(a.config)
		if err != nil {
			return err
		}
		if _, err := applyConfig(cmd, cf); err != nil {
			return err
		}
		if u, via := a.serverURL(); u != "" && talksToServer(a.command) {
			if err := checkServerURL(u, via); err != nil {
				return err
			}
		}
		if a.quiet && reports[a.command] {
			if f := cmd.Flags().Lookup("json"); f == nil || !f.Changed {
				cmd.SetOut(io.Discard)
			}
		}
		return nil
	}
	for _, c := range commands {
		root.AddCommand(c(a))
	}
	addCompletion(a, root)
	// cobra adds help and completion when it runs; here, so that they refuse a wrong call
	// as the others do.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Args = helpArgs
		case "completion":
			for _, shell := range c.Commands() {
				shell.Args = exactArgs() // cobra.NoArgs calls an extra argument an unknown command
			}
		}
	}
	markUsage(root)
	return root
}

func main() {
	gitserve.RunHookIfAsked() // git runs this program as the push hook of gitmem serve
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && ctx.Err() != nil {
		// What failed failed because of the signal: not the server, not the input. An
		// error of its own (what an interrupted agent run left) is shown.
		if errors.Is(err, context.Canceled) {
			err = errors.New("cancelled")
		}
		fmt.Fprintln(os.Stderr, "gitmem:", err)
		os.Exit(exitInterrupted)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitmem:", usageMessage(cmd, err))
		os.Exit(exitCode(err))
	}
}
