package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// precondition reads a precondition object: {"type":"not_exists"} or
// {"type":"content_sha256","content_sha256":"..."}.
func precondition(b body) (*gitstore.Precondition, error) {
	if !b.has("precondition") {
		return nil, nil
	}
	var raw struct {
		Type          string  `json:"type"`
		ContentSHA256 *string `json:"content_sha256"`
	}
	if err := b.decode("precondition", &raw, `an object like {"type":"content_sha256","content_sha256":"<64 hex>"} or {"type":"not_exists"}`); err != nil {
		return nil, err
	}
	p := &gitstore.Precondition{Type: gitstore.PreconditionType(raw.Type)}
	switch p.Type {
	case gitstore.ContentSHA256:
		if raw.ContentSHA256 == nil {
			return nil, badRequest("precondition.content_sha256 is required when precondition.type is content_sha256")
		}
		p.ContentSHA256 = *raw.ContentSHA256
	case gitstore.NotExists:
	case "":
		return nil, badRequest("precondition.type is required: content_sha256 or not_exists")
	default:
		return nil, badRequest("precondition.type must be content_sha256 or not_exists, got %q", raw.Type)
	}
	return p, nil
}

// withContent reads the memory again with its content for a full view.
func withContent(c echo.Context, st *gitstore.Store, m gitstore.Memory, full bool) (gitstore.Memory, error) {
	if !full || m.Content != nil {
		return m, nil
	}
	return st.Get(c.Request().Context(), m.ID, true)
}

func (s *Server) createMemory(c echo.Context) error {
	full, err := view(c, "basic")
	if err != nil {
		return err
	}
	st, cl, err := s.writeStore(c)
	if err != nil {
		return err
	}
	b, err := readBody(c, "path", "content", "precondition")
	if err != nil {
		return err
	}
	in := gitstore.WriteInput{Actor: cl.actor}
	if in.Path, err = b.requiredStr("path"); err != nil {
		return err
	}
	if !b.has("content") {
		return badRequest(`field "content" is required and must be a string, not null (pass "" for an empty memory)`)
	}
	if c, err := b.str("content"); err != nil {
		return err
	} else if c != nil {
		in.Content = *c
	}
	if in.Precondition, err = precondition(b); err != nil {
		return err
	}
	strict := s.opts.StrictCreate && in.Precondition == nil
	if strict {
		in.Precondition = &gitstore.Precondition{Type: gitstore.NotExists}
	}
	var res gitstore.WriteResult
	st, err = s.memWrite(c, st, cl, func(ctx context.Context, st *gitstore.Store) (err error) {
		res, err = st.Write(ctx, in)
		return err
	})
	if err != nil {
		if ge, ok := err.(*gitstore.Error); ok && strict && ge.Kind == gitstore.KindPreconditionFailed {
			// The public beta's create: an occupied path is a path conflict.
			return errorForPathConflict(in.Path, ge)
		}
		return err
	}
	return memoryReply(c, st, res, full)
}

func errorForPathConflict(path string, ge *gitstore.Error) error {
	return &apiError{status: http.StatusConflict, typ: "memory_path_conflict_error",
		message:       "path " + path + " is already taken by memory " + ge.ConflictingMemoryID,
		conflictingID: ge.ConflictingMemoryID, conflictingPath: ge.ConflictingPath}
}

func (s *Server) listMemories(c echo.Context) error {
	st, _, full, err := s.memView(c, "basic")
	if err != nil {
		return err
	}
	opts := gitstore.ListOptions{WithContent: full, PathPrefix: c.QueryParam("path_prefix"), Cursor: c.QueryParam("page")}
	if opts.Limit, err = limit(c, full); err != nil {
		return err
	}
	if opts.Depth, err = queryInt(c, "depth", 0, 0, gitstore.MaxPathSegments); err != nil {
		return err
	}
	rd, err := reader(c, st)
	if err != nil {
		return err
	}
	p, err := rd.List(c.Request().Context(), opts)
	if err != nil {
		return err
	}
	data := make([]any, 0, len(p.Items))
	for _, it := range p.Items {
		if it.Memory != nil {
			data = append(data, toMemory(*it.Memory))
		} else {
			data = append(data, prefixJSON{Type: "memory_prefix", Path: it.Prefix})
		}
	}
	return c.JSON(http.StatusOK, page(data, p.NextCursor))
}

func (s *Server) getMemory(c echo.Context) error {
	st, _, full, err := s.memView(c, "full")
	if err != nil {
		return err
	}
	rd, err := reader(c, st)
	if err != nil {
		return err
	}
	m, err := rd.Get(c.Request().Context(), c.Param("memory"), full)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toMemory(m))
}

func (s *Server) updateMemory(c echo.Context) error {
	full, err := view(c, "basic")
	if err != nil {
		return err
	}
	st, cl, err := s.writeStore(c)
	if err != nil {
		return err
	}
	b, err := readBody(c, "path", "content", "precondition")
	if err != nil {
		return err
	}
	in := gitstore.UpdateInput{ID: c.Param("memory"), Actor: cl.actor}
	if in.Content, err = b.str("content"); err != nil {
		return err
	}
	if in.Path, err = b.str("path"); err != nil {
		return err
	}
	if in.Precondition, err = precondition(b); err != nil {
		return err
	}
	var res gitstore.WriteResult
	st, err = s.memWrite(c, st, cl, func(ctx context.Context, st *gitstore.Store) (err error) {
		res, err = st.UpdateMemory(ctx, in)
		return err
	})
	if err != nil {
		return err
	}
	return memoryReply(c, st, res, full)
}

func (s *Server) deleteMemory(c echo.Context) error {
	st, cl, err := s.writeStore(c)
	if err != nil {
		return err
	}
	in := gitstore.DeleteInput{ID: c.Param("memory"), ExpectedSHA256: c.QueryParam("expected_content_sha256"), Actor: cl.actor}
	var v gitstore.Version
	st, err = s.memWrite(c, st, cl, func(ctx context.Context, st *gitstore.Store) (err error) {
		v, err = st.Delete(ctx, in)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deletedJSON{Type: "memory_deleted", ID: in.ID, Version: versionMade(c, st, v.ID)})
}
