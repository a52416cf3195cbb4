package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// The web UI is served beside the API by the same server, and decides who a request comes
// from by the same rules: what follows exports them, so that there is one place for each.

// Caller is who a request comes from: the key (nil without keys in force) and the actor of
// its writes.
type Caller struct {
	Key   *apikeys.Key
	Actor gitstore.Actor
}

// CanWrite tells whether the caller may change memory: everyone but a read_only key.
func (c Caller) CanWrite() bool { return c.Key == nil || c.Key.Access == apikeys.ReadWrite }

// CanSee tells whether the caller may use store id: every store, but for a store-limited key.
func (c Caller) CanSee(storeID string) bool {
	return c.Key == nil || c.Key.StoreID == "" || c.Key.StoreID == storeID
}

// KeysInForce tells whether requests need a key (see keysInForce).
func (s *Server) KeysInForce() (bool, error) { return s.keysInForce() }

// Identify finds the caller of r, which brought secret ("" for none), as every API route
// does: without keys in force, the local user for requests addressed to loopback only.
func (s *Server) Identify(r *http.Request, secret string) (Caller, error) {
	cl, err := s.identify(r, secret, "missing API key: sign in with one")
	return Caller{Key: cl.key, Actor: cl.actor}, err
}

// KeyCaller is the caller that key authenticates: its writes are the key's.
func KeyCaller(key apikeys.Key) Caller {
	return Caller{Key: &key, Actor: keyActor(key)}
}

func keyActor(key apikeys.Key) gitstore.Actor {
	return gitstore.Actor{Type: gitstore.APIActor, ID: key.ID, Name: key.Name}
}

// ErrorStatus tells how the API answers err: its status, error type and the message it
// shows (never an internal error's text).
func ErrorStatus(err error) (status int, typ, message string) {
	ae := errorFor(err)
	return ae.status, ae.typ, ae.message
}

// RetryAfter is the Retry-After, in whole seconds, that the API answers err with (a 429 past
// a key's rate), or 0 for none.
func RetryAfter(err error) int { return errorFor(err).retryAfter }

// LimitRate takes a request of c from its key's token bucket (gitmem serve --rate-limit), the
// one the key's API, MCP and git requests take from: the UI's pages call it once they know
// the key. Past the rate it answers a 429 error (ErrorStatus, RetryAfter) and counts the
// refusal; without a rate limit, or for a caller without a key, nil.
func (s *Server) LimitRate(c Caller) error { return s.limitRate(caller{key: c.Key, actor: c.Actor}) }

// LimitSignIn takes a sign-in attempt of r's client address from that address's bucket,
// before the key it brings is checked (limitSignIn); past it, a 429 error as LimitRate's.
func (s *Server) LimitSignIn(r *http.Request) error { return s.limitSignIn(r) }

// Mount serves h for every method under prefix (which ends with "/"), behind the server's
// request ID, logging, recovery, limits and cross-origin refusal, and redirects "/" there.
func (s *Server) Mount(prefix string, h http.Handler) {
	s.e.Any(prefix+"*", echo.WrapHandler(h))
	s.e.GET(prefix[:len(prefix)-1], func(c echo.Context) error { return c.Redirect(http.StatusFound, prefix) })
	s.e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusFound, prefix) })
}
