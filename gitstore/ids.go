package gitstore

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// The prefixes of the ids that gitmem mints.
const (
	StorePrefix   = "memstore_"
	MemoryPrefix  = "mem_"
	VersionPrefix = "memver_"
	// StoreChangePrefix names a change of a store's own metadata, an entry of its feed.
	StoreChangePrefix = "storechg_"
	UserPrefix        = "user_"
	// ServiceAccountPrefix names service accounts, of which gitmem itself is one.
	ServiceAccountPrefix = "svac_"
)

// idSource mints time-ordered random ids. Ids minted by one process are strictly
// increasing, even within one millisecond.
type idSource struct {
	mu      sync.Mutex // guards entropy
	entropy *ulid.MonotonicEntropy
}

var ids = &idSource{entropy: ulid.Monotonic(rand.Reader, 0)}

// NewID returns a new id with the given prefix, ordered by time t (milliseconds).
func NewID(prefix string, t time.Time) string {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	return prefix + ulid.MustNew(ulid.Timestamp(t), ids.entropy).String()
}

// derivedID returns the id that every replica derives for a change made with plain git:
// time-ordered by the commit time, and otherwise a hash of what identifies the change.
func derivedID(prefix string, t time.Time, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	var id ulid.ULID
	if err := id.SetTime(ulid.Timestamp(t)); err != nil {
		// Before 1970 or after 10889: clamp, the id is still deterministic.
		_ = id.SetTime(0)
	}
	_ = id.SetEntropy(sum[:10])
	return prefix + id.String()
}

// hashedID returns a stable id that is a hash of parts, for ids that have no time order
// (the user of a commit made with plain git).
func hashedID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var id ulid.ULID
	copy(id[:], h.Sum(nil))
	return prefix + id.String()
}

// idTime returns the time encoded in an id minted by NewID or derivedID.
func idTime(id string) (time.Time, bool) {
	i := strings.IndexByte(id, '_')
	if i < 0 {
		return time.Time{}, false
	}
	u, err := ulid.ParseStrict(id[i+1:])
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()).UTC(), true
}

// validID reports whether id has the prefix and a well-formed ULID after it.
func validID(prefix, id string) bool {
	if !strings.HasPrefix(id, prefix) {
		return false
	}
	_, err := ulid.ParseStrict(id[len(prefix):])
	return err == nil
}
