package httpapi

import (
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// The JSON shapes of the memory store API, as the official SDKs parse them: every field
// present, null where there is no value.

// wireTime is how the API writes times: RFC 3339 in UTC with milliseconds.
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func wireTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := wireTime(*t)
	return &s
}

type storeJSON struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	ArchivedAt  *string           `json:"archived_at"`
	CreatedAt   string            `json:"created_at"`
	UpdatedAt   string            `json:"updated_at"`

	// gitmem's own fields, which the SDKs keep as extra fields (hygiene.go).
	Policy policyJSON `json:"policy"`
	Usage  usageJSON  `json:"usage"`
	Head   string     `json:"head,omitempty"` // the commit of main that reads reflect
}

func toStore(info gitstore.StoreInfo, u gitstore.Usage) storeJSON {
	meta := info.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return storeJSON{Type: "memory_store", ID: info.ID, Name: info.Name, Description: info.Description,
		Metadata: meta, ArchivedAt: wireTimePtr(info.ArchivedAt), CreatedAt: wireTime(info.CreatedAt),
		UpdatedAt: wireTime(info.UpdatedAt), Policy: toPolicy(info.Policy), Usage: usageJSON{Memories: u.Memories, Bytes: u.Bytes}}
}

type memoryJSON struct {
	Type            string  `json:"type"`
	ID              string  `json:"id"`
	MemoryStoreID   string  `json:"memory_store_id"`
	MemoryVersionID string  `json:"memory_version_id"`
	Path            string  `json:"path"`
	Content         *string `json:"content"`
	ContentSHA256   string  `json:"content_sha256"`
	SizeBytes       int     `json:"content_size_bytes"`
	SizeBytesAlias  int     `json:"size_bytes"` // the research preview's name for it
	CreatedAt       string  `json:"created_at"`
	UpdatedAt       string  `json:"updated_at"`

	// RedactedSecrets is gitmem's own: on the answer of a write, the secrets that the
	// store's redact policy replaced (hygiene.go).
	RedactedSecrets []redactionJSON `json:"redacted_secrets,omitempty"`
	// Version is gitmem's own too: on the answer of a write that asked for it
	// (IncludeVersionHeader), the version the write made.
	Version *versionJSON `json:"gitmem_version,omitempty"`
}

func toMemory(m gitstore.Memory) memoryJSON {
	return memoryJSON{Type: "memory", ID: m.ID, MemoryStoreID: m.StoreID, MemoryVersionID: m.VersionID,
		Path: m.Path, Content: m.Content, ContentSHA256: m.ContentSHA256, SizeBytes: m.SizeBytes,
		SizeBytesAlias: m.SizeBytes, CreatedAt: wireTime(m.CreatedAt), UpdatedAt: wireTime(m.UpdatedAt)}
}

type prefixJSON struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

type versionJSON struct {
	Type          string     `json:"type"`
	ID            string     `json:"id"`
	MemoryID      string     `json:"memory_id"`
	MemoryStoreID string     `json:"memory_store_id"`
	Operation     string     `json:"operation"`
	Path          *string    `json:"path"`
	Content       *string    `json:"content"`
	ContentSHA256 *string    `json:"content_sha256"`
	SizeBytes     *int       `json:"content_size_bytes"`
	CreatedBy     actorJSON  `json:"created_by"`
	CreatedAt     string     `json:"created_at"`
	RedactedAt    *string    `json:"redacted_at"`
	RedactedBy    *actorJSON `json:"redacted_by"`
	// ApprovedBy: who approved the version in review (proposals); a gitmem extension.
	ApprovedBy *actorJSON `json:"approved_by,omitempty"`
}

func toVersion(v gitstore.Version) versionJSON {
	out := versionJSON{Type: "memory_version", ID: v.ID, MemoryID: v.MemoryID, MemoryStoreID: v.StoreID,
		Operation: string(v.Operation), Path: &v.Path, Content: v.Content, CreatedBy: toActor(v.CreatedBy),
		CreatedAt: wireTime(v.CreatedAt)}
	if v.ApprovedBy != nil {
		by := toActor(*v.ApprovedBy)
		out.ApprovedBy = &by
	}
	switch {
	case v.RedactedAt != nil:
		by := toActor(*v.RedactedBy)
		out.Path, out.Content, out.RedactedAt, out.RedactedBy = nil, nil, wireTimePtr(v.RedactedAt), &by
	case v.Operation != gitstore.OpDeleted:
		out.ContentSHA256, out.SizeBytes = &v.ContentSHA256, &v.SizeBytes
	default:
		out.Content = nil
	}
	return out
}

// actorJSON is the actor union: the id field is named after the type. Beside the SDKs'
// fields it has name and email, the git author that gitmem knows for the actor (as
// gitmem log prints it), where they say more than the id: a person's name and email from
// their commits, an API key's name. The SDKs keep them as extra fields.
type actorJSON map[string]string

func toActor(a gitstore.Actor) actorJSON {
	out := actorJSON{"type": string(a.Type), actorIDField(a.Type): a.ID}
	name, email := a.Known()
	if name != "" {
		out["name"] = name
	}
	if email != "" {
		out["email"] = email
	}
	return out
}

// ActorJSON is an actor as the API shows it, for other JSON output of the same versions
// (gitmem log --json).
func ActorJSON(a gitstore.Actor) map[string]string { return toActor(a) }

// actorIDField is the field of an actor's id, named after its type.
func actorIDField(t gitstore.ActorType) string {
	field := map[gitstore.ActorType]string{
		gitstore.APIActor:            "api_key_id",
		gitstore.SessionActor:        "session_id",
		gitstore.UserActor:           "user_id",
		gitstore.ServiceAccountActor: "service_account_id",
	}[t]
	if field == "" {
		field = "id"
	}
	return field
}

type pageJSON struct {
	Data     any     `json:"data"`
	NextPage *string `json:"next_page"`
}

func page(data any, next string) pageJSON {
	if next == "" {
		return pageJSON{Data: data}
	}
	return pageJSON{Data: data, NextPage: &next}
}

type deletedJSON struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Version *versionJSON `json:"gitmem_version,omitempty"` // gitmem's own, as memoryJSON's
}
