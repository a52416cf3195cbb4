package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// expireRoutes: POST /v1/memory_stores/{id}/expire deletes the memories unused for the
// store's expire_after now, instead of at the server's next scheduled run (a gitmem
// extension, for read_write keys; see gitmem expire). {"dry_run": true} only reports.
func (s *Server) expireRoutes(g *echo.Group) {
	g.POST("/memory_stores/:store/expire", s.expireStore)
}

type expiredJSON struct {
	MemoryID        string  `json:"memory_id"`
	Path            string  `json:"path"`
	SizeBytes       int     `json:"content_size_bytes"`
	LastUsedAt      string  `json:"last_used_at"`
	MemoryVersionID *string `json:"memory_version_id"` // null in a dry run
}

type expireJSON struct {
	Type          string        `json:"type"`
	MemoryStoreID string        `json:"memory_store_id"`
	DryRun        bool          `json:"dry_run"`
	ExpireAfter   *string       `json:"expire_after"` // null: the store has no expiry
	Cutoff        string        `json:"cutoff"`
	Expired       []expiredJSON `json:"expired"`
}

func (s *Server) expireStore(c echo.Context) error {
	st, _, err := s.store(c, true)
	if err != nil {
		return err
	}
	b, err := readBody(c, "dry_run")
	if err != nil {
		return err
	}
	var dryRun bool
	if b.has("dry_run") {
		if err := b.decode("dry_run", &dryRun, "true or false"); err != nil {
			return err
		}
	}
	rep, err := st.Expire(c.Request().Context(), dryRun)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ExpireJSON(st.ID(), rep))
}

// ExpireJSON is an expiry's report as the expire route answers it (also the CLI's --json).
func ExpireJSON(storeID string, rep gitstore.ExpireReport) any {
	out := expireJSON{Type: "memory_store_expire", MemoryStoreID: storeID, DryRun: rep.DryRun,
		Cutoff: wireTime(rep.Cutoff), Expired: []expiredJSON{}}
	if rep.ExpireAfter != 0 {
		out.ExpireAfter = strPtr(rep.ExpireAfter.String())
	}
	for _, e := range rep.Expired {
		out.Expired = append(out.Expired, expiredJSON{MemoryID: e.MemoryID, Path: e.Path, SizeBytes: e.SizeBytes,
			LastUsedAt: wireTime(e.LastUsed), MemoryVersionID: strPtr(e.VersionID)})
	}
	return out
}
