package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// A store is named by its id or by its name. Names are unique among the stores of a data
// directory: CreateStore and RenameStore refuse a name that another store has (archived
// ones included). Names that arrive through history (a push or a sync of
// .gitmem/store.json, an import) are not checked, so two stores may still share one; naming
// such a store by that name is refused with their ids, and renaming one resolves it.

// ErrNameTaken is the error (KindConflict) of a create or rename to a name another store has.
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

// checkNameFree refuses name if a store other than self has it. Hold d.names.
func (d *DataDir) checkNameFree(ctx context.Context, name, self string) error {
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

// CheckNameFree refuses name if a store other than id has it: for a push that renames store
// id through its .gitmem/store.json (UpdateStore checks the API's renames). Between this
// check and the push moving main, an API rename could still take the name.
func (d *DataDir) CheckNameFree(ctx context.Context, name, id string) error {
	d.names.Lock()
	defer d.names.Unlock()
	return d.checkNameFree(ctx, name, id)
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
