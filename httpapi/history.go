package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// The history routes are gitmem extensions of the memory store API: restore a memory to a
// version, diff two versions of a memory, blame a memory's lines.
func (s *Server) historyRoutes(g *echo.Group) {
	g.POST("/memory_stores/:store/memory_versions/:version/restore", s.restoreVersion)
	g.GET("/memory_stores/:store/memories/:memory/diff", s.diffMemory)
	g.GET("/memory_stores/:store/memories/:memory/blame", s.blameMemory)
	g.POST("/memory_stores/:store/revert", s.revertStore) // revert.go
}

// restoreVersion makes a new version of the version's memory with the version's content and
// path, and answers the memory as the other write routes do (view=basic unless asked). The
// body may name the memory ({"memory_id":"mem_…"}): the version must then be one of its.
func (s *Server) restoreVersion(c echo.Context) error {
	st, cl, full, err := s.storeView(c, true, "basic")
	if err != nil {
		return err
	}
	b, err := readBody(c, "memory_id")
	if err != nil {
		return err
	}
	in := gitstore.RestoreInput{VersionID: c.Param("version"), Actor: cl.actor}
	if id, err := b.str("memory_id"); err != nil {
		return err
	} else if id != nil {
		in.MemoryID = *id
	}
	res, err := st.Restore(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return memoryReply(c, st, res, full)
}

type diffJSON struct {
	Type     string  `json:"type"`
	MemoryID string  `json:"memory_id"`
	From     *string `json:"from"` // null when diffing the first version against nothing
	To       string  `json:"to"`
	FromPath *string `json:"from_path"`
	ToPath   string  `json:"to_path"`
	Diff     string  `json:"diff"`
}

// diffMemory answers the unified diff between two versions of a memory: ?from= (default:
// the version before to) and ?to= (default: the memory's head version).
func (s *Server) diffMemory(c echo.Context) error {
	st, _, err := s.memStore(c)
	if err != nil {
		return err
	}
	d, err := st.DiffMemory(c.Request().Context(), c.Param("memory"), c.QueryParam("from"), c.QueryParam("to"))
	if err != nil {
		return err
	}
	out := diffJSON{Type: "memory_diff", MemoryID: d.MemoryID, To: d.To.ID, ToPath: d.To.Path, Diff: d.Diff}
	if d.From.ID != "" {
		out.From, out.FromPath = &d.From.ID, &d.From.Path
	}
	return c.JSON(http.StatusOK, out)
}

type blameLineJSON struct {
	Line      int       `json:"line"`
	Text      string    `json:"text"`
	VersionID string    `json:"version_id"`
	CreatedBy actorJSON `json:"created_by"`
	SessionID *string   `json:"session_id"`
	CreatedAt string    `json:"created_at"`
}

type blameJSON struct {
	Type     string          `json:"type"`
	MemoryID string          `json:"memory_id"`
	Lines    []blameLineJSON `json:"lines"`
}

// blameMemory answers, for each line of the memory's current content, the version that last
// changed it, with that version's actor, session and time.
func (s *Server) blameMemory(c echo.Context) error {
	st, _, err := s.memStore(c)
	if err != nil {
		return err
	}
	lines, err := st.Blame(c.Request().Context(), c.Param("memory"))
	if err != nil {
		return err
	}
	out := blameJSON{Type: "memory_blame", MemoryID: c.Param("memory"), Lines: make([]blameLineJSON, len(lines))}
	for i, l := range lines {
		bl := blameLineJSON{Line: l.Line, Text: l.Text, VersionID: l.Version.ID, CreatedBy: toActor(l.Version.CreatedBy),
			CreatedAt: wireTime(l.Version.CreatedAt)}
		if sid := l.Version.CreatedBy.SessionID(); sid != "" {
			bl.SessionID = &sid
		}
		out.Lines[i] = bl
	}
	return c.JSON(http.StatusOK, out)
}
