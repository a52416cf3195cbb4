package odb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// recover makes durable what the journal's records hold, at Open. After a crash of the
// process the packs and main are as Publish left them (the page cache survives); after a
// power loss a pack placed without fsync may be missing, cut short or zeroed (Open has
// removed those: packcheck.go), and main may be older or garbage. So the objects of every
// record are installed again as one durable pack (duplicate objects across packs are
// harmless in git), and main is moved to the last record's commit unless it is already there
// or past it (a git push may have landed on top).
func (r *Repo) recover(recs []record) error {
	if len(recs) == 0 {
		return nil
	}
	fault("recover")
	dir := filepath.Join(r.path, "objects", "pack")
	// The records' packs that a power loss damaged are gone already (removeBrokenPacks);
	// the intact ones go once the pack made here, which holds all their objects, is durable.
	// One pack for all of them, so that recovery adds one pack, not one per record.
	// Once each: two records may hold the same object (a memory given content that another
	// group wrote, a folder made again), and an index that names one twice is refused.
	var objs []plumbing.EncodedObject
	seen := map[plumbing.Hash]bool{}
	for _, rec := range recs {
		got, err := packObjects(rec.pack)
		if err != nil {
			return fmt.Errorf("recover journal record %d: %w", rec.seq, err)
		}
		for _, o := range got {
			if h := o.Hash(); !seen[h] {
				seen[h] = true
				objs = append(objs, o)
			}
		}
	}
	if len(objs) > 0 {
		p, err := encodePack(objs)
		if err != nil {
			return err
		}
		take := func() (*os.File, error) { return os.CreateTemp(dir, "tmp_recover_") }
		if err := r.placePack(p, true, take); err != nil {
			return err
		}
		made := p.base(dir)
		for _, rec := range recs {
			if len(rec.pack) < 32 {
				continue
			}
			base := filepath.Join(dir, "pack-"+plumbing.Hash(rec.pack[len(rec.pack)-20:]).String())
			if base == made {
				continue
			}
			for _, ext := range []string{".idx", ".pack"} {
				if err := os.Remove(base + ext); err != nil && !os.IsNotExist(err) {
					return fmt.Errorf("recover journal: %w", err)
				}
			}
		}
	}
	if err := r.reload(); err != nil {
		return err
	}
	last := recs[len(recs)-1].new
	if err := r.recoverRef(recs, last); err != nil {
		return err
	}
	if err := r.syncRef(); err != nil {
		return err
	}
	slog.Info("finished journaled writes after a crash", "repo", r.path, "records", len(recs), "main", last)
	return nil // Open then overwrites the journal (clean)
}

// recoverRef moves main to last unless main already holds it.
func (r *Repo) recoverRef(recs []record, last plumbing.Hash) error {
	r.removeStaleLock(recs)
	cur, err := r.ReadRef()
	if err == nil && cur == last {
		return nil
	}
	if err == nil && !cur.IsZero() {
		if _, oerr := r.Object(cur); oerr == nil {
			// Behind the journal (the usual case after a power loss) is the short walk.
			behind, berr := r.reaches(last, cur)
			if berr != nil {
				return fmt.Errorf("recover journal: %w", berr)
			}
			if !behind {
				if ok, _ := r.reaches(cur, last); !ok {
					// main went elsewhere (a forced push): that move came after the journal's.
					slog.Warn("main does not contain the journal's last commit; leaving it", "repo", r.path, "main", cur, "journal", last)
				}
				return nil // past the journal (pushed on top), or elsewhere
			}
		}
	}
	l, err := r.LockRef()
	if err != nil {
		return err
	}
	defer l.Release()
	return l.Commit(last)
}

// removeStaleLock removes a main.lock that Publish left when the process died between
// writing it and making it main, or between the exchange that made it main and moving main's
// old file away (moveRef): empty, or holding one of the journal's commits, new or old.
func (r *Repo) removeStaleLock(recs []record) {
	lock := r.mainRef + ".lock"
	b, err := os.ReadFile(lock)
	if err != nil {
		return
	}
	h, ok := ParseHash(strings.TrimSpace(string(b)))
	stale := len(bytes.TrimSpace(b)) == 0
	for _, rec := range recs {
		stale = stale || (ok && (h == rec.new || h == rec.old))
	}
	if stale {
		os.Remove(lock)
	}
}

// maxWalk bounds the commits reaches visits.
const maxWalk = 100000

// reaches reports whether commit to is from or one of its ancestors.
func (r *Repo) reaches(from, to plumbing.Hash) (bool, error) {
	seen := map[plumbing.Hash]bool{from: true}
	queue := []plumbing.Hash{from}
	for len(queue) > 0 && len(seen) < maxWalk {
		h := queue[0]
		queue = queue[1:]
		if h == to {
			return true, nil
		}
		o, err := r.Object(h)
		if err != nil {
			return false, err
		}
		var c object.Commit
		if err := c.Decode(o); err != nil {
			return false, err
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}

// packObjects decodes a pack as the journal's records hold them: whole objects, and trees
// that are deltas of an earlier tree of the same pack (groupdelta.go).
func packObjects(pack []byte) ([]plumbing.EncodedObject, error) {
	if len(pack) == 0 {
		return nil, nil
	}
	if len(pack) < 32 || string(pack[:4]) != "PACK" {
		return nil, errors.New("not a pack")
	}
	n := binary.BigEndian.Uint32(pack[8:12])
	body := pack[12 : len(pack)-20]
	rd := bytes.NewReader(body)
	objs := make([]plumbing.EncodedObject, 0, n)
	trees := map[int][]byte{} // by offset in body: the bases that deltas may name
	for i := uint32(0); i < n; i++ {
		at := len(body) - rd.Len()
		typ, size, hdr, err := objectHeader(body[at:])
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		var base []byte
		switch {
		case typ == plumbing.OFSDeltaObject:
			rel, m, ok := ofsDistance(body[at+hdr:])
			if ok && rel > 0 {
				base, ok = trees[at-int(rel)]
			}
			if !ok || rel <= 0 {
				return nil, fmt.Errorf("object %d: a delta of no tree of its pack", i)
			}
			hdr += m
			typ = plumbing.TreeObject
		case typ < plumbing.CommitObject || typ > plumbing.TagObject:
			return nil, fmt.Errorf("object %d: type %d is neither a whole object nor a delta of a tree", i, typ)
		}
		rd.Seek(int64(at+hdr), io.SeekStart)
		// rd is an io.ByteReader: zlib reads no further than its stream.
		data, err := inflate(rd, size)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if base != nil {
			if data, err = applyDelta(nil, base, data); err != nil {
				return nil, fmt.Errorf("object %d: %w", i, err)
			}
		}
		if typ == plumbing.TreeObject {
			trees[at] = data
		}
		o := &plumbing.MemoryObject{}
		o.SetType(typ)
		o.Write(data)
		objs = append(objs, o)
	}
	return objs, nil
}
