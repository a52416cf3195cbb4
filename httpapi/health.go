package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/health"
	"github.com/gitmem/gitmem/internal/buildinfo"
	"github.com/gitmem/gitmem/internal/gitexec"
	"github.com/gitmem/gitmem/search"
)

// ReadyChecks are the parts of readiness of a server over d with the search service idx
// (nil: none): every store opened, every catalog caught up with main, the search service
// up, the data directory writable, and git on the PATH (git over HTTP runs it).
func ReadyChecks(d *gitstore.DataDir, idx *search.Service) []health.Check {
	checks := []health.Check{
		{Name: "stores:open", Type: "datastore", Unit: "stores", Run: func(ctx context.Context) (any, error) { return d.OpenAll(ctx) }},
		{Name: "catalog:caught-up", Type: "datastore", Unit: "stores caught up now", Run: func(ctx context.Context) (any, error) { return d.CatchUpAll(ctx) }},
		{Name: "disk:writable", Type: "system", Run: func(context.Context) (any, error) { return nil, d.CheckWritable() }},
		{Name: "git:present", Type: "system", Run: func(context.Context) (any, error) {
			p, err := gitexec.Path()
			if err != nil {
				return nil, err
			}
			return p, nil
		}},
	}
	if idx != nil {
		checks = append(checks, health.Check{Name: "search:up", Type: "component", Unit: "indexes open",
			Run: func(context.Context) (any, error) { return idx.Ready() }})
	}
	return checks
}

// EnableHealth serves GET /livez and /readyz (health.Checker) without a key, as probes
// send none; why a check failed shows only to a caller with a key, or to anyone while no
// key is in force (the server then listens on loopback only).
func (s *Server) EnableHealth(checks []health.Check) {
	c := &health.Checker{Checks: checks, Version: buildinfo.Read().String(), Detail: func(r *http.Request) bool {
		_, err := s.Identify(r, headerSecret(r))
		return err == nil
	}}
	s.e.GET("/livez", echo.WrapHandler(http.HandlerFunc(c.Live)))
	s.e.GET("/readyz", echo.WrapHandler(http.HandlerFunc(c.Ready)))
}

// Guard serves h, which tells of every store (the metrics), only to a caller that every API
// route would let in and that may see every store: with keys in force, a request with a
// valid key (read_only will do) not limited to one store; without, one addressed to loopback.
func (s *Server) Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A scrape has no sign-in page: the 401 says how to send a key, as the API's does.
		cl, err := s.identify(r, headerSecret(r), "missing API key: send it in the x-api-key header, or as Authorization: Bearer <key> (in a Prometheus scrape config: authorization: {credentials: <key>})")
		if err == nil && cl.key != nil && cl.key.StoreID != "" {
			err = forbidden("this API key (%s) is limited to memory store %s; the metrics tell of every store", cl.key.ID, cl.key.StoreID)
		}
		if err != nil {
			status, _, msg := ErrorStatus(err)
			http.Error(w, msg, status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// EnableMetrics serves GET /metrics (h) on the main port, behind Guard.
func (s *Server) EnableMetrics(h http.Handler) {
	s.e.GET("/metrics", echo.WrapHandler(s.Guard(h)))
}
