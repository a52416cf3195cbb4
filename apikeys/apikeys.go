// Package apikeys keeps gitmem's API keys: their ids, names, access and the SHA-256 of
// their secrets, in one JSON file of the data directory. A secret is shown once, when the
// key is created, and never stored.
package apikeys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
)

// Access is what a key may do.
type Access string

// The kinds of access.
const (
	ReadWrite Access = "read_write"
	ReadOnly  Access = "read_only"
	// Propose: the key reads, and its memory writes go to a proposal of the store (package
	// proposals) for a person to approve, instead of to main.
	Propose Access = "propose"
)

// Accesses are the kinds of access, in the order that messages name them.
var Accesses = []Access{ReadWrite, ReadOnly, Propose}

// AccessNames names Accesses for a message: "read_write, read_only or propose".
func AccessNames() string {
	names := make([]string, len(Accesses))
	for i, a := range Accesses {
		names[i] = string(a)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Valid tells whether a is one of Accesses.
func (a Access) Valid() bool { return slices.Contains(Accesses, a) }

// secretPrefix starts every secret, so that a leaked one is easy to recognize and scan for.
const secretPrefix = "gitmem_"

// Key is one API key. The secret is not kept: only its SHA-256. Secrets are 256 random bits,
// so a fast hash is enough; a slow password hash would only slow every request down.
type Key struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Access    Access     `json:"access"`
	StoreID   string     `json:"store_id,omitempty"` // if set, the key works for this store only
	Hint      string     `json:"hint"`               // the secret's first characters, to tell keys apart
	Hash      string     `json:"sha256"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Active reports whether the key has not been revoked.
func (k Key) Active() bool { return k.RevokedAt == nil }

// Keys is the key file of a data directory. The CLI changes it while a server may be
// running: every change takes a file lock and replaces the file atomically, and the server
// rereads the file when it changed.
type Keys struct {
	path string

	mu      sync.Mutex // guards the following
	keys    []Key
	modTime time.Time
	size    int64
}

// Open reads the key file of the data directory dir (there may be none yet).
func Open(dir string) (*Keys, error) {
	k := &Keys{path: gitstore.Layout{Root: dir}.KeysFile()}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open keys: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.reloadLocked(true); err != nil {
		return nil, err
	}
	return k, nil
}

// reloadLocked rereads the file if it changed since it was last read.
func (k *Keys) reloadLocked(force bool) error {
	fi, err := os.Stat(k.path)
	if os.IsNotExist(err) {
		k.keys, k.modTime, k.size = nil, time.Time{}, 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("read keys: %w", err)
	}
	if !force && fi.ModTime().Equal(k.modTime) && fi.Size() == k.size {
		return nil
	}
	b, err := os.ReadFile(k.path)
	if err != nil {
		return fmt.Errorf("read keys: %w", err)
	}
	var keys []Key
	if err := json.Unmarshal(b, &keys); err != nil {
		return fmt.Errorf("read keys from %s: %w", k.path, err)
	}
	k.keys, k.modTime, k.size = keys, fi.ModTime(), fi.Size()
	return nil
}

// current returns the keys as the file has them now.
func (k *Keys) current() ([]Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.reloadLocked(false); err != nil {
		return nil, err
	}
	return append([]Key(nil), k.keys...), nil
}

// List returns every key, revoked ones included, oldest first.
func (k *Keys) List() ([]Key, error) { return k.current() }

// AnyActive reports whether at least one key is not revoked: then every request needs one.
func (k *Keys) AnyActive() (bool, error) {
	keys, err := k.current()
	if err != nil {
		return false, err
	}
	for _, key := range keys {
		if key.Active() {
			return true, nil
		}
	}
	return false, nil
}

// InForceSince reports whether any key is active, or was created at or after t: a key
// created while a server runs turns keys on for it even if it is revoked before a request
// comes.
func (k *Keys) InForceSince(t time.Time) (bool, error) {
	keys, err := k.current()
	if err != nil {
		return false, err
	}
	for _, key := range keys {
		if key.Active() || !key.CreatedAt.Before(t) {
			return true, nil
		}
	}
	return false, nil
}

// Authenticate returns the active key whose secret this is.
func (k *Keys) Authenticate(secret string) (Key, bool, error) {
	keys, err := k.current()
	if err != nil {
		return Key{}, false, err
	}
	sum := sha256.Sum256([]byte(secret))
	h := hex.EncodeToString(sum[:])
	for _, key := range keys {
		if key.Hash == h && key.Active() {
			return key, true, nil
		}
	}
	return Key{}, false, nil
}

// Create makes a key and returns it with its secret, which is shown this once.
func (k *Keys) Create(name string, access Access, storeID string) (Key, string, error) {
	if strings.TrimSpace(name) == "" {
		return Key{}, "", &gitstore.Error{Kind: gitstore.KindInvalid, Message: "a key needs a name (--name), to tell it apart later"}
	}
	if !access.Valid() {
		return Key{}, "", &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf("access must be %s, got %q", AccessNames(), access)}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return Key{}, "", err
	}
	secret := secretPrefix + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(secret))
	now := time.Now().UTC()
	key := Key{ID: gitstore.NewID("apikey_", now), Name: name, Access: access, StoreID: storeID,
		Hint: secret[:len(secretPrefix)+4], Hash: hex.EncodeToString(sum[:]), CreatedAt: now}
	err := k.update(func(keys []Key) ([]Key, error) { return append(keys, key), nil })
	return key, secret, err
}

// Revoke revokes the key with this id, or the one active key with this name.
func (k *Keys) Revoke(ref string) (Key, error) {
	var revoked Key
	err := k.update(func(keys []Key) ([]Key, error) {
		idx := -1
		for i, key := range keys {
			if key.ID == ref || key.Name == ref && key.Active() {
				if idx >= 0 {
					return nil, &gitstore.Error{Kind: gitstore.KindConflict, Message: fmt.Sprintf("more than one active key is named %q; revoke it by id", ref)}
				}
				idx = i
			}
		}
		if idx < 0 {
			return nil, &gitstore.Error{Kind: gitstore.KindNotFound, Message: fmt.Sprintf("no key with id or name %q (see \"gitmem keys list\")", ref)}
		}
		if keys[idx].Active() {
			now := time.Now().UTC()
			keys[idx].RevokedAt = &now
		}
		revoked = keys[idx]
		return keys, nil
	})
	return revoked, err
}

// update changes the key file under its lock: read, change, write to a temporary file,
// fsync, rename, fsync the directory.
func (k *Keys) update(change func([]Key) ([]Key, error)) error {
	lock, err := os.OpenFile(k.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("lock keys: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock keys: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.reloadLocked(true); err != nil {
		return err
	}
	keys, err := change(append([]Key(nil), k.keys...))
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(k.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write keys: %w", err)
	}
	return k.reloadLocked(true)
}
