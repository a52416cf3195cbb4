// Package webhooks delivers a store's changes to HTTP endpoints: each version of a store,
// read from its history in commit order (as the event stream reads it), is POSTed to every
// webhook that wants it, signed as the Standard Webhooks specification says, retried with
// backoff until the receiver takes it, and only then is the next one sent. How far each
// webhook got in each store is kept in the data directory, so nothing is lost while the
// receiver or gitmem is down.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/durable"
)

// Events are the event types a webhook can ask for.
var Events = []string{"memory.created", "memory.modified", "memory.deleted", "memory.redacted",
	"store.created", "store.updated", "store.archived", "proposal.opened", "proposal.approved", "proposal.rejected", "proposal.superseded"}

// Limits of the registry.
const (
	MaxHooks = 100
	// MaxStoreHooks bounds the webhooks of one store, so that a key limited to a store
	// cannot take all MaxHooks and leave none to the others.
	MaxStoreHooks = 10
	MaxURLBytes   = 2048
	keptDelivered = 100 // entries of a webhook's delivery log
)

// Hook is a webhook: where events go, which, of which store (all if StoreID is ""), and the
// secret that signs them.
type Hook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"` // empty: all
	StoreID   string    `json:"memory_store_id,omitempty"`
	Secret    string    `json:"secret"` // whsec_ and base64 of 24 random bytes
	Disabled  bool      `json:"disabled,omitempty"`
	CreatedBy string    `json:"created_by,omitempty"` // the API key that made it
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Wants tells whether the hook takes events of type typ from store storeID.
func (h Hook) Wants(storeID, typ string) bool {
	return !h.Disabled && (h.StoreID == "" || h.StoreID == storeID) && (len(h.Events) == 0 || slices.Contains(h.Events, typ))
}

// Delivery is one entry of a webhook's delivery log: an event, and how sending it went.
type Delivery struct {
	EventID   string    `json:"event_id"`
	StoreID   string    `json:"memory_store_id"`
	Type      string    `json:"event"`
	Status    int       `json:"status"` // the receiver's last HTTP status; 0 if it did not answer
	Attempts  int       `json:"attempts"`
	Delivered bool      `json:"delivered"`
	LastError string    `json:"last_error,omitempty"`
	At        time.Time `json:"at"`
}

// state is a webhook's file in the data directory: the last event delivered (or skipped) in
// each store, and the delivery log, newest first.
type state struct {
	Cursors    map[string]string `json:"cursors"`
	Deliveries []Delivery        `json:"deliveries"`
}

// Registry is the webhooks of a data directory.
type Registry struct {
	layout gitstore.Layout
	// AllowPrivate lets webhooks deliver to loopback and private addresses (an operator's
	// choice: gitmem serve --allow-private-webhooks).
	AllowPrivate bool

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change of the list
}

// Open returns the registry of the data directory at layout.
func Open(layout gitstore.Layout) *Registry {
	return &Registry{layout: layout, changed: make(chan struct{})}
}

func invalid(format string, args ...any) error {
	return &gitstore.Error{Kind: gitstore.KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// ErrNoHook is the error for a webhook id that is not in the registry.
func noHook(id string) error {
	return &gitstore.Error{Kind: gitstore.KindNotFound, Message: fmt.Sprintf("no webhook %q", id)}
}

func (r *Registry) load() ([]Hook, error) {
	raw, err := os.ReadFile(r.layout.WebhooksFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var hooks []Hook
	if err := json.Unmarshal(raw, &hooks); err != nil {
		return nil, fmt.Errorf("read %s: %w", r.layout.WebhooksFile(), err)
	}
	return hooks, nil
}

func (r *Registry) save(hooks []Hook) error {
	raw, err := json.MarshalIndent(hooks, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(r.layout.WebhooksFile(), raw, 0o600); err != nil {
		return err
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

// Changed is closed when the list of webhooks next changes.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// List returns every webhook.
func (r *Registry) List() ([]Hook, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.load()
}

// Get returns one webhook.
func (r *Registry) Get(id string) (Hook, error) {
	hooks, err := r.List()
	if err != nil {
		return Hook{}, err
	}
	for _, h := range hooks {
		if h.ID == id {
			return h, nil
		}
	}
	return Hook{}, noHook(id)
}

// Input is what makes or changes a webhook; nil fields are left as they are.
type Input struct {
	URL      *string
	Events   *[]string
	StoreID  *string
	Disabled *bool
}

// Create adds a webhook. Its cursors start at each store's current last version: it gets
// what happens from now on. starts gives the latest version id of each store.
func (r *Registry) Create(ctx context.Context, in Input, createdBy string, starts map[string]string) (Hook, error) {
	h := Hook{ID: gitstore.NewID("whk_", time.Now()), CreatedBy: createdBy, CreatedAt: time.Now().UTC()}
	h.UpdatedAt = h.CreatedAt
	if in.URL == nil {
		return Hook{}, invalid("a webhook needs a url")
	}
	if err := r.apply(ctx, &h, in); err != nil {
		return Hook{}, err
	}
	secret := make([]byte, 24)
	rand.Read(secret)
	h.Secret = "whsec_" + base64.StdEncoding.EncodeToString(secret)
	r.mu.Lock()
	defer r.mu.Unlock()
	hooks, err := r.load()
	if err != nil {
		return Hook{}, err
	}
	if len(hooks) >= MaxHooks {
		return Hook{}, invalid("there are %d webhooks already, the most a data directory keeps; delete one first", MaxHooks)
	}
	if err := roomInStore(hooks, h.StoreID, ""); err != nil {
		return Hook{}, err
	}
	st := state{Cursors: map[string]string{}}
	for id, v := range starts {
		if h.StoreID == "" || h.StoreID == id {
			st.Cursors[id] = v
		}
	}
	if err := r.saveState(h.ID, st); err != nil {
		return Hook{}, err
	}
	return h, r.save(append(hooks, h))
}

// Update changes a webhook.
func (r *Registry) Update(ctx context.Context, id string, in Input) (Hook, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hooks, err := r.load()
	if err != nil {
		return Hook{}, err
	}
	for i := range hooks {
		if hooks[i].ID != id {
			continue
		}
		h := hooks[i]
		if err := r.apply(ctx, &h, in); err != nil {
			return Hook{}, err
		}
		if h.StoreID != hooks[i].StoreID {
			if err := roomInStore(hooks, h.StoreID, h.ID); err != nil {
				return Hook{}, err
			}
		}
		h.UpdatedAt = time.Now().UTC()
		hooks[i] = h
		return h, r.save(hooks)
	}
	return Hook{}, noHook(id)
}

// roomInStore refuses a webhook of store storeID (none for "", every store's) if the store
// has MaxStoreHooks already, but for the webhook except.
func roomInStore(hooks []Hook, storeID, except string) error {
	if storeID == "" {
		return nil
	}
	n := 0
	for _, o := range hooks {
		if o.StoreID == storeID && o.ID != except {
			n++
		}
	}
	if n >= MaxStoreHooks {
		return invalid("memory store %s has %d webhooks already, the most one store keeps; delete one first", storeID, MaxStoreHooks)
	}
	return nil
}

// Delete removes a webhook and its delivery state.
func (r *Registry) Delete(id string) (Hook, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	hooks, err := r.load()
	if err != nil {
		return Hook{}, err
	}
	for i, h := range hooks {
		if h.ID == id {
			if err := r.save(slices.Delete(hooks, i, i+1)); err != nil {
				return Hook{}, err
			}
			os.Remove(r.layout.WebhookStateFile(id))
			return h, nil
		}
	}
	return Hook{}, noHook(id)
}

// apply checks in and sets it on h.
func (r *Registry) apply(ctx context.Context, h *Hook, in Input) error {
	if in.URL != nil {
		if err := r.checkURL(ctx, *in.URL); err != nil {
			return err
		}
		h.URL = *in.URL
	}
	if in.Events != nil {
		for _, e := range *in.Events {
			if !slices.Contains(Events, e) {
				return invalid("unknown event %q: a webhook takes %v", e, Events)
			}
		}
		h.Events = slices.Clone(*in.Events)
	}
	if in.StoreID != nil {
		h.StoreID = *in.StoreID
	}
	if in.Disabled != nil {
		h.Disabled = *in.Disabled
	}
	return nil
}

// checkURL refuses a URL that is not http(s), too long, or (unless AllowPrivate) names a host
// on loopback or a private range. Delivery checks the address it connects to again.
func (r *Registry) checkURL(ctx context.Context, raw string) error {
	if len(raw) > MaxURLBytes {
		return invalid("a webhook url is at most %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return invalid("a webhook url must be an http or https URL with a host and no user or password, got %q", raw)
	}
	if r.AllowPrivate {
		return nil
	}
	return checkHost(ctx, u.Hostname())
}

// State returns a webhook's cursors and delivery log.
func (r *Registry) state(id string) (state, error) {
	st := state{Cursors: map[string]string{}}
	raw, err := os.ReadFile(r.layout.WebhookStateFile(id))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, err
	}
	if st.Cursors == nil {
		st.Cursors = map[string]string{}
	}
	return st, nil
}

func (r *Registry) saveState(id string, st state) error {
	if err := os.MkdirAll(filepath.Dir(r.layout.WebhookStateFile(id)), 0o700); err != nil {
		return err
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return durable.WriteFile(r.layout.WebhookStateFile(id), raw, 0o600)
}

// Deliveries returns a webhook's delivery log, newest first.
func (r *Registry) Deliveries(id string) ([]Delivery, error) {
	if _, err := r.Get(id); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.state(id)
	return st.Deliveries, err
}

// cursor returns how far webhook id has got in store storeID, and whether it has a cursor
// there at all.
func (r *Registry) cursor(id, storeID string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.state(id)
	return st.Cursors[storeID], err
}

// record moves webhook id's cursor in store storeID to event (durably: a delivery is not
// made twice after a restart, save for the one in flight when gitmem stopped), and logs d if
// it is not nil.
func (r *Registry) record(id, storeID, event string, d *Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.state(id)
	if err != nil {
		return err
	}
	st.Cursors[storeID] = event
	if d != nil {
		st.log(*d)
	}
	return r.saveState(id, st)
}

// log puts d at the top of the delivery log, in place of the entry of its failed attempts.
func (st *state) log(d Delivery) {
	if len(st.Deliveries) > 0 && st.Deliveries[0].EventID == d.EventID && !st.Deliveries[0].Delivered {
		st.Deliveries[0] = d
	} else {
		st.Deliveries = append([]Delivery{d}, st.Deliveries...)
	}
	if len(st.Deliveries) > keptDelivered {
		st.Deliveries = st.Deliveries[:keptDelivered]
	}
}

// logAttempt records a failed attempt in the delivery log, without moving the cursor.
func (r *Registry) logAttempt(id string, d Delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.state(id)
	if err != nil {
		return err
	}
	st.log(d)
	return r.saveState(id, st)
}
