package gitstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"iter"
	"slices"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
)

// The catalog's schema: every bbolt bucket, the records they hold and how the records are
// encoded. The catalog is one bbolt file per store (catalog/<id>.db). Only the catalog's
// files (catalog*.go) open its buckets; the rest of gitstore uses their accessors.
//
// Derived buckets hold what the history of main says, and resetCatalog empties them for a
// rebuild from the first commit (catalog.go: meta and its keys; catalog_memories.go: mem,
// path; catalog_versions.go: ver, verid, memver, sesver, keyver):
//
//	meta     applied -> the commit the catalog reflects (20 bytes);
//	         seq -> the last version number (8 bytes, big endian);
//	         store -> the store.json as of applied;
//	         usage -> live memories and their bytes (8 + 8 bytes, big endian; quota.go);
//	         format -> catalogFormat (a catalog of another format is rebuilt at open);
//	         indexed -> the version number up to which sesver and keyver list every version
//	         (8 bytes, big endian; catalog_versions.go): they lag the versions
//	mem      memory id -> memRec (binary: catalog_codec.go; deleted memories stay, marked)
//	path     live memory path -> memory id (path order: listings are range scans)
//	ver      version number (8 bytes, big endian, in the order commits were applied) -> verRec
//	         (binary: catalog_codec.go)
//	verid    version id -> version number
//	memver   memory id + version number -> nothing (the versions of a memory, also deleted)
//	sesver   idRun(session id) + version number -> nothing: the versions a session made,
//	         up to meta's indexed
//	keyver   idRun(API key id) + version number -> nothing: the versions of an API key,
//	         made by the key or by a session of it (Actor.KeyID), up to meta's indexed
//	storechg number -> storeChgRec (JSON): a change of .gitmem/store.json, numbered in the
//	         same sequence as the versions, so that a feed of both is in commit order
//
// Kept buckets hold what history does not say; a rebuild keeps them (catalog_kept.go):
//
//	pushkey    commit (20 bytes) -> the API key that pushed it over HTTP (push.go)
//	read       memory id -> when it was last read (unix ms, 8 bytes, big endian; expire.go)
//	rewritten  old commit (20 bytes) -> the commit a redaction rewrote it into (redact.go);
//	           made at the first redaction
//	prune      object (20 bytes) -> nothing: objects of a rewritten history to delete if still
//	           loose once the repository is repacked (redact.go); made by a redaction,
//	           removed once the objects are pruned
//	rewriting  what rewritten is to get from a redaction whose main may not have moved yet:
//	           "head" -> the commit main moves to; old commit -> new commit. Staged before main
//	           moves, emptied by the catalog update that records the redaction, or settled by
//	           the next redaction or open if that update failed (redact.go)
var (
	bMeta   = []byte("meta")
	bMem    = []byte("mem")
	bPath   = []byte("path")
	bVer    = []byte("ver")
	bVerID  = []byte("verid")
	bMemVer = []byte("memver")
	bSesVer = []byte("sesver")
	bKeyVer = []byte("keyver")
	bStore  = []byte("storechg")

	bPushKey   = []byte("pushkey")
	bRead      = []byte("read")
	bRewritten = []byte("rewritten")
	bPrune     = []byte("prune")
	bRewriting = []byte("rewriting")

	// The keys of meta.
	kApplied = []byte("applied")
	kSeq     = []byte("seq")
	kStore   = []byte("store")
	kUsage   = []byte("usage")
	kFormat  = []byte("format")
	kIndexed = []byte("indexed")

	// The key of rewriting that holds the head.
	kRewritingHead = []byte("head")
)

// derivedBuckets are emptied by a rebuild; keptBuckets are not. ensureBuckets makes both
// but rewritten, prune and rewriting, which redaction makes when it needs them.
var (
	derivedBuckets = [][]byte{bMeta, bMem, bPath, bVer, bVerID, bMemVer, bSesVer, bKeyVer, bStore}
	keptBuckets    = [][]byte{bPushKey, bRead}
)

// catalogFormat changes when the records change shape; a catalog of another format is
// rebuilt at open, but for one of format 4 or 5, which its versions bring up to date
// (openCatalog).
const catalogFormat = "6" // 2: meta holds the usage counters (quota.go); 3: storechg; 4: mem and ver binary (catalog_codec.go); 5: sesver, keyver; 6: they lag (meta's indexed)

// memRec is a memory's state (bucket mem; its encoding is catalog_codec.go's).
type memRec struct {
	Path    string
	Blob    string
	SHA     string
	Size    int
	Version string
	Created int64 // unix ms
	Updated int64
	Deleted bool
}

// verRec is a version (bucket ver; its encoding is catalog_codec.go's).
type verRec struct {
	ID     string
	Memory string
	Op     Operation
	Path   string
	Blob   string
	SHA    string
	Size   int
	At     int64 // unix ms
	actorRec
	Commit string
	// ApprovedBy is who approved the version in review ("<actor type> <actor id>", from its
	// commit's Gitmem-Approved-By), "" for a change made directly.
	ApprovedBy string
	// Redacted is set on a redacted version (redact.go). Path, Blob, SHA and Size stay for
	// the catalog's own use (the memory's path, the marker blob in the trees); callers see
	// none of them.
	Redacted *redaction

	// seq is the version's number, its key in ver: set when it is read from the catalog,
	// never stored in the record.
	seq uint64
}

// storeChgRec is a change of the store's metadata (bucket storechg).
type storeChgRec struct {
	ID string `json:"i"`
	Op string `json:"o"` // created, updated, archived; for a proposal opened, approved, rejected
	// Prop is the proposal whose review step this is ("" for a change of store.json).
	Prop string `json:"p,omitempty"`
	At   int64  `json:"t"` // unix ms
	actorRec
	Commit string `json:"c"`

	seq uint64 // its number, its key in storechg
}

// actorRec is who made a version or a store change, as the catalog keeps it (its fields
// are inlined in the record's JSON).
type actorRec struct {
	ActorType ActorType `json:"at"`
	ActorID   string    `json:"ai"`
	Name      string    `json:"an,omitempty"`
	Email     string    `json:"ae,omitempty"`
	APIKey    string    `json:"ak,omitempty"`
}

func recOf(a Actor) actorRec {
	return actorRec{ActorType: a.Type, ActorID: a.ID, Name: a.Name, Email: a.Email, APIKey: a.APIKeyID}
}

func (r actorRec) actor() Actor {
	return Actor{Type: r.ActorType, ID: r.ActorID, Name: r.Name, Email: r.Email, APIKeyID: r.APIKey}
}

// redaction is who redacted a version and when (in verRec, and in a Gitmem-Redacted
// trailer: commitformat.go).
type redaction struct {
	At        int64     `json:"t"` // unix ms
	ActorType ActorType `json:"at"`
	ActorID   string    `json:"ai"`
}

func encodeMemory(r memRec) ([]byte, error) { return appendMemory(nil, r), nil }

func decodeMemory(id string, raw []byte) (memRec, error) {
	r, err := readMemory(raw)
	if err != nil {
		return r, fmt.Errorf("decode catalog memory %s: %w", id, err)
	}
	return r, nil
}

func encodeVersion(v verRec) ([]byte, error) { return appendVersion(nil, v), nil }

// decodeVersion decodes the version stored under key k of ver.
func decodeVersion(k, raw []byte) (verRec, error) {
	v, err := readVersion(raw)
	if err != nil {
		return v, fmt.Errorf("decode catalog version %x: %w", k, err)
	}
	v.seq = seqOf(k)
	return v, nil
}

// seqKey is the key of version number n in ver (and its suffix in memver).
func seqKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}

// idRun is the prefix of the keys of a session's or an API key's versions in sesver or
// keyver: the id's length, then the id. The length keeps the run of each id apart from that
// of an id that begins with it, whatever bytes ids hold (those of commits pushed with git
// are the trailers' text).
func idRun(id string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(id))), id...)
}

func seqOf(k []byte) uint64 {
	var n uint64
	for _, b := range k {
		n = n<<8 | uint64(b)
	}
	return n
}

// decodedInfos remembers store metadata as decoded, by the bytes it was decoded from: every
// write decodes its store's twice (the caller's policy, the writer's check), and the JSON
// decoding took 3% of a server's CPU under writes (perf, wrk at 64 clients). A slot for
// each hash of the bytes, so that stores whose metadata differ seldom take each other's;
// what a slot holds is never changed.
var (
	decodedInfos [64]atomic.Pointer[decodedInfo]
	infoSeed     = maphash.MakeSeed()
)

type decodedInfo struct {
	raw  []byte
	info StoreInfo
}

func decodeStoreInfo(raw []byte) (StoreInfo, error) {
	slot := &decodedInfos[maphash.Bytes(infoSeed, raw)%uint64(len(decodedInfos))]
	if d := slot.Load(); d != nil && bytes.Equal(d.raw, raw) {
		return d.info.clone(), nil
	}
	var info StoreInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return info, fmt.Errorf("decode store metadata: %w", err)
	}
	slot.Store(&decodedInfo{raw: bytes.Clone(raw), info: info.clone()}) // raw is bbolt's, for the transaction
	return info, nil
}

func encodeUsage(u Usage) []byte {
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], uint64(u.Memories))
	binary.BigEndian.PutUint64(raw[8:], uint64(u.Bytes))
	return raw[:]
}

func decodeUsage(raw []byte) Usage {
	if len(raw) != 16 {
		return Usage{}
	}
	return Usage{Memories: int(binary.BigEndian.Uint64(raw[:8])), Bytes: int64(binary.BigEndian.Uint64(raw[8:]))}
}

// encodeMillis and decodeMillis are a time in unix ms (bucket read).
func encodeMillis(ms int64) []byte {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(ms))
	return v[:]
}

func decodeMillis(raw []byte) (int64, bool) {
	if len(raw) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(raw)), true
}

// hashKey is a commit or object as a key or value (meta's applied, pushkey, rewritten,
// prune): its 20 bytes, copied so that bbolt may keep them.
func hashKey(h plumbing.Hash) []byte { return append([]byte(nil), h[:]...) }

// inKeyOrder returns hs sorted as bbolt orders their keys: written in that order, bbolt
// fills pages one after another instead of splitting them.
func inKeyOrder(hs iter.Seq[plumbing.Hash]) []plumbing.Hash {
	return slices.SortedFunc(hs, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) })
}

func decodeHash(raw []byte) (plumbing.Hash, bool) {
	var h plumbing.Hash
	if len(raw) != len(h) {
		return h, false
	}
	copy(h[:], raw)
	return h, true
}
