// Package backup copies a whole data directory while it is in use, restores one from the
// copy, and verifies either.
//
// A backup is a directory: each store's repository as a bare repository of its own
// (stores/<id>.git, main at one commit that the manifest names), the files that history
// does not hold (keys, remotes and their sync state, webhooks and their cursors, the UI's
// session key, the config file), and manifest.json, written last: a directory without it
// is a backup that did not finish. A later backup into the same directory fetches only the
// commits that are new (git's own transfer), and copies the small files again. A single
// file is the same directory as a tar archive.
//
// Nothing here takes the data directory's lock: a store's main moves atomically (a ref
// renamed into place) and its objects are written before it, and every other file is
// replaced whole by a rename, so a copy read while gitmem serves is consistent per store.
package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
	"github.com/gitmem/gitmem/internal/gitexec"
)

// ManifestFile names the manifest in a backup.
const ManifestFile = "manifest.json"

// Manifest says what a backup holds.
type Manifest struct {
	Format  int          `json:"format"`
	Created time.Time    `json:"created_at"`
	Version string       `json:"gitmem_version"`
	Stores  []StoreEntry `json:"stores"`
	Files   []string     `json:"files"` // relative to the backup, as in the data directory
	// Partial is set for a backup made through a server: its stores only.
	Partial bool `json:"partial,omitempty"`
}

// StoreEntry is one store in a backup.
type StoreEntry struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Commit string `json:"commit"` // main, as backed up
}

// Source is what a backup copies: a data directory on this machine (Dir), or a server's
// stores (made by the caller over the server's git).
type Source interface {
	// StoreIDs lists the stores to copy.
	StoreIDs(ctx context.Context) ([]string, error)
	// FetchMain fetches the store's main, with its history, into the bare repository gitDir.
	FetchMain(ctx context.Context, gitDir, id string) error
	// Files lists the other files to copy, relative to the data directory; nil for none.
	Files() ([]string, error)
	// Open opens one of them.
	Open(rel string) (io.ReadCloser, error)
}

// Dir is a data directory on this machine, read in place.
type Dir struct{ Root string }

func (d Dir) layout() gitstore.Layout { return gitstore.Layout{Root: d.Root} }

// StoreIDs lists the stores' repositories.
func (d Dir) StoreIDs(context.Context) ([]string, error) { return d.layout().StoreIDs() }

// FetchMain fetches from the store's repository on disk. A pack that gitmem's maintenance
// removes while git reads it fails the fetch: it is tried again.
func (d Dir) FetchMain(ctx context.Context, gitDir, id string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = git(ctx, gitDir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
			d.layout().StoreRepo(id), "+refs/heads/main:refs/heads/main"); err == nil {
			return nil
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	return err
}

// Files lists the files that history does not hold: the keys, the remotes and their sync
// state, the webhooks and their cursors, the UI's session key.
func (d Dir) Files() ([]string, error) {
	l := d.layout()
	var out []string
	for _, p := range []string{l.KeysFile(), l.WebhooksFile(), l.UISessionKeyFile()} {
		if _, err := os.Stat(p); err == nil {
			out = append(out, rel(d.Root, p))
		}
	}
	for _, dir := range []string{l.RemotesDir(), l.WebhooksDir()} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // none yet
		}
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, rel(d.Root, filepath.Join(dir, e.Name())))
			}
		}
	}
	return out, nil
}

// Open opens a file of the data directory.
func (d Dir) Open(relPath string) (io.ReadCloser, error) {
	return os.Open(filepath.Join(d.Root, filepath.FromSlash(relPath)))
}

func rel(root, p string) string {
	r, _ := filepath.Rel(root, p)
	return filepath.ToSlash(r)
}

// Options tune a backup.
type Options struct {
	// ConfigFile, if not "", is copied in as gitmem.toml.
	ConfigFile string
	// Version is written into the manifest.
	Version string
	// Progress, if set, is told each store as it is done.
	Progress func(done, total int, id string)
	// Partial marks a backup of a server's stores only.
	Partial bool
}

// Backup copies src into the directory dest, made if need be; a backup there already is
// brought up to date, fetching only what is new. It returns the manifest.
func Backup(ctx context.Context, src Source, dest string, opts Options) (Manifest, error) {
	if err := gitexec.Need("backup"); err != nil {
		return Manifest{}, err
	}
	m := Manifest{Format: 1, Created: time.Now().UTC(), Version: opts.Version, Partial: opts.Partial}
	if err := os.MkdirAll(filepath.Join(dest, "stores"), 0o700); err != nil {
		return m, fmt.Errorf("backup: %w", err)
	}
	// A backup in progress has no manifest: the old one goes first.
	if err := os.Remove(filepath.Join(dest, ManifestFile)); err != nil && !os.IsNotExist(err) {
		return m, fmt.Errorf("backup: %w", err)
	}
	ids, err := src.StoreIDs(ctx)
	if err != nil {
		return m, err
	}
	keep := map[string]bool{}
	for i, id := range ids {
		e, err := backupStore(ctx, src, dest, id)
		if err != nil {
			return m, err
		}
		m.Stores = append(m.Stores, e)
		keep[id+".git"] = true
		if opts.Progress != nil {
			opts.Progress(i+1, len(ids), id)
		}
	}
	// A store deleted since the last backup leaves it.
	entries, _ := os.ReadDir(filepath.Join(dest, "stores"))
	for _, e := range entries {
		if !keep[e.Name()] {
			os.RemoveAll(filepath.Join(dest, "stores", e.Name()))
		}
	}
	files, err := src.Files()
	if err != nil {
		return m, err
	}
	for _, f := range files {
		if err := copyIn(src, f, dest); err != nil {
			return m, err
		}
		m.Files = append(m.Files, f)
	}
	if opts.ConfigFile != "" {
		raw, err := os.ReadFile(opts.ConfigFile)
		if err != nil {
			return m, fmt.Errorf("backup the config file: %w", err)
		}
		if err := durable.WriteFile(filepath.Join(dest, "gitmem.toml"), raw, 0o600); err != nil {
			return m, err
		}
		m.Files = append(m.Files, "gitmem.toml")
	}
	raw, _ := json.MarshalIndent(m, "", "  ")
	if err := durable.WriteFile(filepath.Join(dest, ManifestFile), append(raw, '\n'), 0o600); err != nil {
		return m, fmt.Errorf("backup: write the manifest: %w", err)
	}
	return m, nil
}

// backupStore brings the copy of one store up to date. When the store's history was
// rewritten since (a redaction), the copy drops what the rewrite removed: a redacted
// secret must not live on in backups.
func backupStore(ctx context.Context, src Source, dest, id string) (StoreEntry, error) {
	gitDir := filepath.Join(dest, "stores", id+".git")
	if _, err := os.Stat(gitDir); os.IsNotExist(err) {
		if err := git(ctx, "", "init", "--quiet", "--bare", gitDir); err != nil {
			return StoreEntry{}, err
		}
	}
	before, _ := gitexec.In(ctx, gitDir, "rev-parse", "--verify", "--quiet", "refs/heads/main")
	if err := src.FetchMain(ctx, gitDir, id); err != nil {
		return StoreEntry{}, fmt.Errorf("backup store %s: %w", id, err)
	}
	commit, err := gitexec.In(ctx, gitDir, "rev-parse", "refs/heads/main")
	if err != nil {
		return StoreEntry{}, fmt.Errorf("backup store %s: %w", id, err)
	}
	if before != "" && before != commit {
		if err := git(ctx, gitDir, "merge-base", "--is-ancestor", before, commit); err != nil {
			if err := git(ctx, gitDir, "-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "gc", "--quiet", "--prune=now"); err != nil {
				return StoreEntry{}, fmt.Errorf("backup store %s: drop the history a rewrite replaced: %w", id, err)
			}
		}
	}
	e := StoreEntry{ID: id, Commit: commit}
	if raw, err := gitexec.In(ctx, gitDir, "cat-file", "blob", commit+":.gitmem/store.json"); err == nil {
		var info struct{ Name string }
		json.Unmarshal([]byte(raw), &info)
		e.Name = info.Name
	}
	return e, nil
}

func copyIn(src Source, relPath, dest string) error {
	r, err := src.Open(relPath)
	if err != nil {
		return fmt.Errorf("backup %s: %w", relPath, err)
	}
	defer r.Close()
	raw, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("backup %s: %w", relPath, err)
	}
	p := filepath.Join(dest, filepath.FromSlash(relPath))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return durable.WriteFile(p, raw, 0o600)
}

// ReadManifest reads a backup's manifest; a directory without one is not a finished backup.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if os.IsNotExist(err) {
		return m, fmt.Errorf("%s is not a finished gitmem backup: it has no %s", dir, ManifestFile)
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%s: %s is damaged: %w", dir, ManifestFile, err)
	}
	if m.Format != 1 {
		return m, fmt.Errorf("%s: a backup of format %d, which this gitmem does not read", dir, m.Format)
	}
	return m, nil
}

// git runs git on the bare repository gitDir ("" for none).
func git(ctx context.Context, gitDir string, args ...string) error {
	_, err := gitexec.In(ctx, gitDir, args...)
	return err
}
