package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/backup"
	"github.com/gitmem/gitmem/client"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/buildinfo"
	"github.com/gitmem/gitmem/internal/english"
	"github.com/gitmem/gitmem/search"
)

func init() {
	register(newBackupCmd)
	register(newVerifyCmd)
}

// isArchive tells whether a backup path names a single file (a tar archive).
func isArchive(p string) bool { return strings.HasSuffix(p, ".tar") }

func newBackupCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backup DEST",
		Short: "Copy every store, key, remote, webhook and the config, while gitmem serves",
		Long: `Copies the whole data directory into the directory DEST, or into the single file DEST if
it ends in .tar: each store's history as a bare repository at one commit of main, the API keys
(hashed), remotes and their sync state, webhooks and their cursors, the UI's session key and
the config file; then manifest.json, which says what the backup holds.

It reads the data directory in place and takes no lock, so it runs while "gitmem serve"
writes: each store is copied at one commit. A later backup into the same directory copies
only the commits that are new. A redaction since the last backup is carried into it: the
redacted content leaves the backup too.

With --server (or GITMEM_SERVER), it backs up the stores that the key may read, over git:
keys, remotes and webhooks stay on the server.`,
		Example: `  gitmem backup /backups/gitmem
  gitmem backup /backups/gitmem-$(date +%F).tar
  gitmem verify /backups/gitmem`,
		Args: exactArgs("DEST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dest := args[0]
			var src backup.Source = backup.Dir{Root: a.dataDir}
			opts := backup.Options{Version: buildinfo.Read().String()}
			if u, _ := a.serverURL(); u != "" {
				src, opts.Partial = serverSource{client.New(u, os.Getenv("GITMEM_API_KEY"))}, true
			} else {
				if _, err := os.Stat(gitstore.Layout{Root: a.dataDir}.StoresDir()); err != nil {
					return fmt.Errorf("no data directory at %s to back up (--data DIR names it)", a.dataDir)
				}
				if p, _ := findConfig(a.config); p != "" {
					opts.ConfigFile = p
				}
				if within(dest, a.dataDir) {
					return usageError{fmt.Errorf("DEST %s is in the data directory %s, which the backup copies: back up to another folder, such as /backups/gitmem", dest, a.dataDir)}
				}
			}
			start := time.Now()
			dir := dest
			if isArchive(dest) {
				tmp, err := os.MkdirTemp(filepath.Dir(dest), ".gitmem-backup-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			}
			m, err := backup.Backup(ctx, src, dir, opts)
			if err != nil {
				return err
			}
			if isArchive(dest) {
				if err := writeArchive(dir, dest); err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), m)
			}
			what := english.Count(len(m.Stores), "store") + " and " + english.Count(len(m.Files), "file")
			if m.Partial {
				what = fmt.Sprintf("%s (through %s: keys, remotes and webhooks stay on the server)", english.Count(len(m.Stores), "store"), src.(serverSource).c.URL())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backed up %s to %s in %s\n", what, dest, time.Since(start).Round(time.Millisecond))
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			for _, e := range m.Stores {
				fmt.Fprintf(w, "  %s\t%s\tmain %s\n", e.ID, e.Name, shortHash(e.Commit))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the backup's manifest as JSON")
	return cmd
}

// within says whether the path p is dir or is below it, as the file system reads p: its
// symbolic links followed as far as it exists, and each .. after a link taken from where the
// link leads, not cut from the text before it (filepath.Clean would make link/../x a
// sibling of link). A folder of p that is dir by another name (a bind mount, a name in
// other case on a file system that ignores case) is dir too.
func within(p, dir string) bool {
	di, err := os.Stat(dir)
	if err != nil {
		return false
	}
	for q := resolved(p); ; q = filepath.Dir(q) {
		if qi, err := os.Stat(q); err == nil && os.SameFile(qi, di) {
			return true
		}
		if filepath.Dir(q) == q {
			return false
		}
	}
}

// resolved is p absolute, its symbolic links followed, element by element, as far as it
// exists; the rest of it as written.
func resolved(p string) string {
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return filepath.Clean(p)
		}
		p = wd + string(filepath.Separator) + p
	}
	cur := filepath.VolumeName(p) + string(filepath.Separator)
	for _, e := range strings.Split(p[len(filepath.VolumeName(p)):], string(filepath.Separator)) {
		switch e {
		case "", ".":
		case "..":
			cur = filepath.Dir(cur) // cur holds no link (or does not exist): its parent is its text's
		default:
			cur = filepath.Join(cur, e)
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				cur = r
			}
		}
	}
	return cur
}

// writeArchive writes the backup directory dir as the tar file dest, whole or not at all.
func writeArchive(dir, dest string) error {
	tmp := dest + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = backup.WriteTar(dir, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dest)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dest, err)
	}
	return nil
}

// openBackup returns the directory of the backup at src, unpacking an archive into a
// temporary one (removed by done).
func openBackup(src string) (dir string, done func(), err error) {
	if !isArchive(src) {
		return src, func() {}, nil
	}
	f, err := os.Open(src)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	tmp, err := os.MkdirTemp("", "gitmem-restore-")
	if err != nil {
		return "", nil, err
	}
	if err := backup.ExtractTar(f, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("%s: %w", src, err)
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// serverSource is a backup of a server's stores, over its git.
type serverSource struct{ c *client.Client }

func (s serverSource) StoreIDs(ctx context.Context) ([]string, error) {
	var ids []string
	for cursor := ""; ; {
		p, err := s.c.ListStores(ctx, gitstore.StoreListOptions{IncludeArchived: true, Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, info := range p.Stores {
			ids = append(ids, info.ID)
		}
		if cursor = p.NextCursor; cursor == "" {
			return ids, nil
		}
	}
}

func (s serverSource) FetchMain(ctx context.Context, gitDir, id string) error {
	return s.c.Store(id).FetchMain(ctx, gitDir)
}

func (s serverSource) Files() ([]string, error) { return nil, nil }
func (s serverSource) Open(string) (io.ReadCloser, error) {
	return nil, errors.New("no files through a server")
}

// restoreBackup is "gitmem restore SRC --data DIR": a data directory made from a backup.
func (a *app) restoreBackup(cmd *cobra.Command, src string, asJSON bool) error {
	if _, err := os.Stat(src); os.IsNotExist(err) {
		return usageError{fmt.Errorf("there is no backup at %s; a memory's version is restored with STORE VERSION_ID", src)}
	}
	if u, _ := a.serverURL(); u != "" {
		return usageError{errors.New("restore makes a data directory on this machine: give --data DIR, not --server")}
	}
	ctx := cmd.Context()
	dir, done, err := openBackup(src)
	if err != nil {
		return err
	}
	defer done()
	if _, err := backup.ReadManifest(dir); err != nil {
		return err
	}
	if ids, _ := (backup.Dir{Root: a.dataDir}).StoreIDs(ctx); len(ids) > 0 {
		return invalidf("%s holds %d stores already: restore into a new or empty directory (--data DIR)", a.dataDir, len(ids))
	}
	d, err := gitstore.Open(ctx, a.dataDir, gitstore.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	errw := cmd.ErrOrStderr()
	var finish []func() int
	m, err := backup.Restore(ctx, dir, d, func(id string) gitstore.Progress {
		p, f := progressBar(errw, "catalog of "+id, "commits")
		finish = append(finish, f)
		return p
	})
	for _, f := range finish {
		f()
	}
	if err != nil {
		return err
	}
	idx := search.New(d, search.Options{Logger: slog.New(slog.DiscardHandler)})
	defer idx.Close()
	for _, e := range m.Stores {
		p, f := progressBar(errw, "search index of "+e.ID, "memories")
		err := idx.Rebuild(ctx, e.ID, p)
		f()
		if err != nil {
			return fmt.Errorf("restored store %s, but its search index: %w (gitmem reindex %s builds it)", e.ID, err, e.ID)
		}
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), m)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "restored %s and %s from %s into %s (backed up %s)\n",
		english.Count(len(m.Stores), "store"), english.Count(len(m.Files), "file"), src, a.dataDir, m.Created.Format(time.RFC3339))
	if m.Partial {
		fmt.Fprintln(cmd.OutOrStdout(), "  the backup was made through a server: it holds no keys, remotes or webhooks")
	}
	return nil
}

func newVerifyCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [PATH]",
		Short: "Check a data directory or a backup: fsck, catalogs, every version readable",
		Long: `Checks the backup at PATH (a directory with a manifest.json, or a .tar file), or the data
directory (PATH, else --data), also while gitmem serve runs:

  - git fsck of every store's repository;
  - for a backup, main at the commit the manifest names, and the files it lists;
  - every version of every store read back from a catalog rebuilt from its history;
  - for a data directory, its catalog (the server's, while one runs) equal to that rebuild,
    as of the same commit.

Exits 0 when nothing is wrong, and 1 after listing what is.`,
		Example: `  gitmem verify
  gitmem verify /backups/gitmem-2026-11-25.tar`,
		Args: rangeArgs(nil, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path := a.dataDir
			if len(args) == 1 {
				path = args[0]
			}
			var rep backup.Report
			var err error
			what := "backup"
			if _, statErr := os.Stat(filepath.Join(path, backup.ManifestFile)); isArchive(path) || statErr == nil {
				dir, done, oerr := openBackup(path)
				if oerr != nil {
					return oerr
				}
				defer done()
				rep, err = backup.VerifyBackup(ctx, dir)
			} else {
				what = "data directory"
				if u, via := a.serverURL(); u != "" {
					return invalidf("verify reads the data directory on this machine; %s names a server (leave it out)", via)
				}
				if _, serr := os.Stat(gitstore.Layout{Root: path}.StoresDir()); serr != nil {
					return fmt.Errorf("%s is neither a gitmem backup (no %s) nor a data directory (no stores/)", path, backup.ManifestFile)
				}
				rep, err = a.verifyData(ctx, path)
			}
			if err != nil {
				return err
			}
			if asJSON {
				if rep.Problems == nil {
					rep.Problems = []string{}
				}
				if err := printJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				for _, p := range rep.Problems {
					fmt.Fprintln(cmd.OutOrStdout(), "problem:", p)
				}
			}
			if !rep.OK() {
				return fmt.Errorf("the %s %s has %s", what, path, english.Count(len(rep.Problems), "problem"))
			}
			if !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "verified the %s %s: %s, %s and %s read; git fsck clean; no problem found\n",
					what, path, english.Count(rep.Stores, "store"), english.Count(rep.Versions, "version"), english.Count(rep.Memories, "memory"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// verifyData verifies the data directory at path against its catalogs: the directory's
// own if it is free, else those of the server that holds it.
func (a *app) verifyData(ctx context.Context, path string) (backup.Report, error) {
	b := *a
	b.dataDir = path
	var rep backup.Report
	err := b.withTarget(ctx, func(t target) error {
		if t.srv != nil {
			// A key missing or refused would be a problem of every store's catalog, found
			// after each store's fsck: say so first, as any other command does.
			if _, err := t.srv.ListStores(ctx, gitstore.StoreListOptions{Limit: 1}); err != nil {
				return err
			}
		}
		var err error
		rep, err = backup.VerifyData(ctx, path, func(id string) (backup.Live, error) {
			if t.srv != nil {
				return t.srv.Store(id), nil
			}
			return t.data.Store(ctx, id)
		})
		return err
	})
	return rep, err
}
