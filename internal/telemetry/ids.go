package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"strconv"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A unit of work whose steps are many short requests (a device execution: claimed in one
// agent request, its result reported in another, perhaps through another API process) has
// a trace id derived from its own id, so every step joins its trace with nothing written
// for it: no column, no extra statement on the agents' hot path. Its root span has a
// derived span id too, so the step that records the root (the first claim) and the steps
// that hang under it (the result) agree on it without talking.

// WorkContext is the derived span context of a unit of work: scope names the installation
// (store.InstallID: a reset database reuses row ids), kind the table ("task_device"), id its
// row. Both the trace id and the root's span id come from a hash of the three, so they are
// the same in every process of one installation and never collide across kinds.
func WorkContext(scope, kind string, id int64) trace.SpanContext {
	sum := sha256.Sum256([]byte("tickgate/" + scope + "/" + kind + "/" + strconv.FormatInt(id, 10)))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

type forcedIDsKey struct{}

// WithRootIDs makes the next root span started on ctx take sc's trace and span ids: the
// step that records a unit of work's root span uses it (see WorkContext). It needs a
// provider made with IDGenerator, as FromEnv makes it; another provider ignores it.
func WithRootIDs(ctx context.Context, sc trace.SpanContext) context.Context {
	return context.WithValue(ctx, forcedIDsKey{}, sc)
}

// IDGenerator draws random ids, except for a root span started on a context from
// WithRootIDs. Tests that build their own SDK provider pass it too.
func IDGenerator() sdktrace.IDGenerator { return idGenerator{} }

type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(forcedIDsKey{}).(trace.SpanContext); ok && sc.IsValid() {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	var sid trace.SpanID
	for !tid.IsValid() {
		_, _ = rand.Read(tid[:])
	}
	for !sid.IsValid() {
		_, _ = rand.Read(sid[:])
	}
	return tid, sid
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		_, _ = rand.Read(sid[:])
	}
	return sid
}
