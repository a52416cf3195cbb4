package gitstore

import (
	"context"
	"time"
)

// The history is the event log: every change is a version, numbered in the order its
// commit reached main (the catalog's ver bucket). A feed of changes reads that order after a
// cursor, which is a version id, the one name of a version that survives restarts, gc and a
// rebuild of the catalog (the numbers are the catalog's own).

// ErrCursorGone is the error of VersionsAfter when the cursor's version is not in the
// history (a forced push replaced the history it was in).
var ErrCursorGone = &Error{Kind: KindNotFound, Message: "the cursor's version is not in the store's history"}

// VersionsAfter returns, oldest first, at most limit versions that came after the version
// with id after ("" for the first versions of the store), and whether more follow.
func (s *Store) VersionsAfter(ctx context.Context, after string, limit int) ([]Version, bool, error) {
	var out []Version
	more := false
	err := s.view(ctx, func(ct catTx) error {
		from := uint64(0)
		if after != "" {
			k := ct.versionKey(after)
			if k == nil {
				return ErrCursorGone
			}
			from = seqOf(k) + 1
		}
		for v, err := range ct.versionsFrom(from) {
			if err != nil {
				return err
			}
			if len(out) == limit {
				more = true
				return nil
			}
			out = append(out, versionFrom(s.id, v))
		}
		return nil
	})
	return out, more, err
}

// VersionBefore returns the id of the last version made before t ("" if none was), as a
// cursor from which a feed starts at t.
func (s *Store) VersionBefore(ctx context.Context, t time.Time) (string, error) {
	ms := t.UnixMilli()
	id := ""
	err := s.view(ctx, func(ct catTx) error {
		for v, err := range ct.versionsDown(everyVersion) {
			if err != nil {
				return err
			}
			if v.At < ms {
				id = v.ID
				return nil
			}
		}
		return nil
	})
	return id, err
}
