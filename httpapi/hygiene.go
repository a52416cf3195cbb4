package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/secrets"
)

// A store's hygiene policy and usage travel as gitmem's own fields of the memory_store
// object: "policy" (also in the body of store create and update) and "usage". Extra body
// fields rather than reserved metadata keys, because metadata is the caller's own map (16
// string pairs), and a policy has typed values that are checked as such; the official SDKs
// send them with their extra-body option and keep them as extra fields of the answer.

type policyJSON struct {
	Secrets     gitstore.SecretsPolicy `json:"secrets"`
	ExpireAfter *string                `json:"expire_after"`
	MaxMemories *int                   `json:"max_memories"`
	MaxBytes    *int64                 `json:"max_bytes"`
	// ReviewPaths and ReviewExempt: folders that change only through review (proposals), and
	// the keys that may change them directly.
	ReviewPaths  []string `json:"review_paths,omitempty"`
	ReviewExempt []string `json:"review_exempt,omitempty"`
}

type usageJSON struct {
	Memories int   `json:"memories"`
	Bytes    int64 `json:"bytes"`
}

type redactionJSON struct {
	Type   string `json:"type"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func toPolicy(p gitstore.Policy) policyJSON {
	out := policyJSON{Secrets: p.Secrets.Effective(), ReviewPaths: p.ReviewPaths, ReviewExempt: p.ReviewExempt}
	if p.ExpireAfter != 0 {
		s := p.ExpireAfter.String()
		out.ExpireAfter = &s
	}
	if p.MaxMemories != 0 {
		out.MaxMemories = &p.MaxMemories
	}
	if p.MaxBytes != 0 {
		out.MaxBytes = &p.MaxBytes
	}
	return out
}

func toRedactions(fs []secrets.Finding) []redactionJSON {
	var out []redactionJSON
	for _, f := range fs {
		out = append(out, redactionJSON{Type: f.Kind, Line: f.Line, Column: f.Column})
	}
	return out
}

var policyFields = []string{"expire_after", "max_bytes", "max_memories", "review_exempt", "review_paths", "secrets"} // sorted, for the message

// patchPolicy reads the body's "policy" object: the fields it has change, a null removes
// an expiry or a quota (and sets secrets back to reject); nil if the body has none.
func patchPolicy(b body) (*gitstore.PolicyPatch, error) {
	if !b.has("policy") {
		return nil, nil
	}
	var f body
	if err := b.decode("policy", &f, `an object like {"secrets":"redact","expire_after":"30d","max_memories":1000,"max_bytes":10485760}`); err != nil {
		return nil, err
	}
	for k := range f {
		if !contains(policyFields, k) {
			return nil, badRequest("unknown field %q in policy; it takes: %s", k, strings.Join(policyFields, ", "))
		}
	}
	null := func(k string) bool { return bytes.Equal(bytes.TrimSpace(f[k]), []byte("null")) }
	var pp gitstore.PolicyPatch
	if raw, ok := f["secrets"]; ok {
		var v gitstore.SecretsPolicy
		if !null("secrets") && json.Unmarshal(raw, &v) != nil {
			return nil, badRequest("policy.secrets must be reject, redact or off")
		}
		pp.Secrets = &v
	}
	if raw, ok := f["expire_after"]; ok {
		var d gitstore.Duration
		if !null("expire_after") {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return nil, badRequest(`policy.expire_after must be a duration such as "720h" or "30d", or null for never`)
			}
			var err error
			if d, err = gitstore.ParseDuration(s); err != nil {
				return nil, err
			}
		}
		pp.ExpireAfter = &d
	}
	if raw, ok := f["max_memories"]; ok {
		var n int
		if !null("max_memories") && json.Unmarshal(raw, &n) != nil {
			return nil, badRequest("policy.max_memories must be a whole number, or null for no limit")
		}
		pp.MaxMemories = &n
	}
	if raw, ok := f["max_bytes"]; ok {
		var n int64
		if !null("max_bytes") && json.Unmarshal(raw, &n) != nil {
			return nil, badRequest("policy.max_bytes must be a whole number, or null for no limit")
		}
		pp.MaxBytes = &n
	}
	for _, field := range []struct {
		name string
		to   **[]string
		what string
	}{{"review_paths", &pp.ReviewPaths, `folders such as ["/team/"]`}, {"review_exempt", &pp.ReviewExempt, `API key ids such as ["apikey_..."]`}} {
		if raw, ok := f[field.name]; ok {
			list := []string{}
			if !null(field.name) && json.Unmarshal(raw, &list) != nil {
				return nil, badRequest("policy.%s must be an array of %s, or null for none", field.name, field.what)
			}
			*field.to = &list
		}
	}
	return &pp, nil
}

// createPolicy reads the policy of a new store: the default where the body says nothing.
func createPolicy(b body) (gitstore.Policy, error) {
	pp, err := patchPolicy(b)
	if err != nil || pp == nil {
		return gitstore.Policy{}, err
	}
	return gitstore.ApplyPolicyPatch(gitstore.Policy{}, pp), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// storeJSON is the memory_store object of a store, with its usage.
func (s *Server) storeJSON(c echo.Context, info gitstore.StoreInfo) (storeJSON, error) {
	st, err := s.data.Store(c.Request().Context(), info.ID)
	if err != nil {
		return storeJSON{}, err
	}
	u, err := st.Usage(c.Request().Context())
	if err != nil {
		return storeJSON{}, err
	}
	out := toStore(info, u)
	out.Head = st.Head()
	return out, nil
}

// storeObject answers with the memory_store object of st, whose metadata is info.
func storeObject(c echo.Context, st *gitstore.Store, info gitstore.StoreInfo) error {
	u, err := st.Usage(c.Request().Context())
	if err != nil {
		return err
	}
	out := toStore(info, u)
	out.Head = st.Head()
	return c.JSON(http.StatusOK, out)
}

// memoryReply answers a write with the memory it made: with its content in the full view,
// and with the secrets that redaction replaced, if any.
func memoryReply(c echo.Context, st *gitstore.Store, res gitstore.WriteResult, full bool) error {
	m := res.Memory
	if !full {
		m.Content = nil
	}
	m, err := withContent(c, st, m, full)
	if err != nil {
		return err
	}
	out := toMemory(m)
	out.RedactedSecrets = toRedactions(res.Redacted)
	if res.Version == nil {
		c.Response().Header().Set(UnchangedHeader, "true")
	} else {
		out.Version = versionMade(c, st, res.Version.ID)
	}
	return c.JSON(http.StatusOK, out)
}

// versionMade is version id, which a write made in st, for the write's answer, if the
// caller asked for it (IncludeVersionHeader) and its reads find it (not a write that a review
// policy sent to a proposal); else nil. Unread (a proposal's fork closed meanwhile by its
// approval), the write stands all the same, and the client asks for the version as it would
// without the header.
func versionMade(c echo.Context, st *gitstore.Store, id string) *versionJSON {
	if c.Request().Header.Get(IncludeVersionHeader) != "true" || c.Response().Header().Get(ProposalReadsHeader) == "false" {
		return nil
	}
	v, err := st.Version(c.Request().Context(), id, true)
	if err != nil {
		return nil
	}
	vj := toVersion(v)
	return &vj
}

// IncludeVersionHeader ("true"), on a memory write (a create, update, restore or delete),
// asks for the version that the write made in the answer's gitmem_version field, as GET
// .../memory_versions/{id} answers it: gitmem's client sends it, so that a write is one
// request. Other clients get the answer without it.
const IncludeVersionHeader = "x-gitmem-include-version"

// UnchangedHeader, on the answer to a memory write, says that the write made no version
// (the memory already had that content and path), so that a client need not read the memory
// before writing to tell.
const UnchangedHeader = "x-gitmem-unchanged"
