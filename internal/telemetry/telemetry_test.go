package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgate/tickgate/internal/telemetry"
)

// clearOTel unsets the variables that turn tracing on, for the test.
func clearOTel(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME"} {
		t.Setenv(k, "")
	}
}

// TestOffUnlessAnEndpointIsSet: with no OTLP endpoint, tracing is off and installs nothing:
// no tracer, no Temporal interceptor, no pgx tracer, the HTTP handler and transport as given.
func TestOffUnlessAnEndpointIsSet(t *testing.T) {
	clearOTel(t)
	tel, err := telemetry.FromEnv(context.Background(), "worker")
	require.NoError(t, err)
	require.False(t, tel.On())
	require.Nil(t, tel.Tracer())
	i, err := tel.TemporalInterceptor()
	require.NoError(t, err)
	require.Nil(t, i)
	require.Nil(t, tel.QueryTracer())
	mux := http.NewServeMux()
	require.Same(t, mux, tel.HTTPHandler(mux, "x", nil), "the handler as given")
	require.Equal(t, http.DefaultTransport, tel.HTTPTransport(http.DefaultTransport))
	require.NoError(t, tel.Shutdown(context.Background()))

	// A nil Telemetry is off too (a Deps or Options that never set it).
	var none *telemetry.Telemetry
	require.False(t, none.On())
	require.Nil(t, none.Tracer())

	// An endpoint, but the SDK disabled: off.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	require.False(t, telemetry.Configured())
}

// TestOnWithAnEndpoint: an endpoint turns tracing on, over http/protobuf by default or gRPC
// when asked; another protocol is refused, naming the variable. The resource names the
// service tickgate and the role, unless OTEL_SERVICE_NAME says otherwise.
func TestOnWithAnEndpoint(t *testing.T) {
	clearOTel(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
	ctx := context.Background()
	for _, protocol := range []string{"", "http/protobuf", "grpc"} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		tel, err := telemetry.FromEnv(ctx, "api")
		require.NoError(t, err, protocol)
		require.True(t, tel.On(), protocol)
		require.NotNil(t, tel.Tracer())
		i, err := tel.TemporalInterceptor()
		require.NoError(t, err)
		require.NotNil(t, i)
		require.NotNil(t, tel.QueryTracer())
		require.NoError(t, tel.Shutdown(ctx))
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err := telemetry.FromEnv(ctx, "api")
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL")

	res, err := telemetry.Resource(ctx, "worker")
	require.NoError(t, err)
	attrs := map[string]string{}
	for _, kv := range res.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	require.Equal(t, "tickgate", attrs["service.name"])
	require.Equal(t, "worker", attrs["tickgate.role"])
	require.Contains(t, attrs["service.instance.id"], "/worker")
	t.Setenv("OTEL_SERVICE_NAME", "billing-scheduler")
	res, err = telemetry.Resource(ctx, "worker")
	require.NoError(t, err)
	for _, kv := range res.Attributes() {
		if kv.Key == "service.name" {
			require.Equal(t, "billing-scheduler", kv.Value.String())
		}
	}
}

// TestTraceparentRoundTrip: the string a row carries resumes the same span context; an
// unsampled or missing span writes nothing.
func TestTraceparentRoundTrip(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, span := tp.Tracer("t").Start(context.Background(), "work")
	tp2 := telemetry.Traceparent(ctx)
	require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, tp2)
	sc := telemetry.SpanContextOf(tp2)
	require.Equal(t, span.SpanContext().TraceID(), sc.TraceID())
	require.Equal(t, span.SpanContext().SpanID(), sc.SpanID())
	require.Equal(t, span.SpanContext().TraceID().String(), telemetry.TraceID(tp2))
	_, child := tp.Tracer("t").Start(telemetry.Resume(context.Background(), tp2), "later")
	require.Equal(t, span.SpanContext().SpanID(), child.(sdktrace.ReadOnlySpan).Parent().SpanID())

	require.Empty(t, telemetry.Traceparent(context.Background()))
	unsampled := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: span.SpanContext().TraceID(), SpanID: span.SpanContext().SpanID()}))
	require.Empty(t, telemetry.Traceparent(unsampled))
	require.Empty(t, telemetry.TraceID("not a traceparent"))
	require.Nil(t, telemetry.Nullable(""))
}

// TestWorkContextIsTheSameEverywhere: a unit of work's derived trace is the same for the
// same id, differs by id, kind and installation, and a root started with WithRootIDs takes its ids.
func TestWorkContextIsTheSameEverywhere(t *testing.T) {
	a, b := telemetry.WorkContext("db1", "task_device", 7), telemetry.WorkContext("db1", "task_device", 7)
	require.Equal(t, a, b)
	require.True(t, a.IsValid())
	require.NotEqual(t, a.TraceID(), telemetry.WorkContext("db1", "task_device", 8).TraceID())
	require.NotEqual(t, a.TraceID(), telemetry.WorkContext("db1", "task_run", 7).TraceID())
	require.NotEqual(t, a.TraceID(), telemetry.WorkContext("db2", "task_device", 7).TraceID(), "another installation")

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(telemetry.IDGenerator()))
	_, root := tp.Tracer("t").Start(telemetry.WithRootIDs(context.Background(), a), "root", trace.WithNewRoot())
	require.Equal(t, a.TraceID(), root.SpanContext().TraceID())
	require.Equal(t, a.SpanID(), root.SpanContext().SpanID())
	_, other := tp.Tracer("t").Start(context.Background(), "other")
	require.NotEqual(t, a.TraceID(), other.SpanContext().TraceID(), "other roots draw random ids")
}

// TestHTTPHandlerContinuesTheCallersTrace: a request with a traceparent becomes a server
// span of that trace; skipped requests get none.
func TestHTTPHandlerContinuesTheCallersTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tel := telemetry.With(tp)
	h := tel.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "api",
		func(r *http.Request) bool { return r.URL.Path == "/healthz" })
	for _, path := range []string{"/work", "/healthz"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	spans := exp.GetSpans()
	require.Len(t, spans, 1, "the probe has no span")
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", spans[0].SpanContext.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", spans[0].Parent.SpanID().String())
}

// TestQuerySpanName: a statement is named after its sqlc query.
func TestQuerySpanName(t *testing.T) {
	ctx := context.Background()
	require.Equal(t, "ReleaseDueFires", telemetry.QuerySpanName(ctx, "-- name: ReleaseDueFires :many\nWITH due AS (SELECT 1) SELECT 1"))
	require.Equal(t, "SELECT", telemetry.QuerySpanName(ctx, "SELECT count(*) FROM schedules"))
}
