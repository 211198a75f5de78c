// Package api maps tickgate's HTTP contract (docs/spec.md) to calls, and nothing else: it
// decodes and checks requests (the field a bad one names, the token's role, an
// Idempotency-Key), calls the engine that owns the step — starter for the workflows of
// schedules and rollouts, the device engine (package deviceengine) for device dispatch, the
// store for reads and its transactions — and renders the answer as JSON or problem+json.
// The rules those calls apply live in the engines: the workflows, the SQL in store,
// internal/scheduleplan and internal/schedulespec, package deviceengine. Besides the routes
// of the contract it serves the console's files (package web), /metrics, /healthz,
// /readyz and the OpenAPI document.
package api

import (
	"errors"
	"log"
	"net/http"
	"net/netip"
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
	// Devices is the device engine the device routes call (deviceengine.Engine, built with the
	// configured device settings so that it advances the active task itself); nil: New
	// builds one on Store, Starter, Listener and Tracer that leaves advancing to the
	// dispatcher workflow.
	Devices DeviceEngine
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
	// WorkflowTaskQueues, when set (TICKGATE_WORKFLOW_TASK_QUEUES), are the only task queues
	// a schedule's workflow action may name; tickgate's own (Starter.TaskQueue) never.
	WorkflowTaskQueues []string
	// TraceURL is the trace viewer's address of a trace, with {trace_id} in it
	// (TICKGATE_TRACE_URL_TEMPLATE): the dashboard links each run that recorded a trace to
	// it. Empty: no links.
	TraceURL string
	// AuthFailures is how many failed authentications a minute one client address may make
	// before it is answered 429 (TICKGATE_API_AUTH_FAILURES; 0: DefaultAuthFailures,
	// negative: no limit). See auth_failures.go.
	AuthFailures int
	// TrustedProxies are the proxies in front of the API whose X-Forwarded-For is believed
	// (TICKGATE_API_TRUSTED_PROXIES); none: the client is the connection's peer.
	TrustedProxies []netip.Prefix
	// Timeouts are the HTTP server's (NewHTTPServer); a long-poll extends its own write
	// deadline past Timeouts.Write (extendWriteDeadline). Zero: the routes extend nothing.
	Timeouts HTTPTimeouts
	// SchedulesResident (TICKGATE_SCHEDULES_RESIDENT): a new schedule's workflow is started
	// at once, by the planner's first look, and stays open at rest (docs/schedules.md
	// "Resident workflows").
	SchedulesResident bool

	// authGuard bounds the work of failed authentications (auth_failures.go).
	authGuard *authGuard
	// devices is the device engine in use: Devices, or the one New built.
	devices DeviceEngine
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
	s.authGuard = newAuthGuard(s.AuthFailures, s.Now)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = ErrorHandler(s.Logf)
	e.IPExtractor = clientIPExtractor(s.TrustedProxies)
	answerHeadLikeGet(e)
	e.Use(securityHeaders)
	if s.Tracer != nil {
		e.Use(nameRequestSpan)
	}
	e.Use(middleware.Recover())
	e.Use(observeHTTP(e.Routes))
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
// within a few seconds), otherwise 503. Only a caller whose token may read learns which
// dependency fails and why (problem+json naming each, with their checks); anyone else
// gets the status alone: raw dependency errors name hosts and ports. A token that is
// shown is checked as on any route (401, 429); one that cannot be checked (PostgreSQL is
// away) gets the status alone too, which is then "not ready".
func (s *Server) readyz(c echo.Context) error {
	if c.Request().Header.Get(echo.HeaderAuthorization) == "" {
		s.Readiness.ServeStatus(c.Response(), c.Request())
		return nil
	}
	p, err := s.principal(c)
	var refused *Problem
	if errors.As(err, &refused) && (refused.Status == http.StatusUnauthorized || refused.Status == http.StatusTooManyRequests) {
		return err
	}
	if err != nil {
		s.Readiness.ServeStatus(c.Response(), c.Request())
		return nil
	}
	if !roleGrants(p.Role, PermRead) {
		s.Readiness.ServeStatus(c.Response(), c.Request())
		return nil
	}
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
