package gitstore

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
)

// The catalog's records (mem and ver) are encoded in a compact binary form: their fields in a
// fixed order, strings as a length and their bytes, numbers as varints, and hex digests
// (blob, sha256, commit) as the bytes they spell. JSON took about 280 bytes for a memory and
// 350 for a version, a third of them field names and hex; the catalog's size is what a
// process maps and touches of it (docs/performance.md, Memory).

// recWriter appends fields to a record.
type recWriter struct{ b []byte }

func (w *recWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *recWriter) num(n int64) { w.b = binary.AppendVarint(w.b, n) }

func (w *recWriter) flag(f bool) {
	if f {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// Kinds of a digest field: what the bytes after it are.
const (
	digestText = 0 // the string as it is
	digestHex  = 1 // bytes whose lowercase hex is the string
)

// digest writes s as the bytes it spells if it is lowercase hex of whole bytes (every digest
// gitmem writes), else as text, so that any string reads back as it was.
func (w *recWriter) digest(s string) {
	if raw, err := hex.DecodeString(s); err == nil && hex.EncodeToString(raw) == s {
		w.b = append(w.b, digestHex)
		w.b = binary.AppendUvarint(w.b, uint64(len(raw)))
		w.b = append(w.b, raw...)
		return
	}
	w.b = append(w.b, digestText)
	w.str(s)
}

var errShortRecord = errors.New("record cut short or malformed")

// recReader reads fields in the order they were written; after the first error every read
// returns a zero value, and err says what went wrong.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) fail() { r.err, r.b = errShortRecord, nil }

func (r *recReader) bytes() []byte {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > uint64(len(r.b)-k) {
		r.fail()
		return nil
	}
	v := r.b[k : k+int(n)]
	r.b = r.b[k+int(n):]
	return v
}

func (r *recReader) str() string { return string(r.bytes()) }

func (r *recReader) num() int64 {
	n, k := binary.Varint(r.b)
	if k <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[k:]
	return n
}

func (r *recReader) flag() bool {
	if len(r.b) == 0 || r.b[0] > 1 {
		r.fail()
		return false
	}
	f := r.b[0] == 1
	r.b = r.b[1:]
	return f
}

func (r *recReader) digest() string {
	if len(r.b) == 0 {
		r.fail()
		return ""
	}
	kind := r.b[0]
	r.b = r.b[1:]
	switch kind {
	case digestHex:
		return hex.EncodeToString(r.bytes())
	case digestText:
		return r.str()
	}
	r.fail()
	return ""
}

// done is the reader's error, or one if bytes are left over.
func (r *recReader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	return r.err
}

func (w *recWriter) actor(a actorRec) {
	w.str(string(a.ActorType))
	w.str(a.ActorID)
	w.str(a.Name)
	w.str(a.Email)
	w.str(a.APIKey)
}

func (r *recReader) actor() actorRec {
	return actorRec{ActorType: ActorType(r.str()), ActorID: r.str(), Name: r.str(), Email: r.str(), APIKey: r.str()}
}

func appendMemory(b []byte, m memRec) []byte {
	w := recWriter{b}
	w.str(m.Path)
	w.digest(m.Blob)
	w.digest(m.SHA)
	w.num(int64(m.Size))
	w.str(m.Version)
	w.num(m.Created)
	w.num(m.Updated)
	w.flag(m.Deleted)
	return w.b
}

func readMemory(raw []byte) (memRec, error) {
	r := recReader{b: raw}
	m := memRec{Path: r.str(), Blob: r.digest(), SHA: r.digest(), Size: int(r.num()), Version: r.str(),
		Created: r.num(), Updated: r.num(), Deleted: r.flag()}
	return m, r.done()
}

func appendVersion(b []byte, v verRec) []byte {
	w := recWriter{b}
	w.str(v.ID)
	w.str(v.Memory)
	w.str(string(v.Op))
	w.str(v.Path)
	w.digest(v.Blob)
	w.digest(v.SHA)
	w.num(int64(v.Size))
	w.num(v.At)
	w.actor(v.actorRec)
	w.digest(v.Commit)
	w.str(v.ApprovedBy)
	w.flag(v.Redacted != nil)
	if v.Redacted != nil {
		w.num(v.Redacted.At)
		w.str(string(v.Redacted.ActorType))
		w.str(v.Redacted.ActorID)
	}
	return w.b
}

func readVersion(raw []byte) (verRec, error) {
	r := recReader{b: raw}
	v := verRec{ID: r.str(), Memory: r.str(), Op: Operation(r.str()), Path: r.str(), Blob: r.digest(),
		SHA: r.digest(), Size: int(r.num()), At: r.num(), actorRec: r.actor(), Commit: r.digest(),
		ApprovedBy: r.str()}
	if r.flag() {
		v.Redacted = &redaction{At: r.num(), ActorType: ActorType(r.str()), ActorID: r.str()}
	}
	return v, r.done()
}
