// Package api maps tickgate's HTTP contract (DESIGN.md) onto starter calls and store reads,
// and nothing else: rules live in workflows and SQL.
package api

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// Server holds the API's dependencies.
type Server struct {
	Store    *store.Store
	Temporal client.Client
	Starter  *starter.Starter
	Logf     func(format string, args ...any)
	// Now is the clock (tests may pin it).
	Now func() time.Time
}

// New builds the Echo application with every route of the contract.
func New(s *Server) *echo.Echo {
	if s.Logf == nil {
		s.Logf = log.Printf
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = ErrorHandler(s.Logf)
	e.Use(middleware.Recover())
	e.Use(observeHTTP)
	e.Use(middleware.BodyLimit("1M"))
	e.Use(s.authenticate(e.Routes))
	e.Use(s.idempotency)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	s.registerMetrics(e)
	s.registerDashboard(e)

	g := e.Group("/api/v1")
	s.registerSchedules(g)
	s.registerEvents(g)
	s.registerRollouts(g)
	s.registerDevices(g)
	s.registerTokens(g)
	s.registerOpenAPI(g)
	return e
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when both PostgreSQL and Temporal answer, and says which does not.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{"postgres": "ok", "temporal": "ok"}
	ready := true
	if err := s.Store.Pool.Ping(ctx); err != nil {
		checks["postgres"], ready = err.Error(), false
	}
	if _, err := s.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		checks["temporal"], ready = err.Error(), false
	}
	if !ready {
		p := NewProblem(http.StatusServiceUnavailable, "", "not ready: postgres=%s temporal=%s", checks["postgres"], checks["temporal"])
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		return c.JSON(http.StatusServiceUnavailable, p)
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}
