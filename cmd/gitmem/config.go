package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { register(newConfigCmd) }

// Every flag can be set in a config file (TOML), by the environment (GITMEM_ and the flag's
// name in capitals, "-" as "_": GITMEM_TLS_CERT), or on the command line, which wins over
// the environment, which wins over the file. The file's top level sets the flags that every
// command has (data, server); a table named after a command sets its flags:
//
//	data = "/var/lib/gitmem"
//	[serve]
//	addr = "0.0.0.0:7437"
//	tls-cert = "/etc/gitmem/cert.pem"
//
// The file is --config, else $GITMEM_CONFIG, else gitmem.toml in the working directory, else
// gitmem/gitmem.toml in the user's config directory (~/.config), the first that exists.

// configFile is a loaded config file: its path and its tables, "" for the top level.
type configFile struct {
	path   string
	tables map[string]map[string]any
}

// findConfig returns the config file to use, "" if there is none; explicit is --config.
func findConfig(explicit string) (path string, chosen bool) {
	if explicit != "" {
		return explicit, true
	}
	if p := os.Getenv("GITMEM_CONFIG"); p != "" {
		return p, true
	}
	if _, err := os.Stat("gitmem.toml"); err == nil {
		return "gitmem.toml", false
	}
	if dir, err := os.UserConfigDir(); err == nil {
		p := filepath.Join(dir, "gitmem", "gitmem.toml")
		if _, err := os.Stat(p); err == nil {
			return p, false
		}
	}
	return "", false
}

func loadConfig(explicit string) (*configFile, error) {
	path, chosen := findConfig(explicit)
	if path == "" {
		return nil, nil
	}
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		if errors.Is(err, fs.ErrNotExist) && chosen {
			return nil, invalidf("config file %s does not exist", path)
		}
		return nil, invalidf("config file %s: %w", path, err)
	}
	cf := &configFile{path: path, tables: map[string]map[string]any{"": {}}}
	for k, v := range raw {
		if t, ok := v.(map[string]any); ok {
			cf.tables[k] = t
		} else {
			cf.tables[""][k] = v
		}
	}
	return cf, nil
}

// commandKey is the config table of cmd: its path without "gitmem" ("serve", "stores list").
func commandKey(cmd *cobra.Command) string {
	return strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()), " ")
}

// envName is the environment variable of a flag.
func envName(flag string) string {
	return "GITMEM_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// notConfigurable are the flags that only the command line sets.
var notConfigurable = map[string]bool{"help": true, "version": true, "config": true}

// ownEnv are the flags whose variable the command reads itself, to say where a value came
// from (GITMEM_SERVER, beside GITMEM_API_KEY).
var ownEnv = map[string]bool{"server": true}

// applyConfig sets the flags of cmd that the command line did not, from the environment or
// the config file, and returns where each flag's value came from.
func applyConfig(cmd *cobra.Command, cf *configFile) (map[string]string, error) {
	sources := map[string]string{}
	key := commandKey(cmd)
	own, global := map[string]any{}, map[string]any{}
	if cf != nil {
		own, global = cf.tables[key], cf.tables[""]
		if err := cf.check(cmd, key); err != nil {
			return nil, err
		}
	}
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || notConfigurable[f.Name] {
			return
		}
		switch {
		case f.Changed:
			sources[f.Name] = "flag --" + f.Name
		case os.Getenv(envName(f.Name)) != "" && !ownEnv[f.Name]:
			if e := f.Value.Set(os.Getenv(envName(f.Name))); e != nil {
				err = invalidf("%s: %w", envName(f.Name), e)
				return
			}
			sources[f.Name] = "env " + envName(f.Name)
		default:
			table := key
			v, ok := own[f.Name]
			if !ok && cmd.Root().PersistentFlags().Lookup(f.Name) != nil {
				table = ""
				v, ok = global[f.Name]
			}
			if !ok {
				sources[f.Name] = "default"
				return
			}
			if e := setFromConfig(f, v); e != nil {
				where := f.Name
				if table != "" {
					where = "[" + table + "] " + f.Name
				}
				err = invalidf("config file %s: %s: %w", cf.path, where, e)
				return
			}
			sources[f.Name] = "config " + cf.path
		}
	})
	return sources, err
}

// setFromConfig sets a flag from a TOML value: a string, number, bool, or an array of them
// for a flag that takes several.
func setFromConfig(f *pflag.Flag, v any) error {
	if list, ok := v.([]any); ok {
		if strings.HasSuffix(f.Value.Type(), "Slice") {
			parts := make([]string, len(list))
			for i, x := range list {
				parts[i] = fmt.Sprint(x)
			}
			return f.Value.Set(strings.Join(parts, ","))
		}
		for _, x := range list { // an array flag takes each in turn
			if err := f.Value.Set(fmt.Sprint(x)); err != nil {
				return err
			}
		}
		return nil
	}
	return f.Value.Set(fmt.Sprint(v))
}

// check refuses a key in the file that names no flag, top level or in cmd's table (a typo
// would otherwise be ignored), and a table that names no command.
func (cf *configFile) check(cmd *cobra.Command, key string) error {
	for name := range cf.tables[key] {
		if cmd.Flags().Lookup(name) == nil || notConfigurable[name] {
			err := fmt.Errorf("config file %s: [%s] %s is not a flag of gitmem %s", cf.path, key, name, key)
			var like []string
			for _, f := range flagSuggestions(cmd, name) {
				if !notConfigurable[f] && f != name {
					like = append(like, f)
				}
			}
			if len(like) > 0 {
				err = fmt.Errorf("%w; did you mean %s?", err, strings.Join(like, " or "))
			}
			return invalidf("%w", err)
		}
	}
	for name := range cf.tables[""] {
		if cmd.Root().PersistentFlags().Lookup(name) == nil || notConfigurable[name] {
			return invalidf("config file %s: %s is not a flag of every command; put it in the table of its command ([serve] ...)", cf.path, name)
		}
	}
	for table := range cf.tables {
		if table == "" {
			continue
		}
		if c, _, err := cmd.Root().Find(strings.Fields(table)); err != nil || commandKey(c) != table {
			return invalidf("config file %s: [%s] is not a gitmem command", cf.path, table)
		}
	}
	return nil
}

func newConfigCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show the configuration: flags, environment and the config file"}
	var asJSON bool
	show := &cobra.Command{
		Use:   "show [COMMAND [SUBCOMMAND]]",
		Short: "Print the value of every flag of a command (serve by default) and where it came from",
		Long: `Prints what a command would run with: each flag's value and where it came from, the
command line, the environment (GITMEM_<FLAG>) or the config file, or its default.

The config file is --config, else $GITMEM_CONFIG, else gitmem.toml in this folder, else
gitmem/gitmem.toml in your config directory (~/.config). It is TOML: the top level sets the
flags that every command has (data, server), a table named after a command sets its own:

  data = "/var/lib/gitmem"

  [serve]
  addr = "0.0.0.0:7437"
  tls-cert = "/etc/gitmem/cert.pem"
  tls-key = "/etc/gitmem/key.pem"
  log-format = "json"`,
		Example: `  gitmem config show
  gitmem config show agent
  GITMEM_ADDR=0.0.0.0:7437 gitmem config show --config /etc/gitmem/gitmem.toml`,
		Args: rangeArgs(nil, "COMMAND", "SUBCOMMAND"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"serve"}
			}
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 || target == c.Root() {
				return usageError{fmt.Errorf("%q is not a gitmem command", strings.Join(args, " "))}
			}
			// The target's flags, parsed from nothing, then resolved as when it runs.
			if err := target.ParseFlags(nil); err != nil {
				return err
			}
			cf, err := loadConfig(a.config)
			if err != nil {
				return err
			}
			sources, err := applyConfig(target, cf)
			if err != nil {
				return err
			}
			type row struct {
				Flag   string `json:"flag"`
				Value  string `json:"value"`
				Source string `json:"source"`
			}
			var rows []row
			for name, src := range sources {
				rows = append(rows, row{name, target.Flags().Lookup(name).Value.String(), src})
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].Flag < rows[j].Flag })
			out := c.OutOrStdout()
			if asJSON {
				file := ""
				if cf != nil {
					file = cf.path
				}
				return printJSON(out, map[string]any{"command": "gitmem " + commandKey(target), "config_file": file, "data": rows})
			}
			if cf != nil {
				fmt.Fprintf(out, "config file: %s\n", cf.path)
			} else {
				fmt.Fprintln(out, "config file: none (gitmem config show --help says where gitmem looks)")
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "FLAG\tVALUE\tFROM\n")
			for _, r := range rows {
				fmt.Fprintf(tw, "--%s\t%s\t%s\n", r.Flag, r.Value, r.Source)
			}
			return tw.Flush()
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print the flags as JSON")
	cmd.AddCommand(show)
	return cmd
}
