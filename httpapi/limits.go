package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/net/netutil"
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
	// MaxConns: connections served at once; further ones wait to be accepted.
	MaxConns int
	// MaxRequests: requests served at once; further ones are answered 503.
	MaxRequests int
}

// DefaultLimits are the limits of a zero Limits field.
var DefaultLimits = Limits{
	HeaderTimeout: 10 * time.Second,
	BodyTimeout:   30 * time.Second,
	WriteTimeout:  2 * time.Minute,
	GitTimeout:    10 * time.Minute,
	IdleTimeout:   time.Minute,
	MaxConns:      512,
	MaxRequests:   128,
}

// withDefaults fills the zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *time.Duration }{
		{&l.HeaderTimeout, &d.HeaderTimeout}, {&l.BodyTimeout, &d.BodyTimeout}, {&l.WriteTimeout, &d.WriteTimeout},
		{&l.GitTimeout, &d.GitTimeout}, {&l.IdleTimeout, &d.IdleTimeout},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxRequests <= 0 {
		l.MaxRequests = d.MaxRequests
	}
	return l
}

// httpServer is the http.Server of ServeListener, with the limits net/http enforces itself:
// the header timeout and the idle timeout. The others are set per request by
// limitRequests, because git's requests need longer ones than the API's.
func (l Limits) httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.HeaderTimeout, IdleTimeout: l.IdleTimeout}
}

// listener caps the connections served at once: further ones wait in the kernel's backlog
// until one closes.
func (l Limits) listener(ln net.Listener) net.Listener { return netutil.LimitListener(ln, l.MaxConns) }

// limitRequests answers 503 to a request beyond MaxRequests in flight, and gives the others
// their deadlines: the body must arrive within BodyTimeout and the answer be written within
// WriteTimeout (GitTimeout for both on git's route), from now.
func (s *Server) limitRequests() echo.MiddlewareFunc {
	l := s.opts.Limits
	inFlight := make(chan struct{}, l.MaxRequests)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if isStream(c.Request()) {
				// An event stream lasts: it has its own cap and a deadline per write (events.go).
				return next(c)
			}
			select {
			case inFlight <- struct{}{}:
				defer func() { <-inFlight }()
			default:
				c.Response().Header().Set("Retry-After", "1")
				return &apiError{status: http.StatusServiceUnavailable, typ: "overloaded_error",
					message: fmt.Sprintf("gitmem is serving its limit of %d requests at once (gitmem serve --max-requests); retry shortly", l.MaxRequests)}
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
				if err := rc.SetReadDeadline(now.Add(read)); err == nil {
					r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, c: c, within: read, flag: flag}
				} else if !errors.Is(err, http.ErrNotSupported) {
					return err
				}
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
