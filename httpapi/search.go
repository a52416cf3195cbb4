package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/gitmem/gitmem/search"
)

// EnableSearch serves GET /v1/memory_stores/{id}/search?q=&path_prefix=&limit=&snippets=
// from svc. Call it before serving.
// The memory_search tool uses svc from then on too.
func (s *Server) EnableSearch(svc *search.Service) {
	s.search = svc
	s.e.GET("/v1/memory_stores/:store/search", s.searchStore, middleware.BodyLimit(bodyLimit), s.authenticate, checkQuery)
}

// searchJSON is the answer of a search: the hits best first, and the commit of the store
// that the index reflected (every write answered before the request is in it).
type searchJSON struct {
	Type          string       `json:"type"`
	MemoryStoreID string       `json:"memory_store_id"`
	Query         string       `json:"query"`
	Commit        string       `json:"commit"`
	Total         uint64       `json:"total"`
	Data          []search.Hit `json:"data"`
}

// rebuildRetry is the Retry-After of a search answered while its index is rebuilt.
const rebuildRetry = 2 * time.Second

func (s *Server) searchStore(c echo.Context) error {
	st, _, err := s.store(c, false)
	if err != nil {
		return err
	}
	req := search.Request{Query: c.QueryParam("q"), PathPrefix: c.QueryParam("path_prefix")}
	if req.Query == "" {
		return badRequest(`query parameter q is required: words, "a phrase", prefix*, -word, path:/dir/`)
	}
	if req.Limit, err = queryInt(c, "limit", 10, 1, search.MaxLimit); err != nil {
		return err
	}
	if req.Snippets, err = queryInt(c, "snippets", 3, 1, 20); err != nil {
		return err
	}
	res, err := s.search.Search(c.Request().Context(), st.ID(), req)
	if errors.As(err, new(*search.UnavailableError)) {
		// A 503 (KindUnavailable) that a rebuild outlasts longer than a closed store.
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(rebuildRetry.Seconds())))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, searchJSON{Type: "memory_search_result", MemoryStoreID: st.ID(), Query: req.Query,
		Commit: res.Commit, Total: res.Total, Data: res.Hits})
}
