package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gitmem/gitmem/gitstore"
)

// A receiver on loopback or a private range would let anyone who may create a webhook make
// the server send requests into its own network (server-side request forgery). Such
// addresses are refused when a webhook is made and again at each connection, on the address
// actually dialled (a name that resolves elsewhere later cannot get around it), unless the
// operator allows them.

var errPrivate = errors.New("a loopback, private or link-local address")

// private tells whether ip is one that only this machine or its network reaches. An IPv6
// address that carries an IPv4 one (NAT64's 64:ff9b::/96, the old ::a.b.c.d) is judged by
// that; the local-use NAT64 prefix 64:ff9b:1::/48 and the rest of ::/96 are private.
func private(ip net.IP) bool {
	if v6 := ip.To16(); v6 != nil && ip.To4() == nil {
		switch {
		case bytes.Equal(v6[:12], nat64[:12]):
			return private(net.IP(v6[12:]))
		case bytes.Equal(v6[:6], nat64Local[:6]), bytes.Equal(v6[:12], make([]byte, 12)):
			return true
		}
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
		if v4[0] == 100 && v4[1]&0xc0 == 64 { // 100.64.0.0/10, carrier-grade NAT
			return true
		}
		if v4[0] == 0 {
			return true
		}
	}
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified()
}

var (
	nat64      = net.ParseIP("64:ff9b::")
	nat64Local = net.ParseIP("64:ff9b:1::")
)

// checkHost refuses a host that is, or resolves to, a private address.
func checkHost(ctx context.Context, host string) error {
	ips := []net.IP{net.ParseIP(host)}
	if ips[0] == nil {
		addrs, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
		if err != nil {
			why := "the lookup failed"
			if de := (*net.DNSError)(nil); errors.As(err, &de) {
				why = de.Err // not the whole error, which names the server's resolver
			}
			return invalid("the webhook's host %q does not resolve: %s", host, why)
		}
		ips = addrs
	}
	for _, ip := range ips {
		if private(ip) {
			return invalid("the webhook's host %q is %s (%s): gitmem does not send webhooks into its own network unless gitmem serve runs with --allow-private-webhooks", host, errPrivate, ip)
		}
	}
	return nil
}

// Sign returns the webhook-signature header of a message, as the Standard Webhooks
// specification defines it: v1, then the base64 HMAC-SHA256, under the secret's bytes, of
// "id.timestamp.body".
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// Payload is what an event is sent as: its type and its JSON body (the event stream's data).
type Payload func(ev gitstore.Event) (typ string, body []byte, err error)

// Dispatcher delivers every webhook's events, a worker for each webhook and store.
type Dispatcher struct {
	Data     *gitstore.DataDir
	Registry *Registry
	Payload  Payload
	Logger   *slog.Logger
	// Backoff is the wait before retry n (1, 2, ...); by default 1 s doubling to 5 min.
	Backoff func(n int) time.Duration
	// Timeout bounds one delivery (default 10 s).
	Timeout time.Duration
	// Observe, if set, is told of each attempt: whether the receiver took it (for metrics).
	Observe func(delivered bool)

	client *http.Client
}

// Backoff doubles from a second up to five minutes.
func Backoff(n int) time.Duration {
	d := time.Second << min(n-1, 9)
	return min(d, 5*time.Minute)
}

// Run delivers until ctx ends: it starts a worker for each enabled webhook and each store it
// covers, and stops the workers of webhooks that were deleted, changed or disabled.
func (d *Dispatcher) Run(ctx context.Context) {
	if d.Backoff == nil {
		d.Backoff = Backoff
	}
	if d.Timeout == 0 {
		d.Timeout = 10 * time.Second
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	dialer := &net.Dialer{Timeout: d.Timeout, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, _ := net.SplitHostPort(address)
		if ip := net.ParseIP(host); ip != nil && private(ip) && !d.Registry.AllowPrivate {
			return fmt.Errorf("refused to connect to %s: %w (gitmem serve --allow-private-webhooks allows it)", address, errPrivate)
		}
		return nil
	}}
	// Idle connections go before most receivers close them (Go's default keeps them 90 s): a
	// delivery sent on one the receiver has just closed fails, and Go does not send a POST
	// again.
	tr := &http.Transport{DialContext: dialer.DialContext, Proxy: nil, IdleConnTimeout: 30 * time.Second}
	d.client = &http.Client{Timeout: d.Timeout, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	type key struct{ hook, store string }
	workers := map[key]context.CancelFunc{}
	var wg sync.WaitGroup
	defer func() {
		for _, stop := range workers {
			stop()
		}
		wg.Wait()
	}()
	for {
		changed, storesChanged := d.Registry.Changed(), d.Data.StoresChanged()
		want := map[key]Hook{}
		hooks, err := d.Registry.List()
		if err != nil {
			d.Logger.Error("webhooks: read the list", "err", err)
		}
		ids, err := d.Data.Layout().StoreIDs()
		if err != nil && ctx.Err() == nil {
			d.Logger.Error("webhooks: list stores", "err", err)
		}
		for _, h := range hooks {
			if h.Disabled {
				continue
			}
			for _, id := range ids {
				if h.StoreID == "" || h.StoreID == id {
					want[key{h.ID, id}] = h
				}
			}
		}
		for k, stop := range workers {
			if h, ok := want[k]; !ok || h.UpdatedAt != hooks[indexOf(hooks, k.hook)].UpdatedAt {
				stop()
				delete(workers, k)
			}
		}
		for k, h := range want {
			if _, ok := workers[k]; ok {
				continue
			}
			wctx, stop := context.WithCancel(ctx)
			workers[k] = stop
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.work(wctx, h, k.store)
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-storesChanged:
		}
	}
}

func indexOf(hooks []Hook, id string) int {
	for i, h := range hooks {
		if h.ID == id {
			return i
		}
	}
	return 0
}

// work delivers hook's events of one store, in order, each until the receiver takes it.
func (d *Dispatcher) work(ctx context.Context, h Hook, storeID string) {
	st, err := d.Data.Store(ctx, storeID)
	if err != nil {
		return
	}
	cursor, err := d.Registry.cursor(h.ID, storeID)
	if err != nil {
		d.Logger.Error("webhooks: read the cursor", "webhook", h.ID, "store", storeID, "err", err)
		return
	}
	for ctx.Err() == nil {
		moved := st.Moved()
		vs, more, err := st.EventsAfter(ctx, cursor, 64)
		if errors.Is(err, gitstore.ErrCursorGone) {
			// The history was replaced: go on from its end, and say so.
			d.Logger.Warn("webhooks: the cursor is not in the store's history any more; going on from its last version", "webhook", h.ID, "store", storeID, "cursor", cursor)
			vs, _, err = st.EventsAfter(ctx, "", 1<<30)
			if err == nil && len(vs) > 0 {
				cursor = vs[len(vs)-1].ID()
				d.Registry.record(h.ID, storeID, cursor, nil)
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				d.Logger.Error("webhooks: read versions", "webhook", h.ID, "store", storeID, "err", err)
				sleep(ctx, d.Backoff(1))
			}
			continue
		}
		for _, v := range vs {
			typ, body, err := d.Payload(v)
			if err != nil {
				d.Logger.Error("webhooks: make the payload", "event", v.ID(), "err", err)
				return
			}
			// The webhook as it is now: a change takes effect from the next event on, even
			// before Run restarts this worker.
			cur, err := d.Registry.Get(h.ID)
			if err != nil {
				return // deleted
			}
			h = cur
			var rec *Delivery
			if h.Wants(storeID, typ) {
				if rec = d.deliver(ctx, h, storeID, v.ID(), typ, body); rec == nil {
					return // stopped
				}
			}
			if err := d.Registry.record(h.ID, storeID, v.ID(), rec); err != nil {
				d.Logger.Error("webhooks: record the cursor", "webhook", h.ID, "err", err)
			}
			cursor = v.ID()
		}
		if more {
			continue
		}
		select {
		case <-ctx.Done():
		case <-moved:
		case <-time.After(30 * time.Second):
		}
	}
}

// deliver sends one event until the receiver answers 2xx, and returns its log entry; nil if
// ctx ended first.
func (d *Dispatcher) deliver(ctx context.Context, h Hook, storeID, id, typ string, body []byte) *Delivery {
	rec := Delivery{EventID: id, StoreID: storeID, Type: typ}
	for ctx.Err() == nil {
		rec.Attempts++
		rec.At = time.Now().UTC()
		status, err := d.post(ctx, h, id, body)
		if d.Observe != nil && ctx.Err() == nil {
			d.Observe(err == nil)
		}
		rec.Status = status
		if err == nil {
			rec.Delivered, rec.LastError = true, ""
			return &rec
		}
		if ctx.Err() != nil {
			return nil
		}
		rec.LastError = err.Error()
		d.Registry.logAttempt(h.ID, rec)
		d.Logger.Warn("webhooks: delivery failed; retrying", "webhook", h.ID, "event", id, "attempt", rec.Attempts, "err", err)
		sleep(ctx, d.Backoff(rec.Attempts))
	}
	return nil
}

func (d *Dispatcher) post(ctx context.Context, h Hook, id string, body []byte) (int, error) {
	ts := time.Now().Unix()
	sig, err := Sign(h.Secret, id, ts, body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gitmem-webhooks")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
