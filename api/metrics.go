package api

import (
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
	local.MustRegister(&metrics.SQLCollector{Pool: s.Store.Pool})
	h := promhttp.HandlerFor(prometheus.Gatherers{metrics.Registry, local}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	e.GET("/metrics", echo.WrapHandler(h))
}
