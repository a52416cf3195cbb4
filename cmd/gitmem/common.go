package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"strings"

	"github.com/gitmem/gitmem/gitstore"
)

// openData opens the data directory, with a hint when another process holds it.
func (a *app) openData(ctx context.Context) (*gitstore.DataDir, error) {
	d, err := gitstore.Open(ctx, a.dataDir, gitstore.Options{})
	if err != nil {
		if gitstore.IsKind(err, gitstore.KindConflict) {
			return nil, fmt.Errorf("%w\n(a running \"gitmem serve\" owns its data directory: use its HTTP API, or stop it first)", err)
		}
		return nil, err
	}
	return d, nil
}

// withData runs fn with the data directory open, and closes it after.
func (a *app) withData(ctx context.Context, fn func(d *gitstore.DataDir) error) (err error) {
	d, err := a.openData(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(d)
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

// findStore resolves a store id or a unique store name, archived stores included.
func findStore(ctx context.Context, d *gitstore.DataDir, ref string) (*gitstore.Store, error) {
	if strings.HasPrefix(ref, gitstore.StorePrefix) {
		return d.Store(ctx, ref)
	}
	var matches []gitstore.StoreInfo
	opts := gitstore.StoreListOptions{IncludeArchived: true, Limit: 1000}
	for {
		page, err := d.ListStores(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, info := range page.Stores {
			if info.Name == ref {
				matches = append(matches, info)
			}
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("no store with id or name %q (see \"gitmem stores list --all\")", ref)
	case 1:
		return d.Store(ctx, matches[0].ID)
	default:
		ids := make([]string, len(matches))
		for i, m := range matches {
			ids[i] = m.ID
		}
		return nil, fmt.Errorf("%d stores are named %q; name one by id: %s", len(matches), ref, strings.Join(ids, ", "))
	}
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
	out, err := exec.Command("git", "config", "--get", key).Output()
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
