package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A unit of work that outlives the process or the request that began it (an armed fire
// released later by another process; a device execution claimed in one request and
// finished in another) carries its span context on its row, as a W3C traceparent string.
// These two functions write and read that string.

// Traceparent is the W3C traceparent of the span in ctx: "" when there is none or it is not
// sampled (nothing worth joining later), so a row written with tracing off stays NULL.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// SpanContextOf parses a traceparent written by Traceparent (invalid when it is empty or
// malformed).
func SpanContextOf(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// Resume is ctx with the span context a row carried as its remote parent: a span started
// on it joins that trace. ctx is returned as it is when traceparent holds none.
func Resume(ctx context.Context, traceparent string) context.Context {
	sc := SpanContextOf(traceparent)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// TraceID is the trace id a traceparent names, in hex ("" when none).
func TraceID(traceparent string) string {
	sc := SpanContextOf(traceparent)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Nullable is traceparent as a nullable column value: nil for "".
func Nullable(traceparent string) *string {
	if traceparent == "" {
		return nil
	}
	return &traceparent
}
