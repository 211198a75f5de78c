package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tickgate/tickgate/internal/telemetry"
)

var flagTraces = flag.Bool("traces", false, "turn tracing on in the tickgate worker, as OTEL_EXPORTER_OTLP_ENDPOINT does: every span exported over OTLP/HTTP "+
	"to a receiver in this process that counts and discards them (off by default, as tickgate is)")

// traceSink is the OTLP/HTTP endpoint of a -traces run: it reads each export and throws it
// away, so what the run measures is tickgate's side of tracing (recording, batching,
// encoding, sending), not a backend's.
type traceSink struct {
	srv             *httptest.Server
	tp              *sdktrace.TracerProvider
	exports, nbytes atomic.Int64
}

// startTraces turns tracing on as telemetry.FromEnv would (batched OTLP/HTTP export, the
// id generator), towards a discarding receiver.
func startTraces(ctx context.Context) (*telemetry.Telemetry, *traceSink, error) {
	s := &traceSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.exports.Add(1)
		s.nbytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(s.srv.URL+"/v1/traces"))
	if err != nil {
		s.srv.Close()
		return nil, nil, fmt.Errorf("trace exporter: %w", err)
	}
	res, err := telemetry.Resource(ctx, "worker")
	if err != nil {
		s.srv.Close()
		return nil, nil, err
	}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(telemetry.IDGenerator()))
	return telemetry.With(s.tp), s, nil
}

func (s *traceSink) stop() {
	_ = s.tp.Shutdown(context.Background())
	s.srv.Close()
}

// describe is the report's row: what was exported.
func (s *traceSink) describe() string {
	if s == nil {
		return "off (as by default: no OTLP endpoint)"
	}
	return fmt.Sprintf("on: %d OTLP/HTTP exports, %.1f MB, to a receiver in this process that discards them (its reads count as worker CPU)",
		s.exports.Load(), float64(s.nbytes.Load())/1e6)
}
