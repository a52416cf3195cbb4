package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/internal/buildinfo"
)

func init() { register(newVersionCmd) }

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gitmem's version and the revision it was built from",
		Long: `Prints the version of this gitmem binary and the VCS revision it was built from. A running
server reports the same at GET /v1/version and in its MCP server info.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			info := buildinfo.Read()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), info)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "gitmem %s\n", info)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}
