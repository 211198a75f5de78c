package api

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tickgate/tickgate/metrics"
)

// observeHTTP records every request's latency under labels from a closed set, so no
// request, authenticated or not, can add a series of its own: the method if it is one
// the API knows (else "OTHER"), the route's template (Echo's path pattern: ids do not
// explode the label set; a request that matched no route is "unmatched"), and the status.
func observeHTTP(routes func() []*echo.Route) echo.MiddlewareFunc {
	var once sync.Once
	var templates map[string]bool
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				// Render the error here (as Echo would after the chain) so the status it
				// writes is the one recorded.
				c.Error(err)
			}
			once.Do(func() {
				templates = map[string]bool{}
				for _, r := range routes() {
					templates[r.Path] = true
				}
			})
			route := c.Path()
			if !templates[route] {
				route = "unmatched"
			}
			metrics.HTTPDuration.WithLabelValues(methodLabel(c.Request().Method), route, strconv.Itoa(c.Response().Status)).
				Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

// methodLabel is a request's method as a metrics label: one of the methods of HTTP's own
// vocabulary, or "OTHER" for anything a client made up.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// registerMetrics serves /metrics: the process registry plus this server's SQL collector.
func (s *Server) registerMetrics(e *echo.Echo) {
	local := prometheus.NewRegistry()
	local.MustRegister(&metrics.SQLCollector{Store: s.Store}, &metrics.ScheduleCollector{Read: s.scheduleFigures})
	h := promhttp.HandlerFor(prometheus.Gatherers{metrics.Registry, local}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	e.GET("/metrics", echo.WrapHandler(h))
}

// scheduleFigures reads the per-schedule series' figures from the store.
func (s *Server) scheduleFigures(ctx context.Context, limit, perSchedule int, bounds []float64) ([]metrics.ScheduleFigures, error) {
	counts, buckets, err := s.Store.ScheduleSeries(ctx, limit, perSchedule, bounds)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*metrics.ScheduleFigures, len(counts))
	out := make([]metrics.ScheduleFigures, len(counts))
	for i, c := range counts {
		out[i] = metrics.ScheduleFigures{Name: c.Name, Fired: c.FiredCount, Skipped: c.SkippedCount, Missed: c.MissedCount, Failed: c.FailedCount}
		byName[c.Name] = &out[i]
	}
	for _, b := range buckets {
		if f := byName[b.Name]; f != nil {
			f.Lateness = append(f.Lateness, metrics.BucketCount{Above: int(b.Bucket), Count: b.N, Sum: b.SumS})
		}
	}
	return out, nil
}
