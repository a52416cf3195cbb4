package odb

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// resolver reads objects at the end of chains of deltas into buffers it reuses, for merges:
// the version of a folder that a merge makes the next one a delta of is the last of its
// chain, and reading it through the packs' reads (find) made a new copy at every step of the
// chain and cached each. That was 9 GB of allocations in the merges of BenchmarkWrite at
// 100,000 memories, which drove the collector and the heap's peak.
//
// It keeps the last objects it read (tips), each with where it lies: the next read of the
// same chain starts from the nearest of them rather than from the chain's whole object. At
// 100,000 memories the merges of 1,000 writes read 143 versions of the 33 KB top folder,
// 30 deltas deep on average, and applied 126 MB of deltas to do it.
type resolver struct {
	a, b, delta []byte
	chain       []packEntry
	tips        [maxTips]resolved
	next        int // the slot of tips that the next object read takes
	applied     int // deltas applied, all told
}

// maxTips is how many objects read a resolver keeps: enough for the chains of a few folders
// that a merge makes deltas along at once.
const maxTips = 8

// resolved is an object a resolver read: its content, at off in p.
type resolved struct {
	p    *pack
	off  int64
	data []byte
}

// tip returns the content of the object at off in p, if it is one of the last read.
func (res *resolver) tip(p *pack, off int64) ([]byte, bool) {
	for _, t := range res.tips {
		if t.p == p && t.off == off {
			return t.data, true
		}
	}
	return nil, false
}

// keep remembers data, which no one changes, as the object at off in p.
func (res *resolver) keep(p *pack, off int64, data []byte) {
	res.tips[res.next] = resolved{p: p, off: off, data: data}
	res.next = (res.next + 1) % maxTips
}

// resolve returns the content of h, an object of the packs merged, read from them in a new
// slice; a chain with a delta that names its base by hash (from a push) is read through
// m.read.
func (m *merge) resolve(h plumbing.Hash) ([]byte, error) {
	res := &m.res
	var p *pack
	var off int64
	for _, q := range m.own.packs {
		if i, ok := q.idx.find(h); ok {
			p, off = q, q.idx.offset(i)
			break
		}
	}
	if p == nil {
		return m.readData(h)
	}
	at := off
	res.chain = res.chain[:0]
	for {
		if d, ok := res.tip(p, off); ok {
			res.a = append(res.a[:0], d...)
			break
		}
		e, err := p.entryAt(off)
		if err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		if e.typ == plumbing.REFDeltaObject {
			return m.readData(h)
		}
		if e.typ != plumbing.OFSDeltaObject {
			if res.a, err = p.inflateAt(res.a, e); err != nil {
				return nil, fmt.Errorf("read object %s: %w", h, err)
			}
			break
		}
		if len(res.chain) >= maxDeltaDepth {
			return nil, fmt.Errorf("read object %s: deltas nested deeper than %d", h, maxDeltaDepth)
		}
		res.chain = append(res.chain, e)
		off = e.base
	}
	for i := len(res.chain) - 1; i >= 0; i-- {
		var err error
		if res.delta, err = p.inflateAt(res.delta, res.chain[i]); err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		if res.b, err = applyDelta(res.b[:0], res.a, res.delta); err != nil {
			return nil, fmt.Errorf("read object %s: %w", h, err)
		}
		res.applied++
		res.a, res.b = res.b, res.a
	}
	data := bytes.Clone(res.a)
	res.keep(p, at, data)
	return data, nil
}

// readData reads h through the reads of the packs, in the merge's cache.
func (m *merge) readData(h plumbing.Hash) ([]byte, error) {
	o, err := m.read(h)
	if err != nil {
		return nil, err
	}
	return ReadEncoded(o)
}

var errBrokenDelta = errors.New("broken delta")

// applyDelta appends to dst what delta makes of src, in git's format: the sizes of the source
// and of the result, then instructions that copy a stretch of the source or insert bytes of
// the delta. Reads and merges use it; go-git's PatchDelta does the same into a buffer of its
// own, new every time, which a merge walking chains of deltas cannot reuse.
func applyDelta(dst, src, delta []byte) ([]byte, error) {
	srcSize, rest, ok1 := deltaSize(delta)
	dstSize, rest, ok2 := deltaSize(rest)
	if !ok1 || !ok2 || srcSize != uint64(len(src)) || dstSize > maxObjectSize {
		return nil, errBrokenDelta
	}
	if uint64(cap(dst)) < dstSize {
		dst = make([]byte, 0, dstSize)
	}
	for len(rest) > 0 {
		op := rest[0]
		rest = rest[1:]
		switch {
		case op&0x80 != 0: // copy: the bits say which bytes of offset and size follow
			var off, size uint64
			for i := 0; i < 7; i++ {
				if op&(1<<i) == 0 {
					continue
				}
				if len(rest) == 0 {
					return nil, errBrokenDelta
				}
				if i < 4 {
					off |= uint64(rest[0]) << (8 * i)
				} else {
					size |= uint64(rest[0]) << (8 * (i - 4))
				}
				rest = rest[1:]
			}
			if size == 0 {
				size = 0x10000
			}
			if off+size > uint64(len(src)) || uint64(len(dst))+size > dstSize {
				return nil, errBrokenDelta
			}
			dst = append(dst, src[off:off+size]...)
		case op != 0: // insert the op's count of bytes
			n := int(op)
			if n > len(rest) || uint64(len(dst)+n) > dstSize {
				return nil, errBrokenDelta
			}
			dst = append(dst, rest[:n]...)
			rest = rest[n:]
		default:
			return nil, errBrokenDelta
		}
	}
	if uint64(len(dst)) != dstSize {
		return nil, errBrokenDelta
	}
	return dst, nil
}
