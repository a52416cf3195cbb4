package client

import (
	"net/http"
	"testing"

	"github.com/gitmem/gitmem/httpapi"
)

// TestIdleConnectionsClosedFirst: the client lets go of an idle connection before a server of
// the default limits would, so that no request is sent on a connection that the server is
// closing (see idleConnTimeout).
func TestIdleConnectionsClosedFirst(t *testing.T) {
	server := httpapi.DefaultLimits.IdleTimeout
	for name, c := range map[string]*Client{"New": New("http://x", ""), "NewPooled": NewPooled("http://x", "", 8)} {
		tr, ok := c.http.Transport.(*http.Transport)
		if !ok {
			t.Fatalf("%s: transport %T", name, c.http.Transport)
		}
		if got := tr.IdleConnTimeout; got <= 0 || got >= server {
			t.Errorf("%s: idle connections kept %v; the server closes them after %v", name, got, server)
		}
	}
}
