package gitstore

import (
	"context"
	"encoding/json"
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

// VersionMark returns a mark of the catalog's newest version: the versions that later commits
// make come after it. Take it before a push, and give it to AttributePush after.
func (s *Store) VersionMark() uint64 {
	var n uint64
	s.readCatalog(func(ct catTx) error { n = ct.versionCount(); return nil })
	return n
}

// AttributePush catches the catalog up with main (after a push) and records keyID as the API
// key behind the pushed commits: their versions made by people (user_actor, from the commit
// author) then also match the api_key_id filter. The versions are those after mark (see
// VersionMark) whose commit is one of commits, so commits that never reached main (a push
// that lost the race for the ref) change nothing. The record survives a rebuild of the
// catalog. It returns how many versions it attributed.
func (s *Store) AttributePush(ctx context.Context, mark uint64, commits []string, keyID string) (int, error) {
	set := map[string]bool{}
	for _, c := range commits {
		if _, ok := parseHash(c); ok {
			set[c] = true
		}
	}
	n := 0
	err := s.runTask(ctx, func() error {
		if err := s.catchUp(nil); err != nil {
			return err
		}
		if keyID == "" || len(set) == 0 {
			return nil
		}
		return s.updateCatalog(func(ct catTx) error {
			for _, c := range commits { // a redaction may have rewritten the pushed commits since
				if h, ok := parseHash(c); ok {
					set[ct.rewrittenTo(h).String()] = true
				}
			}
			var updates []verRec
			for v, err := range ct.versionsFrom(mark + 1) {
				if err != nil {
					return err
				}
				if set[v.Commit] && v.ActorType == UserActor && v.APIKey == "" {
					v.APIKey = keyID
					updates = append(updates, v)
				}
			}
			for _, v := range updates {
				if err := ct.putVersion(v); err != nil {
					return err
				}
				h, _ := parseHash(v.Commit)
				if err := ct.setPushKey(h, keyID); err != nil {
					return err
				}
			}
			n = len(updates)
			return nil
		})
	})
	return n, err
}
