package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gitmem/gitmem/apikeys"
	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/gitsync"
	"github.com/gitmem/gitmem/httpapi"
	"github.com/gitmem/gitmem/metrics"
	"github.com/gitmem/gitmem/search"
	"github.com/gitmem/gitmem/webhooks"
	"github.com/gitmem/gitmem/webui"
)

func init() { register(newServeCmd) }

func defaultAddr() string {
	if a := os.Getenv("GITMEM_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:7437"
}

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	var logLevel, logFormat string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the memory store API over HTTP",
		Long: `Serves the memory store API under /v1/memory_stores, in the shapes of the official
Anthropic SDKs: point an SDK's base URL at this server.

Without any API key, gitmem serves without authentication and only on a loopback address.
Create a key with "gitmem keys create" to require keys and to serve on other addresses.`,
		Example: `  gitmem serve
  gitmem serve --addr 0.0.0.0:7437 --data /var/lib/gitmem`,
		Args: serveArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			level, err := parseLogLevel(logLevel)
			if err != nil {
				return err
			}
			opts := &slog.HandlerOptions{Level: level}
			var h slog.Handler
			switch logFormat {
			case "text":
				h = slog.NewTextHandler(os.Stderr, opts)
			case "json":
				h = slog.NewJSONHandler(os.Stderr, opts)
			default:
				return usageError{fmt.Errorf("--log-format must be text or json, got %q", logFormat)}
			}
			return serve(cmd.Context(), a, slog.New(h), f, cmd)
		},
	}
	cmd.Flags().StringVar(&f.addr, "addr", defaultAddr(), "address to listen on (env GITMEM_ADDR)")
	cmd.Flags().BoolVar(&f.strict, "strict-create", false, "POST .../memories creates only, as the public beta does (an occupied path is a 409 memory_path_conflict_error)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error; info logs a line per request")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "text or json (one object per line, for a log collector)")
	cmd.Flags().DurationVar(&f.sync.every, "sync-interval", time.Minute, "sync each store with its remotes this often (0: not on an interval)")
	cmd.Flags().DurationVar(&f.sync.afterWrite, "sync-after-write", 2*time.Second, "sync a store once main has been still this long after a write (0: not after writes)")
	d := httpapi.DefaultLimits
	positiveDurationVar(cmd.Flags(), &f.limits.HeaderTimeout, "header-timeout", d.HeaderTimeout, "a request's headers must arrive within this")
	positiveDurationVar(cmd.Flags(), &f.limits.BodyTimeout, "body-timeout", d.BodyTimeout, "the body of an API or MCP request must arrive within this (else 408)")
	positiveDurationVar(cmd.Flags(), &f.limits.WriteTimeout, "write-timeout", d.WriteTimeout, "an API or MCP request must be answered within this")
	positiveDurationVar(cmd.Flags(), &f.limits.GitTimeout, "git-timeout", d.GitTimeout, "a git clone, fetch or push must be done within this")
	positiveDurationVar(cmd.Flags(), &f.limits.IdleTimeout, "idle-timeout", d.IdleTimeout, "close a keep-alive connection idle this long (keep it above 30s, how long gitmem's clients keep one)")
	positiveIntVar(cmd.Flags(), &f.limits.MaxConns, "max-conns", d.MaxConns, "connections served at once; a new one takes the place of the one idle longest, or waits while all are busy; half of them at most are event streams")
	positiveIntVar(cmd.Flags(), &f.limits.MaxRequests, "max-requests", d.MaxRequests, "requests served at once; more are answered 503")
	positiveIntVar(cmd.Flags(), &f.limits.MaxStreamsPerKey, "max-streams-per-key", d.MaxStreamsPerKey, "event streams one key (without keys: one client address) holds open at once; more are answered 429")
	positiveIntVar(cmd.Flags(), &f.limits.MaxPushesPerKey, "max-pushes-per-key", d.MaxPushesPerKey, "git pushes one key (without keys: one client address) has checked at once; more are answered 429")
	positiveIntVar(cmd.Flags(), &f.limits.MaxOpenProposals, "max-open-proposals", d.MaxOpenProposals, "open proposals a store holds at once, each a copy of the store on disk; past it a new one is refused (409)")
	positiveIntVar(cmd.Flags(), &f.limits.MaxOpenProposalsPerKey, "max-open-proposals-per-key", d.MaxOpenProposalsPerKey, "open proposals one key (its sessions and pushed branches) holds in a store at once; past it a new one is refused (409)")
	rateVar(cmd.Flags(), &f.limits.RateLimit, "rate-limit", "requests a second one key (and its sessions) may send to the API, MCP, git and the UI, on average, and sign-ins to the UI a second from one client address; more are answered 429 with Retry-After (0: no limit; requests without a key are not limited)")
	positiveIntVar(cmd.Flags(), &f.limits.RateBurst, "rate-burst", 0, "requests one key may send at once after a pause, within --rate-limit (default: twice --rate-limit, at least 4)")
	cmd.Flags().DurationVar(&f.expire, "expire-every", time.Hour, "how often to expire the memories of stores that have an expiry (gitmem expire); 0 turns it off")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate `file` (its chain after it); SIGHUP reads it again")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "the PEM private key `file` of --tls-cert")
	cmd.Flags().StringSliceVar(&f.trustedProxies, "trusted-proxies", nil, "reverse proxies (IPs or CIDRs, comma-separated) whose X-Forwarded-For names the client in the access log and for the UI's sign-in limit")
	cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", "also serve /metrics (Prometheus) on this address, e.g. 127.0.0.1:9437 (it is always on the main port, behind a key while keys are in force); not loopback only once a key exists, and then scrapes send one")
	cmd.Flags().BoolVar(&f.allowPrivateWebhooks, "allow-private-webhooks", false, "let webhooks deliver to loopback and private addresses (refused by default: a guard against requests into this network)")
	return cmd
}

// serveFlags are serve's own flags.
type serveFlags struct {
	addr                 string
	allowPrivateWebhooks bool
	strict               bool
	sync                 syncOptions
	expire               time.Duration
	limits               httpapi.Limits
	metricsAddr          string
	tlsCert, tlsKey      string
	trustedProxies       []string
}

func serve(ctx context.Context, a *app, log *slog.Logger, f serveFlags, cmd *cobra.Command) error {
	addr, strict := f.addr, f.strict
	log.Debug("go processors", "gomaxprocs", addSpareProcs())
	// The address first: a port that is taken leaves no new data directory behind. Nothing is
	// accepted on it before the checks below pass.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen on %s: %w: another program (perhaps another gitmem serve) listens there; stop it, or serve on another port with --addr 127.0.0.1:PORT", addr, err)
		}
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer ln.Close()
	// The flags and the refusals below, before the data directory is made: a serve that is
	// refused leaves nothing behind. A directory that does not exist yet holds no key.
	proxies, err := parseNets(f.trustedProxies)
	if err != nil {
		return err
	}
	scheme := "http"
	var certs *certReloader
	if f.tlsCert != "" || f.tlsKey != "" {
		if certs, err = newCertReloader(f.tlsCert, f.tlsKey, log); err != nil {
			return err
		}
		scheme = "https"
	}
	var keys *apikeys.Keys
	anyKey := false
	if _, err := os.Stat(a.dataDir); err == nil {
		if keys, err = apikeys.Open(a.dataDir); err != nil {
			return err
		}
		if anyKey, err = keys.AnyActive(); err != nil {
			return err
		}
	}
	if f.metricsAddr != "" && !anyKey && !isLoopback(f.metricsAddr) {
		return invalidf("refusing to serve metrics on %s without authentication: no API key exists yet; create one with \"gitmem keys create --name NAME\", or use a 127.0.0.1 address", f.metricsAddr)
	}
	if !anyKey && !isLoopback(addr) {
		return fmt.Errorf("refusing to serve on %s without authentication: no API key exists yet.\n"+
			"Create one with \"gitmem keys create --name NAME\" (clients send it as x-api-key), or serve on 127.0.0.1", addr)
	}
	if keys == nil {
		if keys, err = apikeys.Open(a.dataDir); err != nil {
			return err
		}
	}
	m := metrics.New()
	d, err := gitstore.Open(ctx, a.dataDir, gitstore.Options{Logger: log, Observer: m.Store()})
	if err != nil {
		return err
	}
	defer d.Close()
	if certs != nil {
		certs.watch(ctx)
		ln = tls.NewListener(ln, certs.config())
	}
	srv := httpapi.New(d, keys, httpapi.Options{StrictCreate: strict, Logger: log,
		RequireKeys: anyKey || !isLoopback(addr), Limits: f.limits, Observe: m.Request, ObserveRateLimited: m.RateLimited, AccessLog: true, TrustedProxies: proxies})
	idx := search.New(d, search.Options{Logger: log, Observe: m.Search})
	m.Read(metrics.Sources{Data: d, SearchBehind: idx.Behind})
	defer idx.Close() // before d.Close: deferred calls run last first
	go func() {
		if err := idx.WatchAll(ctx); err != nil && ctx.Err() == nil {
			log.Error("index stores for search", "err", err)
		}
	}()
	srv.EnableSearch(idx)
	srv.EnableHealth(httpapi.ReadyChecks(d, idx))
	srv.EnableMetrics(m.Handler())
	if f.metricsAddr != "" {
		stop, err := serveMetrics(ctx, f.metricsAddr, srv.Guard(m.Handler()), log)
		if err != nil {
			return err
		}
		defer stop()
	}
	hooks := webhooks.Open(d.Layout())
	hooks.AllowPrivate = f.allowPrivateWebhooks
	ui, err := webui.New(webui.Options{Data: d, Keys: keys, Auth: srv, Search: idx, Webhooks: hooks, Proposals: srv.Proposals(), Logger: log})
	if err != nil {
		return err
	}
	srv.Mount(webui.Prefix, ui)
	syncer := &gitsync.Syncer{DataDir: a.dataDir, Observe: m.Sync} // the loop's and POST .../sync's
	srv.EnableSync(func(ctx context.Context, st *gitstore.Store, remote string) (any, []error, error) {
		return syncer.SyncRemotes(ctx, st, remote)
	})
	syncing, syncStopped := startSync(ctx, syncer, d, log, f.sync)
	// The sync loop and the expiry schedule stop before d.Close: deferred calls run last first.
	defer syncStopped()
	defer startExpiry(ctx, d, f.expire, log)()
	srv.EnableWebhooks(hooks)
	dispatcher := &webhooks.Dispatcher{Data: d, Registry: hooks, Payload: httpapi.EventPayload, Logger: log, Observe: m.Delivery}
	hooksCtx, stopHooks := context.WithCancel(ctx)
	hooksDone := make(chan struct{})
	go func() { dispatcher.Run(hooksCtx); close(hooksDone) }()
	defer func() { stopHooks(); <-hooksDone }() // before d.Close: deferred calls run last first
	gitErr := srv.EnableGit(httpapi.GitOptions{})
	url := scheme + "://" + ln.Addr().String()
	if err := d.SetServing(localURL(scheme, ln.Addr())); err != nil {
		log.Warn("record the server's address in the data directory's lock; CLI commands will not find it", "err", err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "gitmem is serving %s/v1/memory_stores\n", url)
	fmt.Fprintf(out, "  ui:    %s/ui/ (open it in a browser)\n", url)
	fmt.Fprintf(out, "  data:  %s\n", a.dataDir)
	if anyKey {
		fmt.Fprintf(out, "  auth:  API keys required (x-api-key or Authorization: Bearer)\n")
	} else {
		fmt.Fprintf(out, "  auth:  none. No API key exists, so gitmem listens on loopback only;\n")
		fmt.Fprintf(out, "         \"gitmem keys create --name NAME\" turns keys on\n")
	}
	if strict {
		fmt.Fprintf(out, "  mode:  --strict-create (POST .../memories creates only)\n")
	}
	if gitErr != nil {
		fmt.Fprintf(out, "  git:   %v; everything else works\n", gitErr)
	} else {
		fmt.Fprintf(out, "  git:   git clone %s/git/<memstore_id>.git\n", url)
	}
	if l := f.limits.WithDefaults(); l.RateLimit > 0 {
		fmt.Fprintf(out, "  rate:  %s requests a second per key, %d at once (--rate-limit, --rate-burst); then 429\n", strconv.FormatFloat(l.RateLimit, 'f', -1, 64), l.RateBurst)
	}
	fmt.Fprintf(out, "  sync:  %s\n", syncing)
	if f.expire > 0 {
		fmt.Fprintf(out, "  stale: expired every %s, in stores that set an expiry (gitmem expire --help)\n", gitstore.Duration(f.expire))
	}
	fmt.Fprintf(out, "  tools: %s/v1/memory_stores/<memstore_id>/tools (the memory tool and agent tools)\n", url)
	fmt.Fprintf(out, "  mcp:   %s/mcp?store=<memstore_id>\n", url)
	fmt.Fprintf(out, "  ops:   %s/readyz and %s/metrics (docs/operations.md)\n", url, url)
	fmt.Fprintf(out, "  try:   curl -s %s/v1/memory_stores -H 'content-type: application/json' -d '{\"name\":\"notes\"}'\n", url)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeListener(ctx, ln) }()
	err = <-errc
	fmt.Fprintln(cmd.ErrOrStderr(), "gitmem: stopped")
	return err
}

// localURL is the URL at which a process on this machine reaches a listener: an unspecified
// address (0.0.0.0, ::) is reached on loopback.
func localURL(scheme string, addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return scheme + "://" + addr.String()
	}
	loop := "127.0.0.1"
	if tcp.IP.To4() == nil {
		loop = "::1"
	}
	return scheme + "://" + net.JoinHostPort(loop, strconv.Itoa(tcp.Port))
}

// isLoopback reports whether addr listens on a loopback address only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveMetrics serves /metrics alone on addr, for a scraper kept off the main port.
func serveMetrics(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		ErrorLog: httpapi.NetHTTPLog(log)}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("serve metrics", "addr", addr, "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { hs.Close() }, nil
}

// parseNets reads --trusted-proxies: CIDRs, or single addresses.
func parseNets(specs []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range specs {
		s = strings.TrimSpace(s)
		if ip := net.ParseIP(s); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("--trusted-proxies: %q is not an IP address or a CIDR (10.0.0.0/8)", s)}
		}
		out = append(out, n)
	}
	return out, nil
}

// serveArgs refuses arguments, and says where an address or a port goes (gitmem serve 8000).
func serveArgs(cmd *cobra.Command, args []string) error {
	err := exactArgs()(cmd, args)
	if err == nil {
		return nil
	}
	a := args[0]
	if _, err := strconv.Atoi(a); err == nil {
		a = "127.0.0.1:" + a
	}
	if _, _, herr := net.SplitHostPort(a); herr == nil {
		return fmt.Errorf("%w; to listen on %s, use --addr %s", err, a, a)
	}
	return err
}
