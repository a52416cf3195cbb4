// Package gitsync keeps stores in step with git remotes: the remotes of each store and the
// state of its syncs, kept in the data directory outside the repository; fetch and push
// with the git program (so every URL git understands works, with credentials from git's
// usual places); and a loop that syncs after writes and on an interval, backing off while a
// remote is down. The merge itself is gitstore.Store.Integrate.
package gitsync

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
)

// Remote is a git remote of a store.
type Remote struct {
	Name    string    `json:"name"`
	URL     string    `json:"url"`
	AddedAt time.Time `json:"added_at"`
}

// config is what remotes/<store id>.json holds.
type config struct {
	StoreName string   `json:"store_name"` // as it was when a remote was added: finds the store by name while a server holds the data directory
	Remotes   []Remote `json:"remotes"`
}

// State is what the syncs of a store with one remote did last.
type State struct {
	LastTry    time.Time `json:"last_try,omitzero"`
	LastSync   time.Time `json:"last_sync,omitzero"` // the last sync that succeeded
	LastError  string    `json:"last_error,omitempty"`
	Failures   int       `json:"failures,omitempty"` // in a row, for the backoff
	NextTry    time.Time `json:"next_try,omitzero"`  // not before, after a failure
	RemoteHead string    `json:"remote_head,omitempty"`
	Summary    string    `json:"summary,omitempty"` // of the last sync that succeeded
}

func configPath(dataDir, storeID string) string {
	return gitstore.Layout{Root: dataDir}.RemotesFile(storeID)
}

func statePath(dataDir, storeID string) string {
	return gitstore.Layout{Root: dataDir}.SyncStateFile(storeID)
}

// remoteName is what git accepts as a remote's name and we can put in a ref.
var remoteName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckName returns an error that says what is wrong with a remote's name.
func CheckName(name string) error {
	if !remoteName.MatchString(name) || strings.HasSuffix(name, ".lock") || strings.Contains(name, "..") {
		return fmt.Errorf("remote name %q is not valid: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (like origin)", name)
	}
	return nil
}

// CheckURL returns an error that says what is wrong with a remote's URL, and the URL to
// keep: a local path made absolute, so that it means the same from any folder.
func CheckURL(url string) (string, error) {
	switch {
	case url == "":
		return "", errors.New("remote URL is empty: give a path, or an http(s), ssh or file URL that git understands")
	case strings.ContainsAny(url, "\n\r\x00"):
		return "", fmt.Errorf("remote URL %q has a line break or NUL", url)
	case strings.HasPrefix(url, "-"):
		return "", fmt.Errorf("remote URL %q starts with '-', which git would read as an option", url)
	}
	if strings.Contains(url, "://") || isSCPLike(url) {
		return url, nil
	}
	abs, err := filepath.Abs(url)
	if err != nil {
		return "", fmt.Errorf("remote path %q: %w", url, err)
	}
	return abs, nil
}

// isSCPLike reports whether url is git's scp-like ssh syntax, [user@]host:path.
func isSCPLike(url string) bool {
	colon := strings.IndexByte(url, ':')
	slash := strings.IndexByte(url, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// writeJSON replaces path atomically and durably, so that a reader (gitmem remote list
// while a server syncs) sees the old file or the new one.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(path, append(b, '\n'), 0o600) // 0600: remote URLs may hold credentials
}

// Remotes returns the remotes of a store, by name.
func Remotes(dataDir, storeID string) ([]Remote, error) {
	var c config
	err := readJSON(configPath(dataDir, storeID), &c)
	return c.Remotes, err
}

// Pick returns the store's remotes, or the one named name (all of them for ""). A store
// without remotes is an invalid request, a name it has no remote of is not found; their
// messages name the store as storeRef (its name, as a person would type it).
func Pick(dataDir, storeID, storeRef, name string) ([]Remote, error) {
	remotes, err := Remotes(dataDir, storeID)
	if err != nil {
		return nil, err
	}
	if len(remotes) == 0 {
		return nil, &gitstore.Error{Kind: gitstore.KindInvalid,
			Message: fmt.Sprintf("store %s has no remotes: add one with \"gitmem remote add %s NAME URL\"", storeID, storeRef)}
	}
	if name == "" {
		return remotes, nil
	}
	for _, r := range remotes {
		if r.Name == name {
			return []Remote{r}, nil
		}
	}
	return nil, &gitstore.Error{Kind: gitstore.KindNotFound,
		Message: fmt.Sprintf("store %s has no remote named %q (see \"gitmem remote list %s\")", storeID, name, storeRef)}
}

// Add adds a remote to a store. It is refused if the name is taken or the name or URL is
// not valid; then nothing changes. The caller holds the data directory.
func Add(dataDir, storeID, storeName, name, url string, now time.Time) (Remote, error) {
	if err := CheckName(name); err != nil {
		return Remote{}, err
	}
	url, err := CheckURL(url)
	if err != nil {
		return Remote{}, err
	}
	var c config
	if err := readJSON(configPath(dataDir, storeID), &c); err != nil {
		return Remote{}, err
	}
	for _, r := range c.Remotes {
		if r.Name == name {
			return Remote{}, fmt.Errorf("store %s has a remote named %q already (%s); remove it first", storeID, name, r.URL)
		}
	}
	r := Remote{Name: name, URL: url, AddedAt: now.UTC()}
	c.StoreName = storeName
	c.Remotes = append(c.Remotes, r)
	sort.Slice(c.Remotes, func(i, j int) bool { return c.Remotes[i].Name < c.Remotes[j].Name })
	return r, writeJSON(configPath(dataDir, storeID), c)
}

// Remove removes a store's remote and its sync state. The caller holds the data directory.
func Remove(dataDir, storeID, name string) (Remote, error) {
	var c config
	if err := readJSON(configPath(dataDir, storeID), &c); err != nil {
		return Remote{}, err
	}
	for i, r := range c.Remotes {
		if r.Name == name {
			c.Remotes = append(c.Remotes[:i], c.Remotes[i+1:]...)
			if err := writeJSON(configPath(dataDir, storeID), c); err != nil {
				return Remote{}, err
			}
			states, err := States(dataDir, storeID)
			if err != nil {
				return r, err
			}
			delete(states, name)
			return r, writeJSON(statePath(dataDir, storeID), states)
		}
	}
	return Remote{}, fmt.Errorf("store %s has no remote named %q (see \"gitmem remote list\")", storeID, name)
}

// States returns the sync state of a store's remotes, by remote name. It reads files that
// are replaced atomically, so it works while a server syncs.
func States(dataDir, storeID string) (map[string]State, error) {
	states := map[string]State{}
	err := readJSON(statePath(dataDir, storeID), &states)
	return states, err
}

// StoresWithRemotes lists the ids of the stores that have remotes, with the store name
// saved when the last remote was added. A deleted store's remotes are left out (ids are
// never used again).
func StoresWithRemotes(dataDir string) (map[string]string, error) {
	layout := gitstore.Layout{Root: dataDir}
	entries, err := os.ReadDir(layout.RemotesDir())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list remotes: %w", err)
	}
	out := map[string]string{}
	for _, e := range entries {
		id, ok := layout.RemotesFileStore(e.Name())
		if !ok {
			continue
		}
		var c config
		if err := readJSON(layout.RemotesFile(id), &c); err != nil {
			return nil, err
		}
		if _, err := os.Stat(layout.StoreRepo(id)); err != nil {
			continue
		}
		if len(c.Remotes) > 0 {
			out[id] = c.StoreName
		}
	}
	return out, nil
}
