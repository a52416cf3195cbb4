package gitstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// This file serves git pushes over HTTP (httpapi/git.go, gitserve/): the checks of the
// store's metadata that a pushed .gitmem/store.json must pass, and the record of which API key
// pushed which commits.

// StoreFile is the tree path of a store's metadata, as in a clone of its repository.
const StoreFile = storeFile

// ValidateStoreInfo checks store metadata against the rules of the API: a name of 1 to 255
// characters, a description of at most 1,024, at most 16 metadata pairs of bounded size, a
// valid Policy.
func ValidateStoreInfo(info StoreInfo) error {
	if err := validateStoreName(info.Name); err != nil {
		return err
	}
	if err := validateDescription(info.Description); err != nil {
		return err
	}
	if err := validateMetadata(info.Metadata); err != nil {
		return err
	}
	return ValidatePolicy(info.Policy)
}

// ParseStoreFile reads the content of .gitmem/store.json as the catalog does.
func ParseStoreFile(raw []byte) (StoreInfo, error) {
	var info StoreInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return info, invalidf("%s is not valid store metadata: %s", storeFile, err.Error())
	}
	return info, nil
}

// ReceivePush records keyID as the API key that pushes commits over HTTP, before main moves
// to them: the push hook asks for it (gitserve.Request.Accept), and git moves main only if
// it returns nil. The catalog, which applies the commits once main has them, then gives their
// versions made by people (user_actor, from the commit author) keyID too, so that they match
// the api_key_id filter. The record is not in history and survives a rebuild of the catalog.
// A push that then loses the race for main leaves records of commits that main does not
// have, which nothing reads unless those very commits reach main later. With keyID "" there
// is nothing to record. It runs beside the writer, not in it: one catalog transaction, which
// waits for the writer's current group at most.
func (s *Store) ReceivePush(ctx context.Context, commits []string, keyID string) error {
	if err := refuseTrial(ctx, "a push"); err != nil {
		return err
	}
	hs := make([]plumbing.Hash, 0, len(commits))
	for _, c := range commits {
		h, ok := parseHash(c)
		if !ok {
			return invalidf("a pushed commit %q is not a commit hash", c)
		}
		hs = append(hs, h)
	}
	select {
	case <-s.quit:
		return ErrStoreClosed
	default:
	}
	if keyID == "" || len(hs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.updateCatalog(func(ct catTx) error {
		for _, h := range hs {
			if err := ct.setPushKey(h, keyID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return NoSpace(fmt.Errorf("record the key of a push to %s: %w", s.id, err), s.opts.dataDir)
	}
	return nil
}
