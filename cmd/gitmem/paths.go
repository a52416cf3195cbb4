package main

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
)

// The commands that take one memory's path (cat, rm, put, mv, log, diff, blame) say what a
// newcomer most often means when the path names no memory: a folder, or the memory with .md
// added.

// folderArg is the usage error of the argument name (PATH, FROM) of cmd that should name one
// memory but ends in /, which names a folder; nil for any other argument. A memory's id
// (mem_…) is never a folder.
func folderArg(cmd, store, name, p string) error {
	if !strings.HasSuffix(p, "/") || !strings.HasPrefix(p, "/") {
		return nil
	}
	switch cmd {
	case "put":
		return usageError{fmt.Errorf("%s %s ends in /, so it names a folder: a memory's path ends in its name, such as %sNAME.md", name, p, p)}
	case "log":
		return usageError{fmt.Errorf("%s %s ends in /, so it names a folder, not a memory: the versions of a whole store are in \"gitmem log %s\"", name, p, quoteArg(store))}
	}
	return usageError{fmt.Errorf("%s %s ends in /, so it names a folder, not a memory: list it with \"gitmem ls %s %s\"", name, p, quoteArg(store), quoteArg(p))}
}

// moveTarget is the usage error of gitmem mv's TO when it ends in /: a folder, into which
// mv as the shell's would move FROM; it says the path to give instead.
func moveTarget(store, from, to string) error {
	if !strings.HasSuffix(to, "/") || !strings.HasPrefix(to, "/") {
		return nil
	}
	return usageError{fmt.Errorf("TO %s ends in /, so it names a folder: give the memory's new path in it, as in \"gitmem mv %s %s %s\"",
		to, quoteArg(store), quoteArg(from), quoteArg(to+path.Base(from)))}
}

// emptyListing is what gitmem ls says on stderr when it lists nothing: that the store is
// empty, or that nothing is below the prefix in args[1], which may be a memory's path.
func emptyListing(cmd *cobra.Command, rd gitstore.MemoryReader, args []string) string {
	store := quoteArg(args[0])
	if at, _ := cmd.Flags().GetString("at"); at != "" {
		return fmt.Sprintf("no memories below %s as of %s", cmp.Or(strings.Join(args[1:], ""), "/"), at)
	}
	if len(args) < 2 || args[1] == "/" {
		return fmt.Sprintf("no memories in %s yet; write one with: gitmem put %s PATH", args[0], store)
	}
	p := strings.TrimSuffix(args[1], "/")
	if _, err := rd.GetByPath(cmd.Context(), p, false); err == nil {
		return fmt.Sprintf("nothing below %s/: %s is a memory; print it with \"gitmem cat %s %s\"", p, p, store, quoteArg(p))
	}
	return fmt.Sprintf("nothing below %s/ (\"gitmem ls %s\" lists the top of the store)", p, store)
}

// hintPage is how many entries of p's folder notFoundHint reads: one page, the most the API
// gives in one answer.
const hintPage = 100

// notFoundHint adds to err, the not-found error of a memory at p in rd, what is there
// instead: a folder (memories below p/), or a memory at p.md. It reads one page of p's folder
// in rd, so through a server it costs one request (which counts against the key's rate
// limit), and rd as of --at answers from the version that was read. Any other error, a p
// with nothing near it, or one whose neighbours lie past that page, is returned as it is.
func notFoundHint(ctx context.Context, rd gitstore.MemoryReader, store, p string, err error) error {
	if !gitstore.IsKind(err, gitstore.KindNotFound) || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return err
	}
	page, lerr := rd.List(ctx, gitstore.ListOptions{PathPrefix: p[:strings.LastIndex(p, "/")+1], Depth: 1, Limit: hintPage})
	if lerr != nil {
		return err
	}
	md := false
	for _, it := range page.Items {
		switch {
		case it.Prefix == p+"/":
			return fmt.Errorf("%w; %s/ is a folder: list it with \"gitmem ls %s %s\"", err, p, quoteArg(store), quoteArg(p+"/"))
		case it.Memory != nil && it.Memory.Path == p+".md" && !strings.HasSuffix(p, ".md"):
			md = true // a folder p/ comes after p.md in path order: keep looking for it
		}
	}
	if md {
		return fmt.Errorf("%w; did you mean %s.md?", err, p)
	}
	return err
}
