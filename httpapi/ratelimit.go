package httpapi

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// keyRates holds a token bucket per API key (Limits.RateLimit, Limits.RateBurst): a request
// of a key takes a token from its key's bucket, which refills at RateLimit a second up to
// RateBurst. Requests without a key (a server without keys, which serves loopback only) are
// not limited. Buckets are made on a key's first request and forgotten once idle (sweep), so
// what it holds is bounded by the keys that sent requests lately; a revoked key sends none
// that pass, and its bucket goes with the next sweeps.
type keyRates struct {
	limit rate.Limit
	burst int
	// idle: a bucket unused this long is full again (burst/limit), or longer, so forgetting
	// it changes nothing; at least a minute, so that sweeps are rare.
	idle time.Duration
	// now is the clock (a test's, to sweep without sleeping).
	now func() time.Time
	// refused, if set, is told of each refusal, with the key's id (metrics).
	refused func(keyID string)
	// max, if above 0, is the most buckets held: a bucket made past it takes the place of
	// one held (any). Keys are few, and an operator makes them; client addresses (sign-ins)
	// are as many as a client can send from (an IPv6 one a /64 each, of its /48 or more).
	max int

	mu        sync.Mutex // guards the following
	buckets   map[string]*keyBucket
	lastSweep time.Time
}

// keyBucket is the bucket of one key, and when the key last sent a request.
type keyBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// minRateIdle is the least time after which an unused bucket is forgotten.
const minRateIdle = time.Minute

// newKeyRates is the per-key rate limit of l, or nil if l sets none.
func newKeyRates(l Limits, refused func(keyID string)) *keyRates {
	if l.RateLimit <= 0 {
		return nil
	}
	refill := time.Duration(float64(l.RateBurst) / l.RateLimit * float64(time.Second))
	return &keyRates{limit: rate.Limit(l.RateLimit), burst: l.RateBurst, idle: max(refill, minRateIdle),
		now: time.Now, refused: refused, buckets: map[string]*keyBucket{}}
}

// take takes a token of keyID's bucket, or answers how long until one is there.
func (k *keyRates) take(keyID string) (wait time.Duration, ok bool) {
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sweepLocked(now)
	b := k.buckets[keyID]
	if b == nil {
		if k.max > 0 && len(k.buckets) >= k.max {
			for id := range k.buckets { // one, at random: a client of many addresses gains no more than a new address gives it
				delete(k.buckets, id)
				break
			}
		}
		b = &keyBucket{lim: rate.NewLimiter(k.limit, k.burst)}
		k.buckets[keyID] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request takes no token
		return d, false
	}
	return 0, true
}

// sweepLocked forgets the buckets unused for idle, once every idle at most. k.mu is held.
func (k *keyRates) sweepLocked(now time.Time) {
	if now.Sub(k.lastSweep) < k.idle {
		return
	}
	k.lastSweep = now
	for id, b := range k.buckets {
		if now.Sub(b.seen) >= k.idle {
			delete(k.buckets, id)
		}
	}
}

// held is how many buckets are held (for tests).
func (k *keyRates) held() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.buckets)
}

// limitRate refuses a request of cl past its key's rate: 429 rate_limit_error with
// Retry-After, the whole seconds until its key has a token again (at least 1). It is called
// once the key is known: by authenticate (the API, the tools, MCP; an event stream once, as
// it opens), by git's route, and by the UI's pages (LimitRate). The health probes, /metrics
// and the UI's static files do not call it.
func (s *Server) limitRate(cl caller) error {
	if s.rates == nil || cl.key == nil {
		return nil
	}
	l := s.opts.Limits
	return s.spend(s.rates, cl.key.ID, cl.key.ID, func(secs int64) string {
		return fmt.Sprintf("this API key (%s) sent more than its %s requests a second (gitmem serve --rate-limit), %d at most at once (--rate-burst): retry after %d s",
			cl.key.ID, strconv.FormatFloat(l.RateLimit, 'f', -1, 64), l.RateBurst, secs)
	})
}

// signInLabel is the metric label (gitmem_http_rate_limited_total{key}) of the UI's sign-ins
// refused past their address's rate: no key id has this form.
const signInLabel = "sign-in"

// maxSignInBuckets is the most sign-in buckets held at once (some 200 bytes each): past it,
// a new address's takes the place of one held, so that a client of very many addresses
// cannot grow the server's memory between sweeps.
const maxSignInBuckets = 10_000

// limitSignIn refuses a sign-in from the client of r (its address as the access log has it:
// X-Forwarded-For from a trusted proxy only) past that address's rate, before the key it
// brings is checked: every attempt takes a token, so that keys cannot be guessed faster than
// the rate, and a refused one learns nothing of its key. An IPv6 client counts by its /64,
// which one host commonly holds whole. Its bucket is a key's in size and rate, in a limiter
// of its own that holds at most maxSignInBuckets.
func (s *Server) limitSignIn(r *http.Request) error {
	if s.signIns == nil {
		return nil
	}
	addr := clientNet(s.e.IPExtractor(r))
	l := s.opts.Limits
	return s.spend(s.signIns, addr, signInLabel, func(secs int64) string {
		return fmt.Sprintf("too many sign-ins from your address: at most %s a second (gitmem serve --rate-limit), %d at once (--rate-burst): retry after %d s",
			strconv.FormatFloat(l.RateLimit, 'f', -1, 64), l.RateBurst, secs)
	})
}

// clientNet is what a client's address counts as: an IPv4 address itself, an IPv6 one its
// /64.
func clientNet(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() != nil {
		return addr
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// spend takes a token of bucket id of k, or answers the 429 of a request past it, with
// msg's text and Retry-After, the whole seconds until the bucket has a token again (at least
// 1); a refusal is counted under the metric label (a key's id). k is not nil.
func (s *Server) spend(k *keyRates, id, label string, msg func(secs int64) string) error {
	wait, ok := k.take(id)
	if ok {
		return nil
	}
	if k.refused != nil {
		k.refused(label)
	}
	secs := max(int64(math.Ceil(wait.Seconds())), 1)
	return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", message: msg(secs), retryAfter: int(secs)}
}
