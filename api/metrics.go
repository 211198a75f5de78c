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
// do not explode the label set; unmatched requests are "unmatched").
func observeHTTP(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			// The error handler has not run yet: take the status it will write.
			if p, ok := err.(*Problem); ok {
				status = p.Status
			} else if he, ok := err.(*echo.HTTPError); ok {
				status = he.Code
			} else if !c.Response().Committed {
				status = 500
			}
		}
		route := c.Path()
		if route == "" || status == 404 && c.Param("*") != "" && route != "/ui/*" {
			route = "unmatched"
		}
		metrics.HTTPDuration.WithLabelValues(c.Request().Method, route, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return err
	}
}

// registerMetrics serves /metrics: the process registry plus this server's SQL collector.
func (s *Server) registerMetrics(e *echo.Echo) {
	local := prometheus.NewRegistry()
	local.MustRegister(&metrics.SQLCollector{Pool: s.Store.Pool})
	h := promhttp.HandlerFor(prometheus.Gatherers{metrics.Registry, local}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	e.GET("/metrics", echo.WrapHandler(h))
}
