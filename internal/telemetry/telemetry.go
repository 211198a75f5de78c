// Package telemetry turns OpenTelemetry tracing on from the standard OTEL_* variables and
// hands each layer its instrumentation: the Temporal SDK's tracing interceptor, a pgx query
// tracer and an HTTP middleware. Tracing is on only when an OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); off, every method
// answers "nothing to install", so no interceptor, tracer or middleware runs at all.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// ScopeName is the instrumentation scope of tickgate's own spans.
const ScopeName = "github.com/tickgate/tickgate"

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES)
// names another.
const DefaultServiceName = "tickgate"

// RoleKey is the resource attribute naming the process's role: worker, api.
const RoleKey = attribute.Key("tickgate.role")

// Propagator is what tickgate reads and writes trace context with, on HTTP requests,
// Temporal headers and the rows that carry a unit of work across time: W3C trace context and
// baggage.
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Telemetry is one process role's tracing: its provider, or nothing when tracing is off.
type Telemetry struct {
	provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil when off, or when a test passed its own provider
}

// Off is tracing turned off: no provider, nothing installed.
func Off() *Telemetry { return &Telemetry{} }

// With wraps a provider someone else built (tests: an SDK provider with an in-memory
// exporter). Shutdown leaves it alone.
func With(tp trace.TracerProvider) *Telemetry { return &Telemetry{provider: tp} }

// Configured reports whether the environment asks for traces: an OTLP endpoint for traces is
// set, and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says otherwise.
func Configured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv builds the role's tracing from the standard variables: off unless Configured;
// on, spans are batched to the OTLP endpoint over http/protobuf, or gRPC when
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (or OTEL_EXPORTER_OTLP_PROTOCOL) is grpc. The exporter
// reads its own variables (endpoint, headers, timeout, TLS, compression), the SDK its
// sampler (OTEL_TRACES_SAMPLER, default parent-based always-on) and batching (OTEL_BSP_*).
// The resource is service.name tickgate (unless the environment names it), the role as
// tickgate.role, and a service.instance.id naming the host, the process and the role.
func FromEnv(ctx context.Context, role string) (*Telemetry, error) {
	if !Configured() {
		return Off(), nil
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: want http/protobuf (the default) or grpc, got %q", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	res, err := Resource(ctx, role)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(IDGenerator()))
	return &Telemetry{provider: tp, sdk: tp}, nil
}

// Resource describes the process: the defaults, then tickgate's service name, role and
// instance, then whatever OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES say (they win).
func Resource(ctx context.Context, role string) (*resource.Resource, error) {
	host, _ := os.Hostname()
	ours := resource.NewSchemaless(
		semconv.ServiceName(DefaultServiceName),
		semconv.ServiceInstanceID(fmt.Sprintf("%s/%d/%s", host, os.Getpid(), role)),
		RoleKey.String(role),
	)
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	merged, err := resource.Merge(resource.Default(), ours)
	if err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	if merged, err = resource.Merge(merged, env); err != nil {
		return nil, fmt.Errorf("otel resource: %w", err)
	}
	return merged, nil
}

// On reports whether spans are recorded.
func (t *Telemetry) On() bool { return t != nil && t.provider != nil }

// Provider is the tracer provider (a no-op one when off).
func (t *Telemetry) Provider() trace.TracerProvider {
	if !t.On() {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// Tracer is tickgate's own tracer, for the spans of its units of work; nil when off, so that
// the code holding it (an activity struct, the API) skips tracing with one nil check.
func (t *Telemetry) Tracer() trace.Tracer {
	if !t.On() {
		return nil
	}
	return t.provider.Tracer(ScopeName)
}

// TemporalInterceptor is the Temporal SDK's tracing interceptor (nil when off): on a
// client, starts, signals, updates and queries carry the caller's span in their headers;
// on the workers made from that client, workflows, activities and local activities get
// spans whose parents come from those headers, and the calls they make pass them on.
func (t *Telemetry) TemporalInterceptor() (interceptor.ClientInterceptor, error) {
	if !t.On() {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer: t.provider.Tracer("go.temporal.io/sdk"), TextMapPropagator: Propagator,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return i, nil
}

// QueryTracer is the pgx tracer for the store's pool (nil when off). It records a span for
// a statement only inside a recording span — a unit of work — never a trace of its own, so
// the background loops' polling adds nothing. A span is named after the sqlc query that ran
// it ("ReleaseDueFires"), or its first keyword for a statement written inline.
func (t *Telemetry) QueryTracer() pgx.QueryTracer {
	if !t.On() {
		return nil
	}
	return otelpgx.NewTracer(otelpgx.WithTracerProvider(t.provider), otelpgx.WithDisableConnectionDetailsInAttributes(),
		otelpgx.WithSpanNameCtxFunc(QuerySpanName), otelpgx.WithQuerySpanNamePrefix(),
		// The span's name already names the query (store/queries/*.sql holds its text); the
		// text itself, kilobytes for the arming and release statements, doubled what was
		// exported (bench-schedules -traces: 24.3 MB with it, 12.1 MB without).
		otelpgx.WithDisableSQLStatementInAttributes())
}

// QuerySpanName names a statement's span: sqlc's "-- name: X :kind" header gives X.
func QuerySpanName(ctx context.Context, stmt string) string {
	s := strings.TrimSpace(stmt)
	if rest, ok := strings.CutPrefix(s, "-- name: "); ok {
		if name, _, ok := strings.Cut(rest, " "); ok && name != "" {
			return name
		}
	}
	return otelpgx.SQLOperationName(ctx, stmt)
}

// HTTPHandler wraps h so that each request is a server span continuing the caller's
// traceparent (h itself when off). skip names the requests not worth a span (probes,
// metrics scrapes, static files).
func (t *Telemetry) HTTPHandler(h http.Handler, operation string, skip func(*http.Request) bool) http.Handler {
	if !t.On() {
		return h
	}
	opts := []otelhttp.Option{otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(Propagator)}
	if skip != nil {
		opts = append(opts, otelhttp.WithFilter(func(r *http.Request) bool { return !skip(r) }))
	}
	return otelhttp.NewHandler(h, operation, opts...)
}

// HTTPTransport wraps rt so that each outgoing request is a client span and carries its
// traceparent (rt itself when off): an executor's call joins the task's trace.
func (t *Telemetry) HTTPTransport(rt http.RoundTripper) http.RoundTripper {
	if !t.On() {
		return rt
	}
	return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(Propagator))
}

// Shutdown flushes the spans still batched and stops the exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}
