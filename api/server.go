// Package api maps tickgate's HTTP contract (docs/spec.md) onto starter calls and store reads,
// and nothing else: rules live in workflows and SQL.
package api

import (
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/readiness"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// Server holds the API's dependencies.
type Server struct {
	Store    *store.Store
	Temporal client.Client
	Starter  *starter.Starter
	// Advancer advances the active device task after a commit that may have ended it, with
	// the configured device settings; nil hands that step to the dispatcher workflow.
	Advancer *store.TaskAdvancer
	// Listener is the process's listening connection (store.StartListener): it keeps the
	// token cache and wakes agents' long-polls. nil: every request reads its token from
	// the database, and a claim's wait is not honoured (it answers at once).
	Listener *store.Listener
	Logf     func(format string, args ...any)
	// Now is the clock (tests may pin it).
	Now func() time.Time
	// Readiness answers /readyz; New adds live PostgreSQL and Temporal probes to it. The
	// process passes the tracker it used while connecting, so a dependency's "since"
	// carries over; nil gets a fresh one.
	Readiness *readiness.Tracker
	// Tracer records the device executions' traces (agent_trace.go) and names each
	// request's span after its route; nil when tracing is off. The HTTP server span itself,
	// continuing a caller's traceparent, comes from the handler the binary wraps the
	// application in (telemetry.HTTPHandler).
	Tracer trace.Tracer
	// HTTPAllow is the outbound rule an HTTP action's or a health check's URL must pass
	// (TICKGATE_HTTP_ALLOW).
	HTTPAllow outbound.Rule
	// TraceURL is the trace viewer's address of a trace, with {trace_id} in it
	// (TICKGATE_TRACE_URL_TEMPLATE): the dashboard links each run that recorded a trace to
	// it. Empty: no links.
	TraceURL string
	// SchedulesResident (TICKGATE_SCHEDULES_RESIDENT): a new schedule's workflow is started
	// at once, by the planner's first look, and stays open at rest (docs/schedules.md
	// "Resident workflows").
	SchedulesResident bool

	// timerSignals bounds the Temporal calls telling PC timers wake-ups across all claims.
	timerSignals chan struct{}
	// results group-commits agents' successes.
	results *store.ResultBatcher
	// pcWakeups remembers the wake-ups this process told each PC's timer.
	pcWakeups pcWakeups
	// afterAnswers counts the calls running after their answer (afterAnswer, Drain).
	afterAnswers sync.WaitGroup
	// traceScope scopes the derived traces of device executions (workContext).
	traceScope     string
	traceScopeOnce sync.Once
}

// New builds the Echo application with every route of the contract.
func New(s *Server) *echo.Echo {
	if s.Logf == nil {
		s.Logf = log.Printf
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Readiness == nil {
		s.Readiness = readiness.New()
	}
	// Tests that build the application without Temporal never ask /readyz.
	s.Readiness.ProbeConnections(s.Store.Pool, s.Temporal)
	s.Readiness.Started()
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = ErrorHandler(s.Logf)
	answerHeadLikeGet(e)
	e.Use(securityHeaders)
	if s.Tracer != nil {
		e.Use(nameRequestSpan)
	}
	e.Use(middleware.Recover())
	e.Use(observeHTTP)
	e.Use(middleware.BodyLimit("1M"))
	e.Use(s.authenticate(e.Routes))
	e.Use(readableParams)
	e.Use(s.idempotency)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	s.registerMetrics(e)
	s.registerDashboard(e)

	g := e.Group("/api/v1")
	s.registerSchedules(g)
	s.registerCalendars(g)
	s.registerStats(g)
	s.registerEvents(g)
	s.registerRollouts(g)
	s.registerProgressive(g)
	s.registerDevices(g)
	s.registerTokens(g)
	s.registerOpenAPI(g)
	return e
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when both PostgreSQL and Temporal answer (checked live, each
// within a few seconds), otherwise 503 problem+json naming each one that does not and why.
func (s *Server) readyz(c echo.Context) error {
	s.Readiness.ServeHTTP(c.Response(), c.Request())
	return nil
}

// nameRequestSpan names the request's server span after its route once Echo has matched it
// ("POST /api/v1/schedules/:name/trigger"), so spans of one route group together.
func nameRequestSpan(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if span := trace.SpanFromContext(c.Request().Context()); span.IsRecording() && c.Path() != "" {
			span.SetName(c.Request().Method + " " + c.Path())
			span.SetAttributes(attribute.String("http.route", c.Path()))
		}
		return next(c)
	}
}
