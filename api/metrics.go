package api

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vitrine/vitrine/api/ratelimit"
	"github.com/vitrine/vitrine/storage"
)

// Metrics are the Prometheus metrics of one process, on a registry of
// their own. The Observe methods are the hooks other parts feed: engine
// (ObserveStage, through engine.SetObserver), storage (ObserveDB,
// ObserveBlob, through DB.Observe and Blobs.Observe) and filters
// (ObserveFilter).
type Metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.HistogramVec
	stages    *prometheus.HistogramVec
	cache     *prometheus.CounterVec
	db        *prometheus.HistogramVec
	blobs     *prometheus.HistogramVec
	filters   *prometheus.HistogramVec
	filterEr  *prometheus.CounterVec
	hit, miss prometheus.Counter
	inflight  prometheus.Gauge
	// limited counts 429s by class and scope; storeErrors the checks that
	// went through uncounted because the shared store failed; storeUp,
	// registered once a shared store is in use, says whether it answers.
	limited     *prometheus.CounterVec
	storeErrors prometheus.Counter
	storeUp     prometheus.Gauge
	storeUpOnce sync.Once
}

// NewMetrics registers every metric, plus the Go runtime and process
// collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	auto := promauto.With(reg)
	fast := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	m := &Metrics{
		reg: reg,
		requests: auto.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vitrine_http_request_duration_seconds", Help: "HTTP requests by route, method (OTHER for a method HTTP does not define) and status, with their latency.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method", "status"}),
		stages: auto.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vitrine_image_stage_duration_seconds", Help: "Image pipeline stages: decode, transform (per transformation name), encode (per format).",
			Buckets: fast,
		}, []string{"stage", "name"}),
		cache: auto.NewCounterVec(prometheus.CounterOpts{
			Name: "vitrine_variant_cache_requests_total", Help: "Variant cache lookups by result (hit or miss).",
		}, []string{"result"}),
		db: auto.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vitrine_db_query_duration_seconds", Help: "Database queries by operation and result.", Buckets: fast,
		}, []string{"op", "result"}),
		blobs: auto.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vitrine_blob_operation_duration_seconds", Help: "Blob store operations by operation and result.", Buckets: fast,
		}, []string{"op", "result"}),
		filters: auto.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vitrine_filter_call_duration_seconds", Help: "WebAssembly filter calls by filter and kind (transformation, listener).", Buckets: fast,
		}, []string{"filter", "kind"}),
		filterEr: auto.NewCounterVec(prometheus.CounterOpts{
			Name: "vitrine_filter_errors_total", Help: "WebAssembly filter calls that failed, by filter and kind.",
		}, []string{"filter", "kind"}),
		inflight: auto.NewGauge(prometheus.GaugeOpts{Name: "vitrine_http_requests_in_flight", Help: "HTTP requests being served."}),
		limited: auto.NewCounterVec(prometheus.CounterOpts{
			Name: "vitrine_ratelimit_limited_total", Help: "Requests refused with 429 by a rate limit, by class (reads, renders, writes, signin) and scope (key, address).",
		}, []string{"class", "scope"}),
		storeErrors: auto.NewCounter(prometheus.CounterOpts{
			Name: "vitrine_ratelimit_store_errors_total", Help: "Rate limit checks that let the request through uncounted because the shared store (Redis) failed or was slow.",
		}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vitrine_ratelimit_store_up", Help: "1 while the rate limits' shared store (Redis) answers, 0 during an outage (requests then go through unlimited).",
		}),
	}
	m.hit, m.miss = m.cache.WithLabelValues("hit"), m.cache.WithLabelValues("miss")
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// observeRequest records one finished request.
func (m *Metrics) observeRequest(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, methodLabel(method), strconv.Itoa(status)).Observe(d.Seconds())
}

// methodLabel is method when HTTP defines it, and OTHER for anything a
// client made up: a label value per invented method would let any client
// grow the metrics without bound.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// observeCache counts one variant cache lookup.
func (m *Metrics) observeCache(hit bool) {
	if hit {
		m.hit.Inc()
	} else {
		m.miss.Inc()
	}
}

// ObserveStage records an image pipeline stage; it makes Metrics an
// engine.Observer.
func (m *Metrics) ObserveStage(stage, name string, d time.Duration) {
	m.stages.WithLabelValues(stage, name).Observe(d.Seconds())
}

// ObserveDB records a database query; pass it to storage.DB.Observe.
func (m *Metrics) ObserveDB(op string, d time.Duration, err error) {
	m.db.WithLabelValues(op, result(err)).Observe(d.Seconds())
}

// ObserveBlob records a blob operation; pass it to storage.Blobs.Observe.
func (m *Metrics) ObserveBlob(op string, d time.Duration, err error) {
	m.blobs.WithLabelValues(op, result(err)).Observe(d.Seconds())
}

// ObserveFilter records one call of a WebAssembly filter: its name, the
// kind of call ("transformation" or "listener"), how long it took, and its
// error (a guest rejection or crash) or nil.
func (m *Metrics) ObserveFilter(filter, kind string, d time.Duration, err error) {
	m.filters.WithLabelValues(filter, kind).Observe(d.Seconds())
	if err != nil {
		m.filterEr.WithLabelValues(filter, kind).Inc()
	}
}

// WatchCache exports the variant cache's size and evictions, read at each
// scrape.
func (m *Metrics) WatchCache(stats func() storage.CacheStats) {
	auto := promauto.With(m.reg)
	auto.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vitrine_variant_cache_bytes", Help: "Total size of cached variants (as last summed by this instance).",
	}, func() float64 { return float64(stats().Bytes) })
	auto.NewCounterFunc(prometheus.CounterOpts{
		Name: "vitrine_variant_cache_evictions_total", Help: "Variants this instance evicted.",
	}, func() float64 { return float64(stats().Evictions) })
	auto.NewCounterFunc(prometheus.CounterOpts{
		Name: "vitrine_variant_cache_evicted_bytes_total", Help: "Bytes of variants this instance evicted.",
	}, func() float64 { return float64(stats().EvictedBytes) })
}

// WatchBlobQueue exports what this instance's collector did with the blob
// deletion queue, read at each scrape.
func (m *Metrics) WatchBlobQueue(stats func() storage.CollectorStats) {
	auto := promauto.With(m.reg)
	auto.NewCounterFunc(prometheus.CounterOpts{
		Name: "vitrine_blob_queue_deleted_total", Help: "Queued blob deletions this instance carried out.",
	}, func() float64 { return float64(stats().Deleted) })
	auto.NewCounterFunc(prometheus.CounterOpts{
		Name: "vitrine_blob_queue_failures_total", Help: "Queued blob deletions that failed here (each is retried with backoff).",
	}, func() float64 { return float64(stats().Failed) })
}

// WatchEngine exports the image pipeline's load, read at each scrape:
// pipelines running and requests waiting for a slot.
func (m *Metrics) WatchEngine(load func() (running, waiting int)) {
	auto := promauto.With(m.reg)
	auto.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vitrine_pipelines_running", Help: "Image pipelines running now.",
	}, func() float64 { r, _ := load(); return float64(r) })
	auto.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vitrine_pipelines_waiting", Help: "Requests waiting for an image pipeline slot (queue depth).",
	}, func() float64 { _, w := load(); return float64(w) })
}

// ObserveRateLimited counts a request refused by a rate limit; with the
// two methods below it makes Metrics a ratelimit.Observer.
func (m *Metrics) ObserveRateLimited(class, scope string) {
	m.limited.WithLabelValues(class, scope).Inc()
}

// ObserveRateLimitStoreError counts a rate limit check that failed open.
func (m *Metrics) ObserveRateLimitStoreError() { m.storeErrors.Inc() }

// ObserveRateLimitStoreUp records whether the shared store answers; the
// gauge appears with its first call.
func (m *Metrics) ObserveRateLimitStoreUp(up bool) {
	m.storeUpOnce.Do(func() { m.reg.MustRegister(m.storeUp) })
	if up {
		m.storeUp.Set(1)
	} else {
		m.storeUp.Set(0)
	}
}

var _ ratelimit.Observer = (*Metrics)(nil)

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
