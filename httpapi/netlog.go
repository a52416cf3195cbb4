package httpapi

import (
	"context"
	stdlog "log"
	"log/slog"
	"strings"
)

// NetHTTPLog is the log.Logger for an http.Server's ErrorLog: net/http's own messages (a
// handler's panic, a connection it could not serve) go to log at warn, but for failed TLS
// handshakes, which any scanner of the port causes, at debug.
func NetHTTPLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(netHTTPWriter{log}, "", 0)
}

type netHTTPWriter struct{ log *slog.Logger }

func (w netHTTPWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	w.log.Log(context.Background(), level, msg, "from", "net/http")
	return len(p), nil
}
