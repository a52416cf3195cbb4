package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// A store is named by its id or by its name. Names are unique among the stores of a data
// directory: CreateStore and UpdateStore refuse a name that another store has (archived
// ones included), and so does a push to main that renames its store (ReserveName, which
// holds the name until main shows it). Names that arrive through other history (a sync of
// .gitmem/store.json, an import) are not checked, so two stores may still share one; naming
// such a store by that name is refused with their ids, and renaming one resolves it.

// ErrNameTaken is the error (KindConflict) of a create or rename to a name another store has,
// or that a push to another store holds (ReserveName).
var ErrNameTaken = errors.New("the memory store name is taken")

// ResolveStoreRef finds the id of the store named by ref among stores: ref is an id, or the
// name of exactly one of them.
func ResolveStoreRef(stores []StoreInfo, ref string) (string, error) {
	if strings.HasPrefix(ref, StorePrefix) {
		return ref, nil
	}
	var ids []string
	for _, info := range stores {
		if info.Name == ref {
			ids = append(ids, info.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", &Error{Kind: KindNotFound, Err: ErrNoStore,
			Message: fmt.Sprintf("no store with id or name %q", ref)}
	case 1:
		return ids[0], nil
	default:
		return "", &Error{Kind: KindConflict, Message: fmt.Sprintf(
			"%d stores are named %q; name one by id (%s), or rename all but one", len(ids), ref, strings.Join(ids, ", "))}
	}
}

// ResolveStore finds the id of the store named by ref: an id, or a store's name.
func (d *DataDir) ResolveStore(ctx context.Context, ref string) (string, error) {
	if strings.HasPrefix(ref, StorePrefix) {
		if !validID(StorePrefix, ref) {
			return "", noStore(ref)
		}
		return ref, nil
	}
	stores, err := d.allStores(ctx)
	if err != nil {
		return "", err
	}
	return ResolveStoreRef(stores, ref)
}

// allStores lists every store, archived ones included.
func (d *DataDir) allStores(ctx context.Context) ([]StoreInfo, error) {
	var all []StoreInfo
	for cursor := ""; ; {
		page, err := d.ListStores(ctx, StoreListOptions{IncludeArchived: true, Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Stores...)
		if cursor = page.NextCursor; cursor == "" {
			return all, nil
		}
	}
}

// checkNameFree refuses name if a store other than self has it, or a push to another store
// holds it (ReserveName). Hold d.names.
func (d *DataDir) checkNameFree(ctx context.Context, name, self string) error {
	if h, ok := d.held[name]; ok && h.id != self {
		// Not which store: a key limited to one store must not learn the others' ids.
		return &Error{Kind: KindConflict, Err: ErrNameTaken, Message: fmt.Sprintf(
			"the name %q is being given to another memory store by a push; choose another name", name)}
	}
	stores, err := d.allStores(ctx)
	if err != nil {
		return err
	}
	for _, info := range stores {
		if info.Name == name && info.ID != self {
			return &Error{Kind: KindConflict, Err: ErrNameTaken, Message: fmt.Sprintf(
				"a memory store named %q exists already (archived ones count too); choose another name", name)}
		}
	}
	return nil
}

// heldName is a name that pushes to store id hold: n holds not released yet.
type heldName struct {
	id string
	n  int
}

// NameHold is a name that a push holds for its store from the check that the name is free
// until the push has moved main (ReserveName): then main's .gitmem/store.json shows the
// name to every later check, since reading a store's info catches its catalog up with main.
type NameHold struct {
	d    *DataDir
	name string
	once sync.Once
}

// ReserveName refuses name if a store other than id has it or a push to another store holds
// it (ErrNameTaken, KindConflict), else holds it for store id until the hold is released: a
// push that renames store id through its .gitmem/store.json asks for it before git moves
// main, and releases it once git is done, whether or not main moved. Until then
// CreateStore, UpdateStore and other pushes refuse the name (checkNameFree), so no API call
// can take it between this check and the push moving main. Pushes to store id itself may
// hold the same name at once. The hold lives in memory: it ends with the process.
func (d *DataDir) ReserveName(ctx context.Context, name, id string) (*NameHold, error) {
	d.names.Lock()
	defer d.names.Unlock()
	if err := d.checkNameFree(ctx, name, id); err != nil {
		return nil, err
	}
	if d.held == nil {
		d.held = map[string]heldName{}
	}
	h := d.held[name]
	d.held[name] = heldName{id: id, n: h.n + 1}
	return &NameHold{d: d, name: name}, nil
}

// Release gives the name up; it may be called more than once, and on nil.
func (h *NameHold) Release() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		h.d.names.Lock()
		defer h.d.names.Unlock()
		if held := h.d.held[h.name]; held.n > 1 {
			h.d.held[h.name] = heldName{id: held.id, n: held.n - 1}
		} else {
			delete(h.d.held, h.name)
		}
	})
}

// ReleaseAfter gives the name up after delay: for a push whose git may still move main
// after its request has ended (gitserve.Served.Killed).
func (h *NameHold) ReleaseAfter(delay time.Duration) {
	if h != nil {
		time.AfterFunc(delay, h.Release)
	}
}

// UpdateStore changes a store's name, description, metadata or policy (Store.UpdateInfo),
// refusing a name that another store has.
func (d *DataDir) UpdateStore(ctx context.Context, id string, p StorePatch) (StoreInfo, error) {
	s, err := d.Store(ctx, id)
	if err != nil {
		return StoreInfo{}, err
	}
	if p.Name == nil {
		return s.UpdateInfo(ctx, p)
	}
	d.names.Lock()
	defer d.names.Unlock()
	if err := d.checkNameFree(ctx, *p.Name, id); err != nil {
		return StoreInfo{}, err
	}
	return s.UpdateInfo(ctx, p)
}
