package httpapi

import (
	"net"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
)

// SessionHeader names the session a caller writes for; versions then record a
// session_actor.
const SessionHeader = "x-gitmem-session-id"

// LocalUser is the actor of writes when no API key exists and gitmem serves loopback only.
var LocalUser = gitstore.Actor{Type: gitstore.UserActor, ID: "user_local", Name: "local user", Email: "local@gitmem"}

var sessionID = regexp.MustCompile(`^sesn_[A-Za-z0-9_-]{1,128}$`)

// caller is who sent a request: the key (if keys are in use) and the actor of its writes.
type caller struct {
	key   *apikeys.Key
	actor gitstore.Actor
}

const callerKey = "gitmem.caller"

// authenticate finds the caller: the key of the request once keys are in force (see
// keysInForce), else the local user.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		missing := "missing API key: send it in the x-api-key header, or as Authorization: Bearer <key>"
		if auth := c.Request().Header.Get("Authorization"); auth != "" && !strings.HasPrefix(auth, "Bearer ") {
			missing = "the Authorization header must be Bearer <key> (or send the key in the x-api-key header)"
		}
		cl, err := s.identify(c.Request(), headerSecret(c.Request()), missing)
		if err != nil {
			return err
		}
		if err := s.limitRate(cl); err != nil { // ratelimit.go
			return err
		}
		if sid := c.Request().Header.Get(SessionHeader); sid != "" {
			if !sessionID.MatchString(sid) {
				return badRequest("header %s must be a session id like sesn_abc123 (sesn_ and 1 to 128 letters, digits, _ or -), got %q", SessionHeader, sid)
			}
			keyID := ""
			if cl.key != nil {
				keyID = cl.key.ID
			}
			cl.actor = gitstore.Actor{Type: gitstore.SessionActor, ID: sid, APIKeyID: keyID}
		}
		c.Set(callerKey, cl)
		return next(c)
	}
}

// identify finds the caller of a request that brought secret ("" for none): the key with
// that secret once keys are in force, else the local user (for requests addressed to
// loopback only). missing is the message of the 401 when a key is needed and secret is "".
// Every route (the API, the tool routes, MCP, git) decides through here.
func (s *Server) identify(r *http.Request, secret, missing string) (caller, error) {
	cl := caller{actor: LocalUser}
	inForce, err := s.keysInForce()
	if err != nil {
		return cl, err
	}
	if !inForce && !loopbackHost(r.Host) {
		// Without keys anyone who reaches gitmem may use it, which is safe only because
		// it listens on loopback. A web page can still reach loopback through a name of
		// its own that resolves there (DNS rebinding): such a request names that host.
		return cl, forbidden("without API keys gitmem answers only requests addressed to localhost or a loopback address, not to %q; create a key to serve other names", r.Host)
	}
	if !inForce {
		return cl, nil
	}
	if secret == "" {
		return cl, unauthorized(missing)
	}
	key, ok, err := s.keys.Authenticate(secret)
	if err != nil {
		return cl, err
	}
	if !ok {
		return cl, unauthorized("invalid API key: no active key has this secret (it may have been revoked; " +
			"once keys are in force they stay required, even when every key is revoked: create one with gitmem keys create)")
	}
	cl.key = &key
	cl.actor = keyActor(key)
	return cl, nil
}

// keysInForce tells whether requests need a key. That is so from the start when the server
// was started with keys required (Options.RequireKeys, or an active key in the key file),
// and from the first request that finds a key that is active or was created since the
// server started (and so was in force, however briefly). Once in force, keys stay required
// until the server stops: revoking every key leaves every request refused, never open.
func (s *Server) keysInForce() (bool, error) {
	if s.keysRequired.Load() {
		return true, nil
	}
	anyKey, err := s.keys.InForceSince(s.started)
	if err != nil {
		return false, err
	}
	if anyKey {
		s.keysRequired.Store(true)
	}
	return anyKey, nil
}

// headerSecret is the key a request sends as x-api-key or Authorization: Bearer, or "".
func headerSecret(r *http.Request) string {
	if secret := r.Header.Get("x-api-key"); secret != "" {
		return secret
	}
	if auth := r.Header.Get("Authorization"); strings.HasPrefix(auth, "Bearer ") {
		return strings.TrimSpace(strings.TrimPrefix(auth, "Bearer "))
	}
	return ""
}

func callerOf(c echo.Context) caller {
	cl, _ := c.Get(callerKey).(caller)
	return cl
}

// checkStore refuses a key that is limited to another store.
func (cl caller) checkStore(storeID string) error {
	if cl.key != nil && cl.key.StoreID != "" && cl.key.StoreID != storeID {
		return forbidden("this API key (%s) is limited to memory store %s", cl.key.ID, cl.key.StoreID)
	}
	return nil
}

// checkWrite refuses read-only keys.
func (cl caller) checkWrite() error {
	switch {
	case cl.key == nil || cl.key.Access == apikeys.ReadWrite:
		return nil
	case cl.key.Access == apikeys.Propose:
		return forbidden("this API key (%s) may only propose: its writes of memories go to a proposal for review, and it cannot do this; use a read_write key", cl.key.ID)
	}
	return forbidden("this API key (%s) is read_only; writes need a read_write key", cl.key.ID)
}

// proposes tells whether the caller's memory writes go to a proposal.
func (cl caller) proposes() bool { return cl.key != nil && cl.key.Access == apikeys.Propose }

// loopbackHost tells whether a request's Host names the local machine: localhost, or a
// loopback IP address, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
