package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/gitmem/gitmem/gitstore"
)

// SyncFunc syncs a store with its remotes now, or with the one named remote: what each
// sync did (JSON), and an error for each remote whose sync failed. gitmem serve gives
// gitsync.Syncer.SyncRemotes, with its loop's syncer (httpapi does not import gitsync,
// whose tests run this package's servers).
type SyncFunc func(ctx context.Context, st *gitstore.Store, remote string) (done any, failed []error, err error)

// EnableSync serves POST /v1/memory_stores/{id}/sync (a gitmem extension, for read_write
// keys): it syncs the store with its remotes now, or with the one that {"remote": NAME}
// names, as gitmem sync does. The remotes themselves are the data directory's: the API
// does not add or remove them, as a remote is a URL that the server's git reads and
// writes. Call it before serving.
func (s *Server) EnableSync(sync SyncFunc) {
	s.e.POST("/v1/memory_stores/:store/sync", func(c echo.Context) error { return s.syncStore(c, sync) },
		middleware.BodyLimit(bodyLimit), s.authenticate, requireJSON, checkQuery)
}

// syncJSON is the answer of the sync route: what each sync with a remote did (data), and
// why the others failed (errors).
type syncJSON struct {
	Type          string   `json:"type"`
	MemoryStoreID string   `json:"memory_store_id"`
	Data          any      `json:"data"`
	Errors        []string `json:"errors"`
}

func (s *Server) syncStore(c echo.Context, sync SyncFunc) error {
	st, _, err := s.store(c, true)
	if err != nil {
		return err
	}
	b, err := readBody(c, "remote")
	if err != nil {
		return err
	}
	var name string
	if b.has("remote") {
		if err := b.decode("remote", &name, "a remote's name"); err != nil {
			return err
		}
	}
	done, failed, err := sync(c.Request().Context(), st, name)
	if err != nil {
		return err
	}
	out := syncJSON{Type: "memory_store_sync", MemoryStoreID: st.ID(), Data: done, Errors: []string{}}
	for _, e := range failed {
		out.Errors = append(out.Errors, e.Error())
	}
	return c.JSON(http.StatusOK, out)
}
