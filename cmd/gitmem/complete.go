package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
)

// addCompletion completes, for every command whose arguments start with STORE, the names of
// the stores, and then, where PATH follows, the paths of the store's memories: from the data
// directory or from the server that holds it, as the command itself would read them.
func addCompletion(a *app, cmd *cobra.Command) {
	fields := strings.Fields(cmd.Use)
	if len(fields) > 1 && strings.Trim(fields[1], "[]") == "STORE" && cmd.ValidArgsFunction == nil {
		pathNext := len(fields) > 2 && strings.HasPrefix(strings.Trim(fields[2], "[]"), "PATH")
		cmd.ValidArgsFunction = func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0:
				return completeStores(a, c), cobra.ShellCompDirectiveNoFileComp
			case len(args) == 1 && pathNext:
				return completePaths(a, c, args[0], prefix), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
			}
			return nil, cobra.ShellCompDirectiveDefault
		}
	}
	for _, sub := range cmd.Commands() {
		addCompletion(a, sub)
	}
}

func completeStores(a *app, c *cobra.Command) []string {
	var names []string
	a.withTarget(c.Context(), func(t target) error {
		stores, err := allStores(c.Context(), t.lister(), false)
		for _, s := range stores {
			names = append(names, s.Name)
		}
		return err
	})
	return names
}

// completePaths lists the folders and memories just below the folder of prefix.
func completePaths(a *app, c *cobra.Command, store, prefix string) []string {
	dir := "/"
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dir = prefix[:i+1]
	}
	var paths []string
	a.withStoreAPI(c.Context(), store, func(s storeAPI) error {
		items, err := allMemories(c.Context(), s, gitstore.ListOptions{PathPrefix: dir, Depth: 1})
		for _, it := range items {
			if it.Memory != nil {
				paths = append(paths, it.Memory.Path)
			} else {
				paths = append(paths, it.Prefix)
			}
		}
		return err
	})
	return paths
}
