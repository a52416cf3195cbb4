package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
)

// Info returns the store's metadata.
func (s *Store) Info(ctx context.Context) (StoreInfo, error) {
	var info StoreInfo
	err := s.view(ctx, func(ct catTx) error {
		var err error
		info, err = ct.storeInfo()
		return err
	})
	return info, err
}

// UpdateInfo changes the store's name, description, metadata or policy, as one commit of
// .gitmem/store.json. An archived store refuses it. A patch that changes nothing makes no
// commit and leaves updated_at alone.
func (s *Store) UpdateInfo(ctx context.Context, p StorePatch) (StoreInfo, error) {
	if p.Name != nil {
		if err := validateStoreName(*p.Name); err != nil {
			return StoreInfo{}, err
		}
	}
	if p.Description != nil {
		if err := validateDescription(*p.Description); err != nil {
			return StoreInfo{}, err
		}
	}
	if err := validateActor(p.Actor); err != nil {
		return StoreInfo{}, err
	}
	return submitAs(ctx, s, func(b *batch) (StoreInfo, error) {
		info, err := b.writableStore()
		if err != nil {
			return StoreInfo{}, err
		}
		next := info
		next.Metadata = map[string]string{}
		for k, v := range info.Metadata {
			next.Metadata[k] = v
		}
		if p.Name != nil {
			next.Name = *p.Name
		}
		if p.Description != nil {
			next.Description = *p.Description
		}
		for k, v := range p.Metadata {
			if v == nil {
				delete(next.Metadata, k)
			} else {
				next.Metadata[k] = *v
			}
		}
		if err := validateMetadata(next.Metadata); err != nil {
			return StoreInfo{}, err
		}
		next.Policy = p.Policy.apply(info.Policy)
		if err := ValidatePolicy(next.Policy); err != nil {
			return StoreInfo{}, err
		}
		if err := info.Policy.ReviewChange(next.Policy, p.Actor); err != nil {
			return StoreInfo{}, err
		}
		if sameInfo(info, next) {
			return info, nil
		}
		next.UpdatedAt = b.now()
		return next, b.commitStoreInfo(next, "update store "+fmt.Sprintf("%q", next.Name), "updated", p.Actor)
	})
}

func sameInfo(a, b StoreInfo) bool {
	if a.Name != b.Name || a.Description != b.Description || !a.Policy.Equal(b.Policy) || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Archive makes the store read-only, for good. Archiving an archived store changes nothing.
func (s *Store) Archive(ctx context.Context, actor Actor) (StoreInfo, error) {
	if err := validateActor(actor); err != nil {
		return StoreInfo{}, err
	}
	return submitAs(ctx, s, func(b *batch) (StoreInfo, error) {
		info, err := b.ct.storeInfo()
		if err != nil {
			return StoreInfo{}, b.fail(err)
		}
		if info.ArchivedAt != nil {
			return info, nil
		}
		t := b.now()
		info.ArchivedAt = &t
		return info, b.commitStoreInfo(info, "archive store "+fmt.Sprintf("%q", info.Name), "archived", actor)
	})
}

func encodeStoreInfo(info StoreInfo) ([]byte, error) {
	info.CreatedAt, info.UpdatedAt = info.CreatedAt.UTC(), info.UpdatedAt.UTC()
	if info.Metadata == nil {
		info.Metadata = map[string]string{}
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode store metadata: %w", err)
	}
	return append(b, '\n'), nil
}

func (b *batch) commitStoreInfo(info StoreInfo, subject, op string, actor Actor) error {
	raw, err := encodeStoreInfo(info)
	if err != nil {
		return b.fail(err)
	}
	content := string(raw)
	root, err := b.setFile(b.root, "/"+storeFile, &content)
	if err != nil {
		return err
	}
	t := trailers{{trailerStore, info.ID}, {trailerStoreOp, op}}
	return b.commit(root, subject, append(t, actorTrailers(actor)...), actor, b.now())
}
