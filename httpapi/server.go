// Package httpapi serves gitmem over HTTP: the memory store API under /v1/memory_stores, in
// the shapes of the official Anthropic SDKs, with API keys.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/internal/buildinfo"
	"github.com/gitmem/gitmem/proposals"
	"github.com/gitmem/gitmem/search"
)

// bodyLimit bounds request bodies: a memory is at most 100 KB, and JSON escaping can grow
// it several times.
const bodyLimit = "1M"

// Options configure a Server.
type Options struct {
	// StrictCreate makes POST .../memories create only, as the public beta does: an occupied
	// path is a memory_path_conflict_error. By default it writes by path (an upsert) unless
	// the body has a not_exists precondition.
	StrictCreate bool
	// RequireKeys makes every request need a key from the start, even while no key exists
	// (gitmem serve sets it when keys existed at start or the address is not loopback).
	// Without it, keys are required from the first request that finds an active key, and
	// stay required: see keysInForce.
	RequireKeys bool
	// Limits bound connections and requests (limits.go).
	Limits Limits
	Logger *slog.Logger
	// TrustedProxies are the networks of reverse proxies whose X-Forwarded-For names the
	// client (in the access log); from anyone else the header is ignored.
	TrustedProxies []*net.IPNet
	// AccessLog logs a line per request at info (debug otherwise), as gitmem serve does.
	AccessLog bool
	// Observe, if set, is told of each request as it ends: its route (the pattern), path,
	// method, status and duration (for metrics).
	Observe func(route, path, method string, status int, took time.Duration)
	// ObserveRateLimited, if set, is told of each request refused past its key's rate
	// (Limits.RateLimit), with the key's id (for metrics).
	ObserveRateLimited func(keyID string)
	// Proposals keeps the stores' proposals; New makes one over the data directory if nil
	// (then Close closes its forks).
	Proposals *proposals.Manager
}

// Server is the HTTP API over a data directory.
type Server struct {
	data *gitstore.DataDir
	keys *apikeys.Keys
	opts Options
	log  *slog.Logger
	e    *echo.Echo

	// keysRequired latches: once set, every request needs a key (keysInForce).
	keysRequired atomic.Bool
	// started is when the server was built: a key created since was in force for a while,
	// even if it is revoked before any request sees it (keysInForce).
	started time.Time

	// search answers searches and the memory_search tool; nil until EnableSearch.
	search *search.Service

	// props keeps the proposals: where a propose key's writes go (proposals.go).
	props     *proposals.Manager
	ownsProps bool

	// pushes counts the git pushes being checked, of each key (git.go).
	pushes holdCount

	// rates holds each key's token bucket; nil without Limits.RateLimit (ratelimit.go).
	rates *keyRates
	// signIns holds the UI's sign-in buckets, one per client address, at most
	// maxSignInBuckets; nil without Limits.RateLimit (ratelimit.go).
	signIns *keyRates

	// streams counts the open event streams, of every key and of each (events.go); closing
	// is closed when the server shuts down, which ends them.
	streams   streamCount
	closing   chan struct{}
	closeOnce sync.Once
}

// New builds the server; other route groups (tools, git, MCP) add themselves to Echo().
func New(data *gitstore.DataDir, keys *apikeys.Keys, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Limits = opts.Limits.WithDefaults()
	s := &Server{data: data, keys: keys, opts: opts, log: opts.Logger, e: echo.New(), started: time.Now(),
		closing: make(chan struct{}), rates: newKeyRates(opts.Limits, opts.ObserveRateLimited)}
	if s.signIns = newKeyRates(opts.Limits, opts.ObserveRateLimited); s.signIns != nil {
		s.signIns.max = maxSignInBuckets
	}
	s.props = opts.Proposals
	if s.props == nil {
		l := proposals.Limits{Open: opts.Limits.MaxOpenProposals, OpenPerKey: opts.Limits.MaxOpenProposalsPerKey}
		s.props, s.ownsProps = proposals.NewWithLimits(data, l), true
	}
	if anyKey, err := keys.AnyActive(); opts.RequireKeys || anyKey || err != nil {
		// An unreadable key file fails closed: keys stay required, and requests fail
		// until it can be read.
		s.keysRequired.Store(true)
	}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = echo.ExtractIPDirect()
	if len(s.opts.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range s.opts.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	}
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{
		Generator:    func() string { return gitstore.NewID("req_", time.Now()) },
		TargetHeader: "request-id",
	}))
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			s.accessLog(c, v)
			return nil
		},
	}))
	e.Use(middleware.Recover())
	e.Use(s.limitRequests())   // limits.go
	e.Use(refuseCrossOrigin()) // csrf.go: every route, git's and MCP's included
	v1 := e.Group("/v1", middleware.BodyLimit(bodyLimit), s.authenticate, requireJSON, checkQuery)
	v1.GET("/version", func(c echo.Context) error { return c.JSON(http.StatusOK, buildinfo.Read()) })
	s.storeRoutes(v1)
	s.gcRoutes(v1)     // gc.go
	s.expireRoutes(v1) // expire.go
	s.eventRoutes(v1)  // events.go
	s.proposalRoutes(v1)
	s.toolRoutes(v1)
	s.mcpRoutes()
	return s
}

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// ServeListener serves on ln, within the server's Limits, until ctx ends, then shuts down
// gracefully, letting requests in flight finish.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	lim := s.opts.Limits.listener(ln)
	srv := s.opts.Limits.httpServer(s, lim, s.log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lim) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.closeOnce.Do(func() { close(s.closing) }) // event streams end, or Shutdown would wait for them
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return s.Close()
}

func requestID(c echo.Context) string { return c.Response().Header().Get("request-id") }
