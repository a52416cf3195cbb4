package gitstore

import (
	"maps"
	"slices"
	"time"

	"github.com/gitmem/gitmem/secrets"
)

// ActorType names who made a change, as the memory store API spells it.
type ActorType string

// The actor types. UserActor is also what a commit made with plain git becomes.
const (
	APIActor            ActorType = "api_actor"
	SessionActor        ActorType = "session_actor"
	UserActor           ActorType = "user_actor"
	ServiceAccountActor ActorType = "service_account_actor"
)

// Actor is who made a change. It becomes the author of the commit.
type Actor struct {
	Type ActorType
	ID   string // apikey_…, sesn_…, user_…, svac_…

	// Name and Email are the git author's, for user actors read from plain git commits;
	// gitmem fills them for the other types.
	Name  string
	Email string

	// APIKeyID is the key that authenticated a session actor, if any, so that version
	// filters by api_key_id also find the writes of sessions that used the key.
	APIKeyID string
}

// SessionID returns the session of a session actor, or "".
func (a Actor) SessionID() string {
	if a.Type == SessionActor {
		return a.ID
	}
	return ""
}

// KeyID returns the API key behind the actor, or "".
func (a Actor) KeyID() string {
	if a.Type == APIActor {
		return a.ID
	}
	return a.APIKeyID
}

// Operation is what a version did to its memory.
type Operation string

// The operations of a version.
const (
	OpCreated  Operation = "created"
	OpModified Operation = "modified"
	OpDeleted  Operation = "deleted"
)

// Valid tells whether o is one of the operations of a version.
func (o Operation) Valid() bool { return o == OpCreated || o == OpModified || o == OpDeleted }

// StoreInfo is a store's metadata, kept in .gitmem/store.json on main.
type StoreInfo struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	ArchivedAt  *time.Time        `json:"archived_at,omitempty"`
	Policy      Policy            `json:"policy,omitzero"` // secrets, expiry and quotas (policy.go)
}

// clone is a copy of i that shares nothing a caller could change with it.
func (i StoreInfo) clone() StoreInfo {
	i.Metadata = maps.Clone(i.Metadata)
	if i.ArchivedAt != nil {
		at := *i.ArchivedAt
		i.ArchivedAt = &at
	}
	i.Policy.ReviewPaths = slices.Clone(i.Policy.ReviewPaths)
	i.Policy.ReviewExempt = slices.Clone(i.Policy.ReviewExempt)
	return i
}

// Memory is a memory as of a snapshot.
type Memory struct {
	ID            string
	StoreID       string
	VersionID     string // the version that wrote the current state
	Path          string
	Content       *string // nil unless asked for
	ContentSHA256 string  // lowercase hex sha256 of the UTF-8 bytes
	SizeBytes     int
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// ListItem is one entry of a memory listing: a memory, or (with depth 1) a prefix that
// rolls up deeper memories. Exactly one of Memory and Prefix is set.
type ListItem struct {
	Memory *Memory
	Prefix string // ends with "/"
}

// Version is one mutation of one memory.
type Version struct {
	ID            string
	MemoryID      string
	StoreID       string
	Operation     Operation
	Path          string
	Content       *string // nil unless asked for, and for deletes
	ContentSHA256 string  // "" for deletes
	SizeBytes     int     // 0 for deletes
	CreatedBy     Actor
	CreatedAt     time.Time
	Commit        string // hash of the commit that holds the version
	// RedactedAt and RedactedBy are set on a redacted version, whose Path, Content,
	// ContentSHA256 and SizeBytes are then empty: its content is gone from history.
	RedactedAt *time.Time
	RedactedBy *Actor
	// ApprovedBy is who approved the version in review (package proposals); nil for a
	// change made directly.
	ApprovedBy *Actor
}

// PreconditionType names a precondition of a write.
type PreconditionType string

// The preconditions.
const (
	// NotExists: the write creates only; it fails if the path is taken.
	NotExists PreconditionType = "not_exists"
	// ContentSHA256: the write applies only if the current content has this hash.
	ContentSHA256 PreconditionType = "content_sha256"
)

// Precondition guards a write. It is checked by the writer against the state that the
// write's commit builds on, so it is atomic with the write.
type Precondition struct {
	Type          PreconditionType
	ContentSHA256 string // for ContentSHA256
}

// WriteInput writes a memory by path: it creates the memory, or replaces the content of the
// memory at the path (an upsert), subject to Precondition.
type WriteInput struct {
	Path         string
	Content      string
	Precondition *Precondition
	Actor        Actor
	// ApprovedBy, if set, is the person who approved the change in review (package
	// proposals): the store's review policy lets it in, and the version records it. Not for
	// changes that nobody reviewed.
	ApprovedBy *Actor
	// MemoryID, if set, is the id that the memory takes if the write creates it, unless the
	// store knows the id already (then it gets a new one): a memory that a proposal created
	// keeps its id when some of the proposal's changes are approved, as it does when all are.
	MemoryID string
}

// UpdateInput changes the content and/or path of one memory, named by ID or, if ID is
// empty, by FromPath. A nil Content or Path leaves it as it is; a new path renames the
// memory and keeps its id.
type UpdateInput struct {
	ID           string
	FromPath     string
	Content      *string
	Path         *string
	Precondition *Precondition // only ContentSHA256
	// Edit, if set, computes the new content from the current one inside the writer, so that
	// read-modify-write needs no retry loop. It runs after Precondition is checked and must
	// not block. An error it returns is returned as is and nothing changes.
	Edit  func(current string) (string, error)
	Actor Actor
}

// DeleteInput deletes one memory, named by ID or, if ID is empty, by Path.
type DeleteInput struct {
	ID             string
	Path           string
	ExpectedSHA256 string // if set, delete only if the current content has this hash
	Actor          Actor
	ApprovedBy     *Actor // as WriteInput's
}

// WriteResult is the outcome of a write. Version is nil when the write changed nothing
// (no commit was made).
type WriteResult struct {
	Memory  Memory
	Version *Version
	// Redacted lists the secrets that the store's "redact" policy replaced with markers
	// before the commit; Memory.Content then holds the content as stored.
	Redacted []secrets.Finding
	// Proposal is the proposal that a write through the HTTP API went to, because the store
	// reviews its folder (Policy.ReviewPaths); Version is nil then.
	Proposal string
}

// ListOptions select memories. PathPrefix must be "" or end with "/" and matches whole
// segments. Depth 0 lists all memories below the prefix; depth 1 lists direct children and
// rolls deeper ones up into prefixes. Limit is 1 to 1000 (default 20).
type ListOptions struct {
	PathPrefix  string
	Depth       int
	Limit       int
	Cursor      string
	WithContent bool
}

// ListPage is one page of a memory listing, in path order.
type ListPage struct {
	Items      []ListItem
	NextCursor string // "" on the last page
}

// VersionFilter selects versions. Zero fields do not filter. Limit is 1 to 1000 (default 20).
type VersionFilter struct {
	MemoryID  string
	Operation Operation
	SessionID string
	APIKeyID  string
	// ActorID keeps the versions made by one actor: a key, a session or a user (user_…, or
	// the id gitmem gives a plain git author).
	ActorID string
	// PathPrefix keeps the versions of paths below a folder ("/projects/"); a redacted
	// version has no path, and is left out.
	PathPrefix   string
	CreatedAtGTE time.Time
	CreatedAtLTE time.Time
	Limit        int
	Cursor       string
	WithContent  bool
}

// VersionPage is one page of versions, newest first.
type VersionPage struct {
	Versions   []Version
	NextCursor string // "" on the last page
}

// CreateStoreInput creates a store.
type CreateStoreInput struct {
	Name        string
	Description string
	Metadata    map[string]string
	Policy      Policy
	Actor       Actor
}

// StorePatch updates a store's metadata: nil fields are left alone; in Metadata a nil
// value deletes the key and any other value sets it.
type StorePatch struct {
	Name        *string
	Description *string
	Metadata    map[string]*string
	Policy      *PolicyPatch
	Actor       Actor
}

// StoreListOptions select stores. Stores are listed newest first.
type StoreListOptions struct {
	IncludeArchived bool
	CreatedAtGTE    time.Time
	CreatedAtLTE    time.Time
	Limit           int // 1 to 1000, default 20
	Cursor          string
}

// StorePage is one page of stores.
type StorePage struct {
	Stores     []StoreInfo
	NextCursor string
}
