// Package metrics is gitmem's Prometheus metrics: what the server, the stores, search,
// sync and webhooks do, counted where it happens (through the observers of those packages)
// or read when scraped (store sizes, packs, lags). Metrics.Handler serves them in the
// Prometheus text format.
package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gitmem/gitmem/gitstore"
	"github.com/gitmem/gitmem/gitsync"
)

// Metrics holds the collectors. Its methods are the observers that gitstore, httpapi,
// search, gitsync and webhooks call.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	gitOps          *prometheus.CounterVec
	rateLimited     *prometheus.CounterVec

	// mu guards rateKeys: the keys labelled in rateLimited so far (RateLimited).
	mu       sync.Mutex
	rateKeys map[string]bool

	groups     prometheus.Counter
	groupSize  prometheus.Histogram
	packWrite  prometheus.Histogram
	refUpdate  prometheus.Histogram
	merges     prometheus.Counter
	mergeTime  prometheus.Histogram
	secrets    *prometheus.CounterVec
	redactions prometheus.Counter
	searches   *prometheus.CounterVec
	searchTime prometheus.Histogram
	syncs      *prometheus.CounterVec
	conflicts  prometheus.Counter
	deliveries *prometheus.CounterVec
}

// Sources are what the scrape-time metrics read: the data directory, and the search
// service's lag (nil: not reported).
type Sources struct {
	Data          *gitstore.DataDir
	SearchBehind  func() int
	PerStoreLimit int // stores above this count are summed only, not labelled (default 1,000)
}

// Fast histogram buckets, from 100 µs to 10 s: writes, fsyncs, searches, requests.
var latency = prometheus.ExponentialBucketsRange(0.0001, 10, 16)

// New makes the collectors, registered with the Go runtime's and the process's.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gitmem_http_requests_total",
		Help: "HTTP requests answered, by route pattern, method and status."}, []string{"route", "method", "status"})
	m.requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gitmem_http_request_duration_seconds",
		Help: "Time to answer an HTTP request, by route pattern and method (event streams are left out: they last).", Buckets: latency},
		[]string{"route", "method"})
	m.gitOps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gitmem_git_operations_total",
		Help: "git over HTTP: pushes (receive-pack) and fetches or clones (upload-pack), by status."}, []string{"operation", "status"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gitmem_http_rate_limited_total",
		Help: "Requests refused (429) past their key's rate (gitmem serve --rate-limit): the API, MCP, git and the UI, by key id (the first 1,000 keys refused; others as other); sign-ins to the UI past their address's rate as sign-in."}, []string{"key"})
	m.groups = prometheus.NewCounter(prometheus.CounterOpts{Name: "gitmem_write_groups_total",
		Help: "Groups of writes committed to main (each one pack and one ref update)."})
	m.groupSize = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gitmem_write_group_requests",
		Help: "Requests per committed group.", Buckets: prometheus.ExponentialBuckets(1, 2, 10)})
	m.packWrite = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gitmem_pack_write_seconds",
		Help: "Time to encode a group's objects as a pack and place it and its index (on Linux not fsynced, as the journal makes the group durable).", Buckets: latency})
	m.refUpdate = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gitmem_ref_update_seconds",
		Help: "Time to make a group durable and move main to its last commit (main.lock, the journal's record and fdatasync, the move).", Buckets: latency})
	m.merges = prometheus.NewCounter(prometheus.CounterOpts{Name: "gitmem_pack_merges_total",
		Help: "Pack maintenance runs that packed loose objects or merged packs."})
	m.mergeTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gitmem_pack_merge_seconds",
		Help: "Time of a pack maintenance run that packed or merged.", Buckets: latency})
	m.secrets = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gitmem_secrets_found_total",
		Help: "Writes that held secrets, by what the store's policy did: rejected or redacted."}, []string{"action"})
	m.redactions = prometheus.NewCounter(prometheus.CounterOpts{Name: "gitmem_redactions_total",
		Help: "Versions whose content was taken out of history."})
	m.searches = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gitmem_searches_total",
		Help: "Searches run, by result: ok or error."}, []string{"result"})
	m.searchTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gitmem_search_seconds",
		Help: "Time of a search once its index was fresh.", Buckets: latency})
	m.syncs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gitmem_sync_runs_total",
		Help: "Syncs with a remote, by result: ok or error."}, []string{"result"})
	m.conflicts = prometheus.NewCounter(prometheus.CounterOpts{Name: "gitmem_sync_conflicts_total",
		Help: "Memories changed on both sides that a sync kept both of (a .conflict- copy)."})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gitmem_webhook_deliveries_total",
		Help: "Webhook delivery attempts, by result: delivered or failed (failed ones are retried)."}, []string{"result"})
	for _, c := range []prometheus.Collector{m.requests, m.requestDuration, m.gitOps, m.rateLimited, m.groups, m.groupSize,
		m.packWrite, m.refUpdate, m.merges, m.mergeTime, m.secrets, m.redactions, m.searches, m.searchTime,
		m.syncs, m.conflicts, m.deliveries,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

// Read adds the metrics read at each scrape from src: call it once, when the data
// directory is open.
func (m *Metrics) Read(src Sources) {
	if src.PerStoreLimit <= 0 {
		src.PerStoreLimit = 1000
	}
	m.reg.MustRegister(&storesCollector{src: src})
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: nil})
}

// Request observes an HTTP request as it ends (httpapi.Options.Observe).
func (m *Metrics) Request(route, path, method string, status int, took time.Duration) {
	if route == "" {
		route = "unmatched" // a 404 of no route: the path is not a label, it could be anything
	}
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, method, code).Inc()
	if !strings.HasSuffix(route, "/events") {
		m.requestDuration.WithLabelValues(route, method).Observe(took.Seconds())
	}
	if strings.HasPrefix(path, "/git/") && method == http.MethodPost {
		switch {
		case strings.HasSuffix(path, "/git-receive-pack"):
			m.gitOps.WithLabelValues("push", code).Inc()
		case strings.HasSuffix(path, "/git-upload-pack"):
			m.gitOps.WithLabelValues("fetch", code).Inc()
		}
	}
}

// perKeyLimit is how many keys RateLimited labels by id; the refusals of others are counted
// as key "other". Keys are made by an operator, so there are few; the bound keeps a server
// that is given very many from growing a series for each.
const perKeyLimit = 1000

// RateLimited counts a request refused past the rate of key keyID, or "sign-in" for a sign-in
// to the UI refused past its address's rate (httpapi.Options.ObserveRateLimited).
func (m *Metrics) RateLimited(keyID string) {
	m.mu.Lock()
	if !m.rateKeys[keyID] {
		if len(m.rateKeys) >= perKeyLimit {
			keyID = "other"
		} else {
			if m.rateKeys == nil {
				m.rateKeys = map[string]bool{}
			}
			m.rateKeys[keyID] = true
		}
	}
	m.mu.Unlock()
	m.rateLimited.WithLabelValues(keyID).Inc()
}

// Store is the gitstore.Observer of the metrics.
func (m *Metrics) Store() gitstore.Observer { return storeObserver{m} }

type storeObserver struct{ m *Metrics }

func (o storeObserver) GroupCommitted(_ string, requests int, pack, ref time.Duration) {
	o.m.groups.Inc()
	o.m.groupSize.Observe(float64(requests))
	o.m.packWrite.Observe(pack.Seconds())
	o.m.refUpdate.Observe(ref.Seconds())
}

func (o storeObserver) PacksMerged(_ string, _ int, took time.Duration) {
	o.m.merges.Inc()
	o.m.mergeTime.Observe(took.Seconds())
}

func (o storeObserver) SecretsRefused(_ string, redacted bool) {
	action := "rejected"
	if redacted {
		action = "redacted"
	}
	o.m.secrets.WithLabelValues(action).Inc()
}

func (o storeObserver) Redacted(string) { o.m.redactions.Inc() }

// Search observes a search (search.Options.Observe).
func (m *Metrics) Search(took time.Duration, err error) {
	if err != nil {
		m.searches.WithLabelValues("error").Inc()
		return
	}
	m.searches.WithLabelValues("ok").Inc()
	m.searchTime.Observe(took.Seconds())
}

// Sync observes a sync with a remote (gitsync.Syncer.Observe).
func (m *Metrics) Sync(_ string, res gitsync.Result, err error) {
	if err != nil {
		m.syncs.WithLabelValues("error").Inc()
		return
	}
	m.syncs.WithLabelValues("ok").Inc()
	m.conflicts.Add(float64(len(res.Conflicts)))
}

// Delivery observes a webhook delivery attempt (webhooks.Dispatcher.Observe).
func (m *Metrics) Delivery(delivered bool) {
	if delivered {
		m.deliveries.WithLabelValues("delivered").Inc()
	} else {
		m.deliveries.WithLabelValues("failed").Inc()
	}
}

// storesCollector reads, at each scrape, what the open stores hold, how their repositories
// are packed and how far the catalog and search lag behind main.
type storesCollector struct{ src Sources }

var (
	descStores    = prometheus.NewDesc("gitmem_stores", "Stores open in the data directory.", nil, nil)
	descMemories  = prometheus.NewDesc("gitmem_store_memories", "Memories a store holds.", []string{"store"}, nil)
	descBytes     = prometheus.NewDesc("gitmem_store_bytes", "Bytes of content a store holds.", []string{"store"}, nil)
	descPacks     = prometheus.NewDesc("gitmem_store_packs", "Packs in a store's repository.", []string{"store"}, nil)
	descAllMem    = prometheus.NewDesc("gitmem_memories", "Memories in all stores.", nil, nil)
	descAllBytes  = prometheus.NewDesc("gitmem_bytes", "Bytes of content in all stores.", nil, nil)
	descCatalog   = prometheus.NewDesc("gitmem_catalog_behind_stores", "Stores whose catalog does not reflect main yet (a push or git moved it).", nil, nil)
	descSearchLag = prometheus.NewDesc("gitmem_search_behind_indexes", "Search indexes that do not reflect their store's main yet.", nil, nil)
)

func (c *storesCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStores, descMemories, descBytes, descPacks, descAllMem, descAllBytes, descCatalog, descSearchLag} {
		ch <- d
	}
}

func (c *storesCollector) Collect(ch chan<- prometheus.Metric) {
	stats := c.src.Data.Stats()
	var mems, bytes float64
	for _, s := range stats {
		mems += float64(s.Usage.Memories)
		bytes += float64(s.Usage.Bytes)
	}
	ch <- prometheus.MustNewConstMetric(descStores, prometheus.GaugeValue, float64(len(stats)))
	ch <- prometheus.MustNewConstMetric(descAllMem, prometheus.GaugeValue, mems)
	ch <- prometheus.MustNewConstMetric(descAllBytes, prometheus.GaugeValue, bytes)
	if len(stats) <= c.src.PerStoreLimit {
		for _, s := range stats {
			ch <- prometheus.MustNewConstMetric(descMemories, prometheus.GaugeValue, float64(s.Usage.Memories), s.ID)
			ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(s.Usage.Bytes), s.ID)
			ch <- prometheus.MustNewConstMetric(descPacks, prometheus.GaugeValue, float64(s.Packs), s.ID)
		}
	}
	ch <- prometheus.MustNewConstMetric(descCatalog, prometheus.GaugeValue, float64(c.src.Data.CatalogsBehind()))
	if c.src.SearchBehind != nil {
		ch <- prometheus.MustNewConstMetric(descSearchLag, prometheus.GaugeValue, float64(c.src.SearchBehind()))
	}
}
