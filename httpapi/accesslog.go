package httpapi

import (
	"context"
	"log/slog"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// accessLog writes a line per request at info: method, route (the pattern, which names no
// memory), path, status, duration, request id, client address (from X-Forwarded-For only
// when the peer is a trusted proxy) and the key's id; never a secret (keys come
// in headers, which are not logged) nor a query string (a search's words are memory
// content). Health probes log at debug, as they come every few seconds; so does every
// request unless Options.AccessLog is set.
func (s *Server) accessLog(c echo.Context, v middleware.RequestLoggerValues) {
	level := slog.LevelDebug
	if s.opts.AccessLog {
		level = slog.LevelInfo
	}
	route := c.Path()
	if s.opts.Observe != nil {
		s.opts.Observe(route, c.Request().URL.Path, v.Method, v.Status, v.Latency)
	}
	if route == "/livez" || route == "/readyz" {
		level = slog.LevelDebug
	}
	if !s.log.Enabled(context.Background(), level) {
		return
	}
	attrs := []slog.Attr{slog.String("method", v.Method), slog.String("route", route),
		slog.String("path", c.Request().URL.Path), slog.Int("status", v.Status),
		slog.Float64("duration_ms", float64(v.Latency.Microseconds())/1000), slog.String("request_id", requestID(c)),
		slog.String("client", c.RealIP())}
	if cl := callerOf(c); cl.key != nil {
		attrs = append(attrs, slog.String("key", cl.key.ID))
	}
	s.log.LogAttrs(context.Background(), level, "request", attrs...)
}
