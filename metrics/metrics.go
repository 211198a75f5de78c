// Package metrics holds tickgate's Prometheus registry: the API's request latency, the
// engines' figures read from PostgreSQL at scrape time (so any API replica reports what
// every worker did), histograms the engines observe in-process, and an adapter that
// exports the Temporal SDK's own worker metrics.
package metrics

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.temporal.io/sdk/client"
)

// Registry is the process-wide registry served at /metrics (with each server's SQL
// collector gathered beside it).
var Registry = prometheus.NewRegistry()

var (
	// HTTPDuration is the API's latency by route (Echo's route path, never the raw URL).
	HTTPDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tickgate_http_request_duration_seconds",
		Help:    "HTTP request latency by method, route and status code.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method", "route", "code"})

	// PromotionRound is the time one promotion round (the four gates in SQL) takes, as
	// observed by the promoter's activity in this worker process. (A device slot's refill
	// needs no in-process figure: it happens in the transaction that frees the slot, and
	// tickgate_device_refill_latency_seconds reads it from PostgreSQL.)
	PromotionRound = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tickgate_promotion_round_seconds",
		Help:    "Duration of one rollout promotion round.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		HTTPDuration, PromotionRound,
	)
}

// ---- Temporal SDK metrics --------------------------------------------------------------

// TemporalHandler exports the Temporal SDK's metrics (worker polls, task latencies, slots…)
// into Registry. Set it as client.Options.MetricsHandler.
func TemporalHandler() client.MetricsHandler { return &sdkHandler{root: sdkRoot} }

var sdkRoot = &sdkRegistry{families: map[string]*sdkFamily{}}

type sdkRegistry struct {
	mu       sync.Mutex
	families map[string]*sdkFamily
}

// sdkFamily is one metric name; its label names are fixed by its first use (Prometheus
// needs one label set per family): later extra tags are dropped, missing ones left empty.
type sdkFamily struct {
	labels  []string
	counter *prometheus.CounterVec
	gauge   *prometheus.GaugeVec
	timer   *prometheus.HistogramVec
}

var invalidName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

func promName(name string) string {
	n := invalidName.ReplaceAllString(name, "_")
	if !strings.HasPrefix(n, "temporal_") {
		n = "temporal_" + n
	}
	return n
}

func (r *sdkRegistry) family(kind, name string, tags map[string]string) (*sdkFamily, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := kind + " " + name
	f, ok := r.families[key]
	if !ok {
		f = &sdkFamily{}
		for k := range tags {
			f.labels = append(f.labels, invalidName.ReplaceAllString(k, "_"))
		}
		sort.Strings(f.labels)
		n := promName(name)
		var c prometheus.Collector
		switch kind {
		case "counter":
			f.counter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: n, Help: "Temporal SDK counter " + name}, f.labels)
			c = f.counter
		case "gauge":
			f.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: n, Help: "Temporal SDK gauge " + name}, f.labels)
			c = f.gauge
		default:
			f.timer = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: n + "_seconds", Help: "Temporal SDK timer " + name,
				Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, f.labels)
			c = f.timer
		}
		if err := Registry.Register(c); err != nil {
			f.counter, f.gauge, f.timer = nil, nil, nil // a name clash: drop this metric
		}
		r.families[key] = f
	}
	values := make([]string, len(f.labels))
	clean := make(map[string]string, len(tags))
	for k, v := range tags {
		clean[invalidName.ReplaceAllString(k, "_")] = v
	}
	for i, l := range f.labels {
		values[i] = clean[l]
	}
	return f, values
}

type sdkHandler struct {
	root *sdkRegistry
	tags map[string]string
}

func (h *sdkHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return &sdkHandler{root: h.root, tags: merged}
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

func (h *sdkHandler) Counter(name string) client.MetricsCounter {
	f, values := h.root.family("counter", name, h.tags)
	if f.counter == nil {
		return counterFunc(func(int64) {})
	}
	c := f.counter.WithLabelValues(values...)
	return counterFunc(func(d int64) {
		if d > 0 {
			c.Add(float64(d))
		}
	})
}

func (h *sdkHandler) Gauge(name string) client.MetricsGauge {
	f, values := h.root.family("gauge", name, h.tags)
	if f.gauge == nil {
		return gaugeFunc(func(float64) {})
	}
	g := f.gauge.WithLabelValues(values...)
	return gaugeFunc(g.Set)
}

func (h *sdkHandler) Timer(name string) client.MetricsTimer {
	f, values := h.root.family("timer", name, h.tags)
	if f.timer == nil {
		return timerFunc(func(time.Duration) {})
	}
	o := f.timer.WithLabelValues(values...)
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}
