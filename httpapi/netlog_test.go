package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestNetHTTPLog: net/http's messages reach the log at warn, but failed TLS handshakes
// (a scanner of the port) at debug, so that they do not fill a log kept at info.
func TestNetHTTPLog(t *testing.T) {
	var buf bytes.Buffer
	l := NetHTTPLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Printf("http: TLS handshake error from 10.0.0.1:5555: EOF")
	l.Printf("http: panic serving 10.0.0.1:5556: boom")
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[0], "TLS handshake error") ||
		!strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "panic serving") {
		t.Errorf("net/http's messages logged as\n%s", out)
	}
}
