package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// A folder is not an object of the data model: it is the path prefix that the memories
// below it share, as a directory is in git. DeletePath and MovePath act on a memory or on
// a whole folder, the way a file system's rm -r and mv do, so that the memory tool can
// offer those commands atomically: every memory changed gets its own commit and version,
// and the group of commits is published with one ref update, so that a reader sees all of
// them or none.

// DeletePathInput deletes the memory at Path, or every memory below the folder Path.
type DeletePathInput struct {
	Path  string
	Actor Actor
}

// MovePathInput renames the memory at From to To, or moves every memory below the folder
// From to the same place below To. Memories keep their ids.
type MovePathInput struct {
	From, To string
	Actor    Actor
}

// DeletePath deletes a memory or a folder of memories and returns the versions it made,
// in path order. It returns a KindNotFound error if there is neither.
func (s *Store) DeletePath(ctx context.Context, in DeletePathInput) ([]Version, error) {
	if err := ValidatePath(in.Path); err != nil {
		return nil, err
	}
	if err := validateActor(in.Actor); err != nil {
		return nil, err
	}
	return submitAs(ctx, s, func(b *batch) ([]Version, error) {
		if _, err := b.writableStore(); err != nil {
			return nil, err
		}
		ids, recs, err := b.below(in.Path)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, notFoundf("no memory or folder at %s", in.Path)
		}
		info, err := b.writableStore()
		if err != nil {
			return nil, err
		}
		for _, r := range recs { // all first: a group is done whole or not at all
			if err := b.review(info.Policy, in.Actor, false, r.Path); err != nil {
				return nil, err
			}
		}
		out := make([]Version, 0, len(ids))
		for i, id := range ids {
			res, err := b.put(in.Actor, id, OpDeleted, recs[i].Path, "", nil)
			if err != nil {
				return nil, err
			}
			out = append(out, *res.Version)
		}
		return out, nil
	})
}

// MovePath moves a memory or a folder of memories and returns the memories as moved, in
// the order of their old paths. It fails with a KindNotFound error if From is neither a
// memory nor a folder, with a KindPathConflict error if To is taken by a memory or a folder
// or lies below a memory, and with a KindInvalid error if To is inside the folder From.
func (s *Store) MovePath(ctx context.Context, in MovePathInput) ([]WriteResult, error) {
	if err := ValidatePath(in.From); err != nil {
		return nil, err
	}
	if err := ValidatePath(in.To); err != nil {
		return nil, err
	}
	if err := validateActor(in.Actor); err != nil {
		return nil, err
	}
	return submitAs(ctx, s, func(b *batch) ([]WriteResult, error) {
		if _, err := b.writableStore(); err != nil {
			return nil, err
		}
		// The destination is checked first, so that a taken destination is reported even when
		// the source is missing. A memory may move below its own path (/a to /a/b): only the
		// memory being moved blocks that.
		if err := b.checkPathFree(b.root, in.To); err != nil {
			var e *Error
			below := strings.HasPrefix(in.To, in.From+"/")
			if !errors.As(err, &e) || e.Kind != KindPathConflict || e.ConflictingPath != in.From || !below {
				return nil, err
			}
		}
		ids, recs, err := b.below(in.From)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, notFoundf("no memory or folder at %s", in.From)
		}
		folder := len(ids) > 1 || recs[0].Path != in.From
		if folder && strings.HasPrefix(in.To, in.From+"/") {
			return nil, invalidf("cannot move the folder %s into itself (%s)", in.From, in.To)
		}
		// The names the move brings are checked against the tree without the memories moved,
		// so that a change of case only (/Notes to /notes) is a move like any other.
		without := b.root
		for _, r := range recs {
			if without, err = b.setFile(without, r.Path, nil); err != nil {
				return nil, err
			}
		}
		dests := make([]string, len(ids))
		for i, r := range recs {
			dests[i] = in.To + strings.TrimPrefix(r.Path, in.From)
			err := ValidatePath(dests[i])
			if err == nil {
				err = b.checkNewNames(without, dests[i])
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Kind != KindInvalid || !folder {
					return nil, err
				}
				return nil, invalidf("moving %s to %s: %s", r.Path, dests[i], e.Message)
			}
		}
		info, err := b.writableStore()
		if err != nil {
			return nil, err
		}
		for i, r := range recs { // all first: a group is done whole or not at all
			if err := b.review(info.Policy, in.Actor, false, r.Path, dests[i]); err != nil {
				return nil, err
			}
		}
		out := make([]WriteResult, 0, len(ids))
		for i, id := range ids {
			content, err := b.content(recs[i])
			if err != nil {
				return nil, err
			}
			res, err := b.put(in.Actor, id, OpModified, recs[i].Path, dests[i], &content)
			if err != nil {
				return nil, err
			}
			out = append(out, res)
		}
		return out, nil
	})
}

// below returns the live memory at path, or else the live memories in the folder path, in
// path order, as of the batch.
func (b *batch) below(path string) ([]string, []memRec, error) {
	id, rec, ok, err := b.ct.live(path)
	if err != nil {
		return nil, nil, b.fail(err)
	}
	if ok {
		return []string{id}, []memRec{rec}, nil
	}
	var ids []string
	var recs []memRec
	for k, v := range b.ct.pathsBelow(path + "/") {
		rec, ok, err := b.ct.memory(v)
		if err != nil {
			return nil, nil, b.fail(err)
		}
		if !ok {
			return nil, nil, b.fail(fmt.Errorf("catalog path %s names unknown memory %s", k, v))
		}
		ids = append(ids, v)
		recs = append(recs, rec)
	}
	return ids, recs, nil
}
