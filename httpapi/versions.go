package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

func (s *Server) listVersions(c echo.Context) error {
	st, _, full, err := s.memView(c, "basic")
	if err != nil {
		return err
	}
	f := gitstore.VersionFilter{WithContent: full, MemoryID: c.QueryParam("memory_id"),
		Operation: gitstore.Operation(c.QueryParam("operation")), SessionID: c.QueryParam("session_id"),
		APIKeyID: c.QueryParam("api_key_id"), Cursor: c.QueryParam("page")}
	if f.Limit, err = limit(c, full); err != nil {
		return err
	}
	if f.CreatedAtGTE, err = queryTime(c, "created_at[gte]", "created_at_gte"); err != nil {
		return err
	}
	if f.CreatedAtLTE, err = queryTime(c, "created_at[lte]", "created_at_lte"); err != nil {
		return err
	}
	data := []versionJSON{}
	if c.QueryParam("service_account_id") != "" {
		// gitmem has no service accounts, so none of its versions match.
		return c.JSON(http.StatusOK, page(data, ""))
	}
	// A listing by operation or time alone walks the store's versions until it fills a
	// page: it ends when the client goes, or at the answer's deadline (limitRequests).
	p, err := st.Versions(c.Request().Context(), f)
	if err != nil {
		return err
	}
	for _, v := range p.Versions {
		data = append(data, toVersion(v))
	}
	return c.JSON(http.StatusOK, page(data, p.NextCursor))
}

func (s *Server) getVersion(c echo.Context) error {
	st, _, full, err := s.memView(c, "full")
	if err != nil {
		return err
	}
	v, err := st.Version(c.Request().Context(), c.Param("version"), full)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toVersion(v))
}

// redactVersion scrubs a version's content and path out of the store's history and answers
// the redacted version. Sessions and read-only keys may not redact.
func (s *Server) redactVersion(c echo.Context) error {
	st, cl, err := s.store(c, true)
	if err != nil {
		return err
	}
	if _, err := readBody(c); err != nil {
		return err
	}
	if cl.actor.Type == gitstore.SessionActor {
		return forbidden("sessions cannot redact versions; redact with an API key, without the %s header", SessionHeader)
	}
	if cl.key != nil && cl.key.Access != apikeys.ReadWrite {
		return forbidden("this API key (%s) is %s; redaction needs a read_write key", cl.key.ID, cl.key.Access)
	}
	res, err := st.Redact(c.Request().Context(), gitstore.RedactInput{VersionID: c.Param("version"), Actor: cl.actor})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, redactedJSON{versionJSON: toVersion(res.Version), Redaction: redactionResultJSON{
		OldHead: nilIfEmpty(res.OldHead), NewHead: nilIfEmpty(res.NewHead), RewrittenCommits: res.Rewritten,
		ContentRemains: res.ContentRemains, Proposals: toForkRedactions(res.Forks), TookMS: res.Took.Milliseconds()}})
}

func toForkRedactions(fs []gitstore.ForkRedaction) []forkRedactionJSON {
	out := []forkRedactionJSON{}
	for _, f := range fs {
		action := "redacted"
		if f.Closed {
			action = "closed"
		}
		out = append(out, forkRedactionJSON{ID: f.ID, Action: action})
	}
	return out
}

// redactedJSON is the redacted version, with what the rewrite did as gitmem's own field
// (the SDKs keep it as an extra field): main's commit before and after (null when the version
// was redacted already), the commits rewritten, whether the same bytes remain as another
// version's or file's, and the proposals whose forks held the version: redacted there too,
// or closed.
type redactedJSON struct {
	versionJSON
	Redaction redactionResultJSON `json:"redaction"`
}

type redactionResultJSON struct {
	OldHead          *string             `json:"old_head"`
	NewHead          *string             `json:"new_head"`
	RewrittenCommits int                 `json:"rewritten_commits"`
	ContentRemains   bool                `json:"content_remains"`
	Proposals        []forkRedactionJSON `json:"proposals"`
	TookMS           int64               `json:"took_ms"`
}

type forkRedactionJSON struct {
	ID     string `json:"id"`
	Action string `json:"action"` // redacted or closed
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
