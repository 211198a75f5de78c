package traceview_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgate/tickgate/internal/dev/traceview"
)

// TestReceivesOTLPAndServesTheTrace: spans exported by the SDK's real OTLP/HTTP exporter
// arrive, are listed under their root and served with their parents, attributes and links;
// the page answers on / and /trace/{id}.
func TestReceivesOTLPAndServesTheTrace(t *testing.T) {
	srv := httptest.NewServer(traceview.NewStore(10).Handler())
	defer srv.Close()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := tp.Tracer("t")
	_, other := tr.Start(ctx, "elsewhere")
	other.End()
	rctx, root := tr.Start(ctx, "schedule.tick", trace.WithAttributes(attribute.String("tickgate.schedule.name", "billing")),
		trace.WithLinks(trace.Link{SpanContext: other.SpanContext()}))
	_, child := tr.Start(rctx, "schedule.arm")
	child.End()
	root.End()
	require.NoError(t, tp.Shutdown(ctx))

	get := func(path string, out any) int {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		if out != nil {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
		}
		return resp.StatusCode
	}
	var list []traceview.Summary
	get("/api/traces?q=billing", &list)
	require.Len(t, list, 1, "the filter finds the trace by an attribute value")
	require.Equal(t, "schedule.tick", list[0].Root)
	require.Equal(t, 2, list[0].Spans)
	id := root.SpanContext().TraceID().String()
	require.Equal(t, id, list[0].TraceID)

	var spans []traceview.Span
	get("/api/traces/"+id, &spans)
	require.Len(t, spans, 2)
	byName := map[string]traceview.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	require.Equal(t, byName["schedule.tick"].SpanID, byName["schedule.arm"].ParentID)
	require.Equal(t, "billing", byName["schedule.tick"].Attributes["tickgate.schedule.name"])
	require.Equal(t, other.SpanContext().TraceID().String(), byName["schedule.tick"].Links[0].TraceID)

	require.Equal(t, http.StatusNotFound, get("/api/traces/00000000000000000000000000000001", nil))
	for _, page := range []string{"/", "/trace/" + id} {
		resp, err := http.Get(srv.URL + page)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"))
		resp.Body.Close()
	}
}

// TestKeepsTheNewestTraces: beyond its bound the store forgets the oldest traces.
func TestKeepsTheNewestTraces(t *testing.T) {
	s := traceview.NewStore(2)
	for _, id := range []string{"a", "b", "c"} {
		s.Add([]traceview.Span{{TraceID: id, SpanID: "1", Name: id}})
	}
	require.Empty(t, s.Trace("a"))
	require.Len(t, s.List("", 10), 2)
	require.Equal(t, "c", s.List("", 10)[0].TraceID, "newest first")
}
