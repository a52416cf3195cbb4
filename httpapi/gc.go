package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

// gcRoutes: POST /v1/memory_stores/{id}/gc repacks the store's repository (a gitmem
// extension, for read_write keys; see gitmem gc).
func (s *Server) gcRoutes(g *echo.Group) {
	g.POST("/memory_stores/:store/gc", s.gcStore)
}

type objectStatsJSON struct {
	LooseObjects int   `json:"loose_objects"`
	LooseBytes   int64 `json:"loose_bytes"`
	Packs        int   `json:"packs"`
	PackBytes    int64 `json:"pack_bytes"`
}

func toObjectStats(o gitstore.ObjectStats) objectStatsJSON {
	return objectStatsJSON{o.LooseObjects, o.LooseBytes, o.Packs, o.PackBytes}
}

func (s *Server) gcStore(c echo.Context) error {
	st, _, _, err := s.storeView(c, true, "basic")
	if err != nil {
		return err
	}
	if _, err := readBody(c); err != nil {
		return err
	}
	res, err := st.GC(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, GCJSON(st.ID(), res))
}

// GCJSON is a gc's result as the gc route answers it (also the CLI's --json).
func GCJSON(storeID string, res gitstore.GCResult) any {
	return map[string]any{"type": "memory_store_gc", "memory_store_id": storeID,
		"before": toObjectStats(res.Before), "after": toObjectStats(res.After),
		"kept_old_packs": res.KeptOldPacks, "took_ms": res.Took.Milliseconds()}
}
