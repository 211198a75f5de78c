package api

import (
	"context"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tickgate/tickgate/metrics"
)

// observeHTTP records every request's latency under its route (Echo's path pattern, so ids
// do not explode the label set).
func observeHTTP(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			// Render the error here (as Echo would after the chain) so the status it
			// writes is the one recorded.
			c.Error(err)
		}
		status := c.Response().Status
		// Echo's route pattern (an unmatched request gets the pattern of the nearest node,
		// never its raw URL), so the label set stays bounded.
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		metrics.HTTPDuration.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return nil
	}
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
