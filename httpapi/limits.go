package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gitmem/gitmem/proposals"
)

// Limits bound what clients can hold of a server: how long a request may take to arrive and
// to be answered, how long an idle connection is kept, and how many connections and
// requests are served at once. A zero field takes its default (DefaultLimits).
type Limits struct {
	// HeaderTimeout: a request's headers must arrive within it.
	HeaderTimeout time.Duration
	// BodyTimeout: the body of an API or MCP request must arrive within it, from the end of
	// its headers; else 408 and the connection is closed.
	BodyTimeout time.Duration
	// WriteTimeout: an API or MCP request must be answered within it, from the end of its
	// headers; a later write fails and the connection is closed.
	WriteTimeout time.Duration
	// GitTimeout takes the place of BodyTimeout and WriteTimeout for a request of git's
	// (/git/: one request is one clone, fetch or push).
	GitTimeout time.Duration
	// IdleTimeout: a keep-alive connection that sends no request for this long is closed.
	IdleTimeout time.Duration
	// MaxConns: connections served at once. A connection beyond them takes the place of the
	// one that has waited longest for a request (connLimit); while every one is serving a
	// request, it waits to be accepted.
	MaxConns int
	// MaxRequests: requests served at once; further ones are answered 503.
	MaxRequests int
	// MaxStreamsPerKey: event streams that one key (without keys: one client address) holds
	// open at once; a further one is answered 429. Every key's streams together are at most
	// MaxStreams().
	MaxStreamsPerKey int
	// MaxPushesPerKey: git pushes that one key (without keys: one client address) has
	// checked at once; a further one is answered 429. Each runs git and the push hook, whose
	// memory grows with what is pushed.
	MaxPushesPerKey int
	// MaxOpenProposals and MaxOpenProposalsPerKey bound the open proposals of a store, and
	// of one key in a store (proposals.Limits): each is a copy of the store on disk. They
	// apply to the manager that New makes, not to one passed in Options.Proposals.
	MaxOpenProposals, MaxOpenProposalsPerKey int
	// RateLimit: requests a second that one key (its sessions' included) may send to the
	// API, the tools, MCP and git's route, as a token bucket (ratelimit.go); past it, 429
	// with Retry-After. Requests without a key are not limited. 0 (or less, or not a finite
	// number), the default: no limit. It has no default other than off: how many requests an agent needs a
	// second is the deployment's to say.
	RateLimit float64
	// RateBurst: requests one key may send at once, after a pause, before RateLimit paces
	// it (the bucket's size). 0 (or less): defaultRateBurst of RateLimit.
	RateBurst int
}

// defaultRateBurst is the burst of a rate limit of perSecond requests a second: two seconds'
// worth, so that a client that paused may send a short batch at once, and at least 4, so
// that a git clone or fetch (up to 3 requests in a row with git's protocol v2) is not
// refused halfway by a rate of 1 or 2 a second.
func defaultRateBurst(perSecond float64) int {
	return int(max(min(math.Ceil(2*perSecond), maxRateBurst), 4))
}

// maxRateBurst bounds defaultRateBurst, of any rate.
const maxRateBurst = 1 << 30

// MaxStreams is how many event streams are open at once, of every key: half of MaxConns,
// so that the other half is always there for requests and health probes.
func (l Limits) MaxStreams() int { return max(l.MaxConns/2, 1) }

// DefaultLimits are the limits of a zero Limits field.
var DefaultLimits = Limits{
	HeaderTimeout: 5 * time.Second,
	BodyTimeout:   30 * time.Second,
	WriteTimeout:  2 * time.Minute,
	GitTimeout:    10 * time.Minute,
	IdleTimeout:   time.Minute,
	MaxConns:      512,
	MaxRequests:   128,
	// An agent watches a store with one stream (gitmem agent --watch, a UI tab, a webhook
	// relay): 16 lets a key run that many at once, and 16 keys' worth fit in the 256 streams
	// of MaxConns 512.
	MaxStreamsPerKey:       16,
	MaxPushesPerKey:        2,
	MaxOpenProposals:       proposals.DefaultLimits.Open,
	MaxOpenProposalsPerKey: proposals.DefaultLimits.OpenPerKey,
}

// WithDefaults fills the zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *time.Duration }{
		{&l.HeaderTimeout, &d.HeaderTimeout}, {&l.BodyTimeout, &d.BodyTimeout}, {&l.WriteTimeout, &d.WriteTimeout},
		{&l.GitTimeout, &d.GitTimeout}, {&l.IdleTimeout, &d.IdleTimeout},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	for _, f := range []struct{ v, def *int }{
		{&l.MaxConns, &d.MaxConns}, {&l.MaxRequests, &d.MaxRequests}, {&l.MaxStreamsPerKey, &d.MaxStreamsPerKey}, {&l.MaxPushesPerKey, &d.MaxPushesPerKey},
		{&l.MaxOpenProposals, &d.MaxOpenProposals}, {&l.MaxOpenProposalsPerKey, &d.MaxOpenProposalsPerKey},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if !(l.RateLimit > 0) || math.IsInf(l.RateLimit, 1) { // NaN too
		l.RateLimit, l.RateBurst = 0, 0
	} else if l.RateBurst <= 0 {
		l.RateBurst = defaultRateBurst(l.RateLimit)
	}
	return l
}

// httpServer is the http.Server of ServeListener over ln (from listener), with the limits
// net/http enforces itself: the header timeout and the idle timeout. The others are set per
// request by limitRequests, because git's requests need longer ones than the API's.
// net/http's own messages (a handler's panic, a bad TLS handshake) go to log.
func (l Limits) httpServer(h http.Handler, ln *connLimit, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.HeaderTimeout, IdleTimeout: l.IdleTimeout, ConnState: ln.track,
		ErrorLog: NetHTTPLog(log)}
}

// listener caps the connections served at once (connLimit).
func (l Limits) listener(ln net.Listener) *connLimit {
	cl := &connLimit{Listener: ln, max: l.MaxConns, conns: map[*limitedConn]struct{}{}}
	cl.cond = sync.NewCond(&cl.mu)
	return cl
}

// connLimit is a listener that serves at most max connections at once. A connection beyond
// them takes the place of the one that has waited longest for a request (its first request's
// headers not yet whole, or a keep-alive connection between requests), which is closed: a
// client that holds connections without sending requests (half-sent headers, idle
// keep-alives) cannot keep other clients, or a health probe, out. Only while every
// connection is serving a request (at most MaxRequests, and MaxStreams event streams, both
// below max by default) does a new one wait in the kernel's backlog.
type connLimit struct {
	net.Listener
	max int

	mu     sync.Mutex // guards the following
	cond   *sync.Cond // signalled when a connection closes or starts waiting for a request
	conns  map[*limitedConn]struct{}
	closed bool
}

// limitedConn is a connection of a connLimit.
type limitedConn struct {
	net.Conn
	l    *connLimit
	once sync.Once
	// waiting and since are guarded by l.mu: whether the connection waits for a request,
	// and since when.
	waiting bool
	since   time.Time
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.cond.Broadcast()
	})
	return err
}

// Accept accepts a connection, then makes room for it: it closes the connection that has
// waited longest for a request if max are open, or waits until one closes or waits.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l, waiting: true, since: time.Now()}
	l.mu.Lock()
	for len(l.conns) >= l.max && !l.closed {
		var oldest *limitedConn
		for o := range l.conns {
			if o.waiting && (oldest == nil || o.since.Before(oldest.since)) {
				oldest = o
			}
		}
		if oldest == nil {
			l.cond.Wait()
			continue
		}
		delete(l.conns, oldest) // its Close, which takes mu, finds it gone
		l.mu.Unlock()
		oldest.Close()
		l.mu.Lock()
	}
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

func (l *connLimit) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cond.Broadcast()
	return l.Listener.Close()
}

// track is the http.Server's ConnState: it notes which connections wait for a request.
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	switch state {
	case http.StateNew, http.StateIdle:
		lc.waiting, lc.since = true, time.Now()
	default: // active, hijacked (its handler owns it), closed
		lc.waiting = false
	}
	l.mu.Unlock()
	if state == http.StateIdle {
		l.cond.Broadcast()
	}
}

// limitRequests answers 503 to a request beyond MaxRequests in flight, and gives the others
// their deadlines: the body must arrive within BodyTimeout and the answer be written within
// WriteTimeout (GitTimeout for both on git's route), from now.
func (s *Server) limitRequests() echo.MiddlewareFunc {
	l := s.opts.Limits
	inFlight := make(chan struct{}, l.MaxRequests)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if r := c.Request(); isStream(r) && (r.Body == nil || r.Body == http.NoBody) {
				// An event stream lasts: it has its own cap and a deadline per write (events.go).
				// One with a body is no stream a client needs, and its body could be held
				// unsent for ever: it gets the limits of any request.
				return next(c)
			}
			r := c.Request()
			read, write, flag := l.BodyTimeout, l.WriteTimeout, "--body-timeout"
			if strings.HasPrefix(r.URL.Path, "/git/") {
				read, write, flag = l.GitTimeout, l.GitTimeout, "--git-timeout"
			}
			now := time.Now()
			// A writer without deadlines (a test's recorder) answers ErrNotSupported.
			rc := http.NewResponseController(c.Response())
			if err := rc.SetWriteDeadline(now.Add(write)); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
			if r.Body != nil && r.Body != http.NoBody {
				// Also before a refusal: net/http reads what is left of a body after the
				// answer, and a body held unsent would hold the connection for ever.
				if err := rc.SetReadDeadline(now.Add(read)); err == nil {
					r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, c: c, within: read, flag: flag}
				} else if !errors.Is(err, http.ErrNotSupported) {
					return err
				}
			}
			select {
			case inFlight <- struct{}{}:
				defer func() { <-inFlight }()
			default:
				c.Response().Header().Set("Retry-After", "1")
				return &apiError{status: http.StatusServiceUnavailable, typ: "overloaded_error",
					message: fmt.Sprintf("gitmem is serving its limit of %d requests at once (gitmem serve --max-requests); retry shortly", l.MaxRequests)}
			}
			if (r.Method == http.MethodGet || r.Method == http.MethodHead) && write == l.WriteTimeout {
				// A read ends with its answer's deadline too: past it, nothing it found could
				// be written. A walk of a store's versions (a listing by operation, the UI's
				// activity by folder) stops on its context. A change keeps its context to the
				// end: one cut off between its steps (an approval that merged but did not
				// record its decision) would be half done.
				ctx, cancel := context.WithDeadline(r.Context(), now.Add(write))
				defer cancel()
				c.SetRequest(r.WithContext(ctx))
			}
			return next(c)
		}
	}
}

// deadlineBody is a request body read under a read deadline. Once it is read to its end the
// deadline is lifted: net/http keeps reading the connection in the background while the
// handler runs, and a deadline passing then would cancel the request's context.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	c      echo.Context
	within time.Duration
	flag   string // the serve flag that sets within
	done   bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var ne net.Error
	switch {
	case err == io.EOF && !b.done:
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	case errors.As(err, &ne) && ne.Timeout():
		closeAfter(b.c)
		return n, &apiError{status: http.StatusRequestTimeout, typ: "timeout_error",
			message: fmt.Sprintf("the request body did not arrive within %s (gitmem serve %s)", b.within, b.flag)}
	}
	return n, err
}

// closeAfter makes net/http close the connection once this response is written: answers to
// clients that should not keep a connection (no key, a body too slow).
func closeAfter(c echo.Context) { c.Response().Header().Set("Connection", "close") }
