package gitstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	bolt "go.etcd.io/bbolt"
)

// The catalog is a bbolt file per store, derived from the history of main and rebuilt from
// it at will. Buckets:
//
//	meta     applied -> the commit the catalog reflects; seq -> last version number;
//	         store -> the store.json as of applied; usage -> live memories and bytes (quota.go)
//	mem      memory id -> memRec (deleted memories stay, marked)
//	path     live memory path -> memory id
//	ver      version number (8 bytes, big endian, in commit order) -> verRec
//	verid    version id -> version number
//	memver   memory id + version number -> nothing (the versions of a memory)
//	pushkey  commit -> the API key that pushed it (push.go); kept by a rebuild
//	read     memory id -> when it was last read (expire.go); kept by a rebuild
var (
	bMeta   = []byte("meta")
	bMem    = []byte("mem")
	bPath   = []byte("path")
	bVer    = []byte("ver")
	bVerID  = []byte("verid")
	bMemVer = []byte("memver")

	kApplied = []byte("applied")
	kSeq     = []byte("seq")
	kStore   = []byte("store")
	kFormat  = []byte("format")
)

// catalogFormat changes when the records change shape; a catalog of another format is
// rebuilt at open.
const catalogFormat = "2" // 2: meta holds the usage counters (quota.go)

type memRec struct {
	Path    string `json:"p"`
	Blob    string `json:"b,omitempty"`
	SHA     string `json:"s,omitempty"`
	Size    int    `json:"z"`
	Version string `json:"v"`
	Created int64  `json:"c"` // unix ms
	Updated int64  `json:"u"`
	Deleted bool   `json:"d,omitempty"`
}

type verRec struct {
	ID        string    `json:"i"`
	Memory    string    `json:"m"`
	Op        Operation `json:"o"`
	Path      string    `json:"p"`
	Blob      string    `json:"b,omitempty"`
	SHA       string    `json:"s,omitempty"`
	Size      int       `json:"z,omitempty"`
	At        int64     `json:"t"` // unix ms
	ActorType ActorType `json:"at"`
	ActorID   string    `json:"ai"`
	Name      string    `json:"an,omitempty"`
	Email     string    `json:"ae,omitempty"`
	APIKey    string    `json:"ak,omitempty"`
	Commit    string    `json:"c"`
	// Redacted is set on a redacted version (redact.go). Path, Blob, SHA and Size stay for
	// the catalog's own use (the memory's path, the marker blob in the trees); callers see
	// none of them.
	Redacted *redaction `json:"r,omitempty"`
}

func (v verRec) actor() Actor {
	return Actor{Type: v.ActorType, ID: v.ActorID, Name: v.Name, Email: v.Email, APIKeyID: v.APIKey}
}

func openCatalog(path string) (*bolt.DB, error) {
	// The freelist is rebuilt at open instead of written at every commit, where its cost
	// would grow with the size of the catalog (as etcd runs bbolt).
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 2 * time.Second,
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bMeta); m != nil && string(m.Get(kFormat)) != catalogFormat {
			return resetCatalog(tx)
		}
		return ensureBuckets(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open catalog %s: %w", path, err)
	}
	return db, nil
}

func ensureBuckets(tx *bolt.Tx) error {
	for _, b := range [][]byte{bMeta, bMem, bPath, bVer, bVerID, bMemVer, bPushKey, bRead} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return tx.Bucket(bMeta).Put(kFormat, []byte(catalogFormat))
}

// resetCatalog empties the catalog, for a rebuild from the first commit. It keeps the keys
// that pushed commits (push.go) and the times memories were read (expire.go), which history
// does not hold.
func resetCatalog(tx *bolt.Tx) error {
	for _, b := range [][]byte{bMeta, bMem, bPath, bVer, bVerID, bMemVer} {
		if tx.Bucket(b) != nil {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
	}
	return ensureBuckets(tx)
}

// catTx reads and writes the catalog inside one bbolt transaction.
type catTx struct{ tx *bolt.Tx }

func (c catTx) applied() plumbing.Hash {
	v := c.tx.Bucket(bMeta).Get(kApplied)
	if len(v) != 20 {
		return plumbing.ZeroHash
	}
	var h plumbing.Hash
	copy(h[:], v)
	return h
}

func (c catTx) setApplied(h plumbing.Hash) error {
	return c.tx.Bucket(bMeta).Put(kApplied, append([]byte(nil), h[:]...))
}

func (c catTx) storeInfo() (StoreInfo, error) {
	var info StoreInfo
	raw := c.tx.Bucket(bMeta).Get(kStore)
	if raw == nil {
		return info, fmt.Errorf("catalog has no store metadata")
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		return info, fmt.Errorf("decode store metadata: %w", err)
	}
	return info, nil
}

func (c catTx) memory(id string) (memRec, bool, error) {
	var r memRec
	raw := c.tx.Bucket(bMem).Get([]byte(id))
	if raw == nil {
		return r, false, nil
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, false, fmt.Errorf("decode catalog memory %s: %w", id, err)
	}
	return r, true, nil
}

// live returns the memory at path, if one lives there.
func (c catTx) live(path string) (string, memRec, bool, error) {
	id := c.tx.Bucket(bPath).Get([]byte(path))
	if id == nil {
		return "", memRec{}, false, nil
	}
	r, ok, err := c.memory(string(id))
	if err == nil && !ok {
		err = fmt.Errorf("catalog path %s names unknown memory %s", path, id)
	}
	return string(id), r, ok, err
}

func (c catTx) putMemory(id string, r memRec) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return c.tx.Bucket(bMem).Put([]byte(id), b)
}

func seqKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}

func (c catTx) addVersion(v verRec) error {
	meta := c.tx.Bucket(bMeta)
	var n uint64
	if raw := meta.Get(kSeq); len(raw) == 8 {
		n = binary.BigEndian.Uint64(raw)
	}
	n++
	if err := meta.Put(kSeq, seqKey(n)); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := c.tx.Bucket(bVer).Put(seqKey(n), b); err != nil {
		return err
	}
	if err := c.tx.Bucket(bVerID).Put([]byte(v.ID), seqKey(n)); err != nil {
		return err
	}
	return c.tx.Bucket(bMemVer).Put(append([]byte(v.Memory), seqKey(n)...), nil)
}

func (c catTx) versionBySeq(k []byte) (verRec, error) {
	var v verRec
	raw := c.tx.Bucket(bVer).Get(k)
	if raw == nil {
		return v, fmt.Errorf("catalog has no version number %x", k)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decode catalog version %x: %w", k, err)
	}
	return v, nil
}

// applyCommit reads one commit into the catalog: the versions it makes and the store
// metadata it changes. It is the one way into the catalog, for the writer's own commits and
// for commits made elsewhere (git push, plain git, sync) alike.
func (c catTx) applyCommit(or objectReader, commit *object.Commit, parentTree plumbing.Hash) error {
	changes, err := diffTrees(or, parentTree, commit.TreeHash, "", nil)
	if err != nil {
		return fmt.Errorf("diff commit %s: %w", commit.Hash, err)
	}
	for _, ch := range changes {
		if ch.Path == "/"+storeFile {
			if err := c.applyStoreFile(or, ch.To); err != nil {
				return err
			}
		}
	}
	if mem := onlyMemories(changes); len(mem) > 0 {
		t := parseTrailers(commit.Message)
		if t.get(trailerVersion) != "" && t.get(trailerMemory) != "" {
			err = c.applyGitmemCommit(or, commit, t, mem)
		} else {
			err = c.applyPlainCommit(or, commit, mem)
		}
		if err != nil {
			return err
		}
	}
	return c.setApplied(commit.Hash)
}

// onlyMemories keeps the changes of a commit that are changes of memories: none under
// .gitmem/, and a symlink or a submodule is no memory (a file that becomes one is deleted).
func onlyMemories(changes []fileChange) []fileChange {
	var mem []fileChange
	for _, ch := range changes {
		if ch.Path == "/"+storeFile || strings.HasPrefix(ch.Path, "/"+reservedDir+"/") {
			continue
		}
		if !ch.To.IsZero() && !ch.ToMode.IsFile() || ch.ToMode == filemode.Symlink {
			ch.To = plumbing.ZeroHash
		}
		if ch.From.IsZero() && ch.To.IsZero() {
			continue
		}
		mem = append(mem, ch)
	}
	return mem
}

func (c catTx) applyStoreFile(or objectReader, h plumbing.Hash) error {
	if h.IsZero() {
		return nil // a store without store.json keeps the metadata it had
	}
	o, err := or.object(h)
	if err != nil {
		return err
	}
	raw, err := readEncoded(o)
	if err != nil {
		return err
	}
	var info StoreInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return fmt.Errorf("decode %s: %w", storeFile, err)
	}
	return c.tx.Bucket(bMeta).Put(kStore, raw)
}

// applyGitmemCommit reads a commit that gitmem made: one version of one memory, named by
// its trailers.
func (c catTx) applyGitmemCommit(or objectReader, commit *object.Commit, t trailers, changes []fileChange) error {
	memID, verID := t.get(trailerMemory), t.get(trailerVersion)
	op := Operation(t.get(trailerOperation))
	actor, ok := actorFromTrailers(t, commit.Author.Name, commit.Author.Email)
	if !ok {
		actor = userActor(commit.Author.Name, commit.Author.Email)
	}
	at, ok := idTime(verID)
	if !ok {
		at = commit.Author.When
	}
	var path string
	var blob plumbing.Hash
	for _, ch := range changes {
		if !ch.To.IsZero() {
			path, blob = ch.Path, ch.To
		} else if path == "" {
			path = ch.Path
		}
	}
	if blob.IsZero() {
		op = OpDeleted
	}
	return c.record(or, commit, verRec{ID: verID, Memory: memID, Op: op, Path: path, At: at.UnixMilli(),
		ActorType: actor.Type, ActorID: actor.ID, Name: actor.Name, Email: actor.Email, APIKey: actor.APIKeyID}, blob)
}

// applyPlainCommit reads a commit made with plain git: each changed file is a version, with
// ids derived from the commit and the path. A file removed and a file added with the same
// content in one commit are a rename of one memory.
func (c catTx) applyPlainCommit(or objectReader, commit *object.Commit, changes []fileChange) error {
	actor := userActor(commit.Author.Name, commit.Author.Email)
	renamedFrom := plainRenames(changes)
	paired := map[int]bool{}
	for _, r := range renamedFrom {
		paired[r] = true
	}
	base := verRec{At: commit.Author.When.UnixMilli(), ActorType: actor.Type, ActorID: actor.ID, Name: actor.Name,
		Email: actor.Email, APIKey: c.pushKey(commit.Hash)}
	for i, ch := range changes {
		if paired[i] {
			continue
		}
		v := base
		v.ID = plainVersionID(commit, ch.Path)
		v.Path = ch.Path
		src := ch.Path
		if r, ok := renamedFrom[i]; ok {
			src = changes[r].Path
		}
		id, ok, err := c.memoryBefore(or, commit, src)
		if err != nil {
			return err
		}
		switch {
		case ch.To.IsZero():
			if !ok {
				continue // a file the catalog never knew (not a memory)
			}
			v.Memory, v.Op = id, OpDeleted
		case ok:
			v.Memory, v.Op = id, OpModified
		default:
			v.Memory = plainMemoryID(commit, ch.Path)
			v.Op = OpCreated
		}
		if err := c.record(or, commit, v, ch.To); err != nil {
			return err
		}
	}
	return nil
}

// memoryBefore returns the memory that lives at path in the parent of commit, made with plain
// git. The catalog knows it when the parent is the commit it applied last; a commit on the
// second side of a merge comes after the first side, and there it is read from history, so
// that every replica and every rebuild gives a change the same memory, whichever side it
// applied first.
func (c catTx) memoryBefore(or objectReader, commit *object.Commit, path string) (string, bool, error) {
	applied := c.applied()
	if len(commit.ParentHashes) == 0 && applied.IsZero() || len(commit.ParentHashes) > 0 && commit.ParentHashes[0] == applied {
		id, _, ok, err := c.live(path)
		return id, ok, err
	}
	if len(commit.ParentHashes) == 0 {
		return "", false, nil
	}
	id, _, err := memoryAt(or, commit.ParentHashes[0], path)
	return id, id != "", err
}

// record adds a version and moves its memory to the state it leaves.
func (c catTx) record(or objectReader, commit *object.Commit, v verRec, blob plumbing.Hash) error {
	v.Commit = commit.Hash.String()
	if !blob.IsZero() {
		o, err := or.object(blob)
		if err != nil {
			return err
		}
		content, err := readEncoded(o)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(content)
		v.Blob, v.SHA, v.Size = blob.String(), hex.EncodeToString(sum[:]), len(content)
	}
	rec, existed, err := c.memory(v.Memory)
	if err != nil {
		return err
	}
	wasLive, oldSize := existed && !rec.Deleted, rec.Size
	if existed && !rec.Deleted && rec.Path != v.Path {
		if err := c.freePath(rec.Path, v.Memory); err != nil {
			return err
		}
	}
	if !existed {
		rec = memRec{Created: v.At}
	}
	if v.Op == OpDeleted {
		if err := c.freePath(v.Path, v.Memory); err != nil {
			return err
		}
		rec.Deleted = true
		if rec.Path == "" {
			rec.Path = v.Path
		}
	} else {
		if err := c.tx.Bucket(bPath).Put([]byte(v.Path), []byte(v.Memory)); err != nil {
			return err
		}
		rec.Path, rec.Blob, rec.SHA, rec.Size, rec.Deleted = v.Path, v.Blob, v.SHA, v.Size, false
	}
	rec.Version = v.ID
	if v.At > rec.Updated { // a git commit time has whole seconds: never move backwards
		rec.Updated = v.At
	}
	if err := c.putMemory(v.Memory, rec); err != nil {
		return err
	}
	if err := c.addUsage(liveDelta(wasLive, !rec.Deleted, oldSize, rec.Size)); err != nil {
		return err
	}
	v.Redacted = redactionOf(commit.Message, v.ID)
	return c.addVersion(v)
}

// freePath removes the path entry of path if it names memory id. After the two sides of a
// merge are applied one after the other, the entry may name another memory, which stays.
func (c catTx) freePath(path, id string) error {
	if string(c.tx.Bucket(bPath).Get([]byte(path))) != id {
		return nil
	}
	return c.tx.Bucket(bPath).Delete([]byte(path))
}

// Cursors are opaque to callers: "page_" and the base64 of where the next page starts.
func encodeCursor(kind byte, key []byte) string {
	return "page_" + base64.RawURLEncoding.EncodeToString(append([]byte{kind}, key...))
}

func decodeCursor(kind byte, cursor string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(cursor, "page_"))
	if err != nil || !strings.HasPrefix(cursor, "page_") || len(raw) < 1 || raw[0] != kind {
		return nil, invalidf("page %q is not a cursor that this listing returned", cursor)
	}
	return raw[1:], nil
}
