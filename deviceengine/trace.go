package deviceengine

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/store"
)

// One trace per device execution (docs/tracing.md): its claim by the PC's agent, the
// agent's result and the refill of the slot the result freed. Each step is its own agent
// request, to whichever API process, and a claim takes up to a thousand executions at once;
// so the execution's trace id is derived from its id (telemetry.WorkContext): each step's
// span joins it with nothing written for it, and links to the request that carried it
// (that request's trace holds the statements). The first claim records the execution's
// root span.

// Span names and attributes of a device execution.
const (
	spanExecution = "device.execution" // root: the execution, recorded by its first claim
	spanClaim     = "device.claim"     // SENT to the PC's agent (a claim, or a result's claim_next)
	spanResult    = "device.result"    // the agent's result recorded
	spanRefill    = "device.refill"    // the slot the result freed refilled with the next execution(s)

	attrTaskDevice = attribute.Key("tickgate.task_device.id")
	attrTask       = attribute.Key("tickgate.task.id")
	attrPC         = attribute.Key("tickgate.pc")
	attrDevice     = attribute.Key("tickgate.device.serial")
	attrSlot       = attribute.Key("tickgate.slot")
	attrAttempt    = attribute.Key("tickgate.task_device.attempt")
	attrStatus     = attribute.Key("tickgate.task_device.status")
	attrVia        = attribute.Key("tickgate.claim.via")
	attrRefilled   = attribute.Key("tickgate.refilled")
)

const executionKind = "task_device"

// How an execution was claimed (the claim span's tickgate.claim.via).
const (
	viaClaim     = "claim"      // an agent's claim
	viaClaimNext = "claim_next" // handed out with the answer to the slot's last result
)

// workContext is the derived trace of execution id, scoped by the database's installation
// (read once; store.InstallID).
func (e *Engine) workContext(ctx context.Context, id int64) trace.SpanContext {
	e.traceScopeOnce.Do(func() {
		var err error
		if e.traceScope, err = e.store.InstallID(ctx); err != nil {
			e.logf("tracing: %v (device executions' traces are then not scoped by installation)", err)
		}
	})
	return telemetry.WorkContext(e.traceScope, executionKind, id)
}

// traceClaimed draws each claimed execution's claim into its trace, over [start, now]:
// its root first when this is its first attempt. via says which request claimed it.
func (e *Engine) traceClaimed(ctx context.Context, pc, via string, cmds []store.ClaimedCommand, start time.Time) {
	if e.tracer == nil || len(cmds) == 0 {
		return
	}
	end := time.Now()
	link := trace.WithLinks(trace.LinkFromContext(ctx))
	for _, cmd := range cmds {
		attrs := trace.WithAttributes(attrTaskDevice.Int64(cmd.ID), attrTask.Int64(cmd.TaskID), attrPC.String(pc),
			attrDevice.String(cmd.DeviceSerial), attrSlot.Int(int(cmd.Slot)), attrAttempt.Int(int(cmd.Attempt)), attrVia.String(via))
		work := e.workContext(ctx, cmd.ID)
		parent := trace.ContextWithRemoteSpanContext(context.Background(), work)
		if cmd.Attempt == 1 {
			var root trace.Span
			parent, root = e.tracer.Start(telemetry.WithRootIDs(context.Background(), work), spanExecution,
				trace.WithNewRoot(), trace.WithTimestamp(start), attrs)
			defer root.End(trace.WithTimestamp(end))
		}
		_, claim := e.tracer.Start(parent, spanClaim, trace.WithTimestamp(start), attrs, link)
		claim.End(trace.WithTimestamp(end))
	}
}

// traceResult draws a result into its execution's trace, over [start, now], and under it
// the refill of the freed slot when the result's transaction refilled it.
func (e *Engine) traceResult(ctx context.Context, id int64, attempt *int32, succeeded bool, out *store.Outcome, start time.Time, err error) {
	if e.tracer == nil {
		return
	}
	status := "failed"
	if succeeded {
		status = "succeeded"
	}
	attrs := []attribute.KeyValue{attrTaskDevice.Int64(id), attrStatus.String(status)}
	if attempt != nil {
		attrs = append(attrs, attrAttempt.Int(int(*attempt)))
	}
	rctx, result := e.tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), e.workContext(ctx, id)),
		spanResult, trace.WithTimestamp(start), trace.WithAttributes(attrs...), trace.WithLinks(trace.LinkFromContext(ctx)))
	end := time.Now()
	if err != nil {
		result.RecordError(err)
		result.SetStatus(codes.Error, err.Error())
	}
	if out != nil && len(out.Refilled) > 0 {
		links := make([]trace.Link, 0, len(out.Refilled))
		for _, next := range out.Refilled {
			links = append(links, trace.Link{SpanContext: e.workContext(ctx, next)})
		}
		_, refill := e.tracer.Start(rctx, spanRefill, trace.WithTimestamp(start),
			trace.WithAttributes(attrRefilled.Int64Slice(out.Refilled)), trace.WithLinks(links...))
		refill.End(trace.WithTimestamp(end))
	}
	result.End(trace.WithTimestamp(end))
}
