package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// readers are the commands that only read: on a data directory that does not exist they
// say so, rather than make an empty one to find nothing in (the server may run elsewhere).
var readers = map[string]bool{
	"gitmem stores list": true, "gitmem stores show": true, "gitmem ls": true, "gitmem cat": true,
	"gitmem log": true, "gitmem search": true, "gitmem diff": true, "gitmem blame": true,
	"gitmem keys list": true, "gitmem remote list": true, "gitmem proposals list": true,
	"gitmem proposals show": true,
}

// sayNone says on stderr, unless -q, why a listing shows nothing. Stdout stays empty, so that
// a script reading it finds no line that is not an entry.
func (a *app) sayNone(cmd *cobra.Command, why string) {
	if !a.quiet {
		fmt.Fprintln(cmd.ErrOrStderr(), why)
	}
}

// openData opens the data directory, with a hint when another process holds it.
func (a *app) openData(ctx context.Context) (*gitstore.DataDir, error) {
	_, statErr := os.Stat(a.dataDir)
	if errors.Is(statErr, fs.ErrNotExist) && readers[a.command] {
		return nil, &gitstore.Error{Kind: gitstore.KindNotFound, Message: fmt.Sprintf(
			"no data directory at %s: start gitmem serve there, name another with --data or GITMEM_DATA, "+
				"or a running server with --server or GITMEM_SERVER", a.dataDir)}
	}
	d, err := gitstore.Open(ctx, a.dataDir, gitstore.Options{})
	if err != nil {
		if gitstore.IsKind(err, gitstore.KindStorage) {
			return nil, a.storageErr(err)
		}
		return nil, err
	}
	if errors.Is(statErr, fs.ErrNotExist) && !a.quiet {
		// A typo in --data would otherwise show an empty store list and nothing else.
		fmt.Fprintf(os.Stderr, "gitmem: made a new data directory at %s, as none was there (--data or GITMEM_DATA names another)\n", a.dataDir)
	}
	return d, nil
}

// withData runs fn with the data directory open, and closes it after: for the commands that
// work on the data directory itself, which say so in one line when a server holds it.
func (a *app) withData(ctx context.Context, fn func(d *gitstore.DataDir) error) (err error) {
	if u, _ := a.serverURL(); u != "" {
		return a.needsDataDir(nil)
	}
	d, err := a.openData(ctx)
	var le *gitstore.LockedError
	if errors.As(err, &le) && le.URL != "" {
		return a.needsDataDir(le)
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if gitstore.IsKind(err, gitstore.KindStorage) {
			err = a.storageErr(err)
		}
	}()
	return fn(d)
}

// storageErr adds the data directory to a full disk's error, which names files in it.
func (a *app) storageErr(err error) error {
	return fmt.Errorf("%w (data directory %s)", err, a.dataDir)
}

// withStore runs fn with the store named by ref: its id, or its name if that is unique.
func (a *app) withStore(ctx context.Context, ref string, fn func(s *gitstore.Store) error) error {
	return a.withData(ctx, func(d *gitstore.DataDir) error {
		s, err := findStore(ctx, d, ref)
		if err != nil {
			return err
		}
		return fn(s)
	})
}

// findStore opens the store named by a store id or a unique store name, archived stores
// included.
func findStore(ctx context.Context, d *gitstore.DataDir, ref string) (*gitstore.Store, error) {
	id, err := resolveStore(ctx, d, ref)
	if err != nil {
		return nil, err
	}
	return d.Store(ctx, id)
}

// cliActor is who the CLI writes as: a user named by git's user.email if set, else by the
// login name, so that commits made from the terminal are attributed like commits made with git.
func cliActor() gitstore.Actor {
	name := gitConfig("user.name")
	email := gitConfig("user.email")
	if email == "" {
		login := "unknown"
		if u, err := user.Current(); err == nil {
			login = u.Username
		}
		host, _ := os.Hostname()
		email = login + "@" + host
		if name == "" {
			name = login
		}
	}
	if name == "" {
		name = email
	}
	return gitstore.UserActorFor(name, email)
}

func gitConfig(key string) string {
	out, err := gitexec.Command(context.Background(), "config", "--get", key).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// allPages collects every item of a paged listing; fetch returns one page and the cursor of
// the next ("" after the last).
func allPages[T any](fetch func(cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	for cursor := ""; ; {
		items, next, err := fetch(cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// countVersions counts a store's versions, page after page.
func countVersions(ctx context.Context, s *gitstore.Store) (int, error) {
	n := 0
	for cursor := ""; ; {
		page, err := s.Versions(ctx, gitstore.VersionFilter{Limit: 1000, Cursor: cursor})
		if err != nil {
			return 0, err
		}
		n += len(page.Versions)
		if cursor = page.NextCursor; cursor == "" {
			return n, nil
		}
	}
}

func allStores(ctx context.Context, d storeLister, includeArchived bool) ([]gitstore.StoreInfo, error) {
	return allPages(func(cursor string) ([]gitstore.StoreInfo, string, error) {
		page, err := d.ListStores(ctx, gitstore.StoreListOptions{IncludeArchived: includeArchived, Limit: 1000, Cursor: cursor})
		return page.Stores, page.NextCursor, err
	})
}

// allMemories lists every memory that opts selects in the store or a snapshot, page after page.
func allMemories(ctx context.Context, rd gitstore.MemoryReader, opts gitstore.ListOptions) ([]gitstore.ListItem, error) {
	opts.Limit = 1000
	return allPages(func(cursor string) ([]gitstore.ListItem, string, error) {
		opts.Cursor = cursor
		page, err := rd.List(ctx, opts)
		return page.Items, page.NextCursor, err
	})
}

// parseLogLevel reads --log-level: debug, info, warn or error (and slog's forms, INFO+2); a
// wrong one is a usage error that lists them.
func parseLogLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return level, usageError{fmt.Errorf("--log-level must be debug, info, warn or error, got %q", s)}
	}
	return level, nil
}
