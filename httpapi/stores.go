package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
)

func (s *Server) storeRoutes(g *echo.Group) {
	g.POST("/memory_stores", s.createStore)
	g.GET("/memory_stores", s.listStores)
	g.GET("/memory_stores/:store", s.getStore)
	g.POST("/memory_stores/:store", s.updateStore)
	g.DELETE("/memory_stores/:store", s.deleteStore)
	g.POST("/memory_stores/:store/archive", s.archiveStore)

	g.POST("/memory_stores/:store/memories", s.createMemory)
	g.GET("/memory_stores/:store/memories", s.listMemories)
	g.GET("/memory_stores/:store/memories/:memory", s.getMemory)
	g.POST("/memory_stores/:store/memories/:memory", s.updateMemory)
	g.PATCH("/memory_stores/:store/memories/:memory", s.updateMemory)
	g.DELETE("/memory_stores/:store/memories/:memory", s.deleteMemory)

	g.GET("/memory_stores/:store/memory_versions", s.listVersions)
	g.GET("/memory_stores/:store/memory_versions/:version", s.getVersion)
	g.POST("/memory_stores/:store/memory_versions/:version/redact", s.redactVersion)
	s.historyRoutes(g)
}

// store opens the store of the request, checking that the caller may use it (and write
// to it, if write).
func (s *Server) store(c echo.Context, write bool) (*gitstore.Store, caller, error) {
	cl := callerOf(c)
	id := c.Param("store")
	if err := cl.checkStore(id); err != nil {
		return nil, cl, err
	}
	if write {
		if err := cl.checkWrite(); err != nil {
			return nil, cl, err
		}
	}
	st, err := s.data.Store(c.Request().Context(), id)
	return st, cl, err
}

// storeView is store, plus the request's view parameter (basic or full, else def).
func (s *Server) storeView(c echo.Context, write bool, def string) (*gitstore.Store, caller, bool, error) {
	full, err := view(c, def)
	if err != nil {
		return nil, caller{}, false, err
	}
	st, cl, err := s.store(c, write)
	return st, cl, full, err
}

func (s *Server) createStore(c echo.Context) error {
	cl := callerOf(c)
	if err := cl.checkWrite(); err != nil {
		return err
	}
	if cl.key != nil && cl.key.StoreID != "" {
		return forbidden("this API key (%s) is limited to memory store %s and cannot create stores", cl.key.ID, cl.key.StoreID)
	}
	b, err := readBody(c, "name", "description", "metadata", "policy")
	if err != nil {
		return err
	}
	in := gitstore.CreateStoreInput{Actor: cl.actor}
	if in.Name, err = b.requiredStr("name"); err != nil {
		return err
	}
	if d, err := b.str("description"); err != nil {
		return err
	} else if d != nil {
		in.Description = *d
	}
	if b.has("metadata") {
		if err := b.decode("metadata", &in.Metadata, "an object of string values"); err != nil {
			return err
		}
	}
	if in.Policy, err = createPolicy(b); err != nil {
		return err
	}
	st, err := s.data.CreateStore(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return storeReply(c, st)
}

// storeReply answers with the store's current metadata.
func storeReply(c echo.Context, st *gitstore.Store) error {
	info, err := st.Info(c.Request().Context())
	if err != nil {
		return err
	}
	return storeObject(c, st, info)
}

func (s *Server) listStores(c echo.Context) error {
	cl := callerOf(c)
	var opts gitstore.StoreListOptions
	var err error
	if opts.Limit, err = queryInt(c, "limit", 20, 1, 100); err != nil {
		return err
	}
	if opts.IncludeArchived, err = queryBool(c, "include_archived"); err != nil {
		return err
	}
	if opts.CreatedAtGTE, err = queryTime(c, "created_at[gte]", "created_at_gte"); err != nil {
		return err
	}
	if opts.CreatedAtLTE, err = queryTime(c, "created_at[lte]", "created_at_lte"); err != nil {
		return err
	}
	opts.Cursor = c.QueryParam("page")
	data := []storeJSON{}
	if cl.key != nil && cl.key.StoreID != "" {
		// A key limited to one store sees that store only.
		st, err := s.data.Store(c.Request().Context(), cl.key.StoreID)
		if err != nil {
			return err
		}
		info, err := st.Info(c.Request().Context())
		if err != nil {
			return err
		}
		if opts.Cursor == "" && (info.ArchivedAt == nil || opts.IncludeArchived) {
			obj, err := s.storeJSON(c, info)
			if err != nil {
				return err
			}
			data = append(data, obj)
		}
		return c.JSON(http.StatusOK, page(data, ""))
	}
	p, err := s.data.ListStores(c.Request().Context(), opts)
	if err != nil {
		return err
	}
	for _, info := range p.Stores {
		obj, err := s.storeJSON(c, info)
		if err != nil {
			return err
		}
		data = append(data, obj)
	}
	return c.JSON(http.StatusOK, page(data, p.NextCursor))
}

func (s *Server) getStore(c echo.Context) error {
	st, _, err := s.store(c, false)
	if err != nil {
		return err
	}
	return storeReply(c, st)
}

func (s *Server) updateStore(c echo.Context) error {
	st, cl, err := s.store(c, true)
	if err != nil {
		return err
	}
	b, err := readBody(c, "name", "description", "metadata", "policy")
	if err != nil {
		return err
	}
	p := gitstore.StorePatch{Actor: cl.actor}
	if p.Name, err = b.str("name"); err != nil {
		return err
	}
	if p.Description, err = b.str("description"); err != nil {
		return err
	}
	if b.has("metadata") {
		if err := b.decode("metadata", &p.Metadata, "an object whose values are strings (to set) or null (to delete)"); err != nil {
			return err
		}
	}
	if p.Policy, err = patchPolicy(b); err != nil {
		return err
	}
	info, err := s.data.UpdateStore(c.Request().Context(), st.ID(), p) // a new name must be free
	if err != nil {
		return err
	}
	return storeObject(c, st, info)
}

func (s *Server) archiveStore(c echo.Context) error {
	st, cl, err := s.store(c, true)
	if err != nil {
		return err
	}
	if _, err := readBody(c); err != nil {
		return err
	}
	info, err := st.Archive(c.Request().Context(), cl.actor)
	if err != nil {
		return err
	}
	return storeObject(c, st, info)
}

func (s *Server) deleteStore(c echo.Context) error {
	st, _, err := s.store(c, true)
	if err != nil {
		return err
	}
	s.props.Forget(st.ID()) // its open proposals' forks, before their files go
	err = s.data.DeleteStore(c.Request().Context(), st.ID())
	s.props.Forget(st.ID())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deletedJSON{Type: "memory_store_deleted", ID: st.ID()})
}
