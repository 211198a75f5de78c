package activities

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/store"
)

// One trace per rollout task run (docs/tracing.md): its promotion, its claim, each executor
// attempt and the write of its result. Promotion and claim are statements over many tasks
// at once, so the trace begins when the task is claimed, drawn back to when its promotion
// round made it AVAILABLE (promoted_at); the claim hands its span context on with the task
// (ClaimedTaskRun.TraceContext), through the workflow's history when the workflow claimed
// it, to the activity that runs its executor and writes its result.

// Span names and attributes of a task run.
const (
	SpanTaskRun = "rollout.task_run" // root: the task run, from its promotion to its claim
	SpanPromote = "rollout.promote"  // a promotion round made it AVAILABLE (at promoted_at)
	SpanClaim   = "rollout.claim"    // claimed RUNNING by a runner or its rollout's workflow
	SpanExecute = "rollout.execute"  // one executor attempt
	SpanFinish  = "rollout.finish"   // its result written (DONE, FAILED)

	AttrTaskRunID = attribute.Key("tickgate.task_run.id")
	AttrRolloutID = attribute.Key("tickgate.rollout.id")
	AttrDatabase  = attribute.Key("tickgate.task_run.database")
	AttrVersion   = attribute.Key("tickgate.task_run.version")
	AttrTaskType  = attribute.Key("tickgate.task_run.type")
	AttrExecutor  = attribute.Key("tickgate.task_run.executor")
	AttrClaim     = attribute.Key("tickgate.task_run.claim")   // the claim number (Attempt)
	AttrAttempt   = attribute.Key("tickgate.executor.attempt") // the executor's try within the claim
	AttrTaskState = attribute.Key("tickgate.task_run.status")
)

// traceClaimed turns claimed rows into the tasks the executors get and, with tracing on,
// begins each one's trace: the task run (from promoted_at), its promotion and its claim
// (from claimStart), linked to the span that claimed it (the runner's or the workflow's).
func (a *RolloutActivities) traceClaimed(ctx context.Context, rows []store.TaskRun, claimStart time.Time) []ClaimedTaskRun {
	out := make([]ClaimedTaskRun, len(rows))
	claimed := time.Now()
	for i, t := range rows {
		out[i] = claimedFrom(t)
		if a.Tracer == nil {
			continue
		}
		promoted := claimStart
		if t.PromotedAt != nil {
			promoted = *t.PromotedAt
		}
		tctx, run := a.Tracer.Start(ctx, SpanTaskRun, trace.WithNewRoot(), trace.WithLinks(trace.LinkFromContext(ctx)),
			trace.WithTimestamp(promoted), trace.WithAttributes(
				AttrTaskRunID.Int64(t.ID), AttrRolloutID.Int64(t.RolloutID), AttrDatabase.String(t.Database),
				AttrVersion.String(t.Version), AttrTaskType.String(string(t.Type)), AttrExecutor.String(string(t.Executor)),
				AttrClaim.Int(int(t.Attempt))))
		_, promote := a.Tracer.Start(tctx, SpanPromote, trace.WithTimestamp(promoted),
			trace.WithAttributes(attribute.String("tickgate.promoted_at", promoted.UTC().Format(time.RFC3339Nano))))
		promote.End(trace.WithTimestamp(promoted))
		_, claim := a.Tracer.Start(tctx, SpanClaim, trace.WithTimestamp(claimStart), trace.WithAttributes(AttrClaim.Int(int(t.Attempt))))
		claim.End(trace.WithTimestamp(claimed))
		out[i].TraceContext = telemetry.Traceparent(tctx)
		run.End(trace.WithTimestamp(claimed))
	}
	return out
}

// resumeTaskRun is ctx joined to t's trace, when it has one.
func (a *RolloutActivities) resumeTaskRun(ctx context.Context, t ClaimedTaskRun) context.Context {
	if a.Tracer == nil || t.TraceContext == "" {
		return ctx
	}
	return telemetry.Resume(ctx, t.TraceContext)
}

// executeTraced is execute inside an executor-attempt span of t's trace (execute itself
// when t has none).
func (a *RolloutActivities) executeTraced(ctx context.Context, t ClaimedTaskRun, attempt int32) ([]byte, error) {
	if a.Tracer == nil || t.TraceContext == "" {
		return a.execute(ctx, t)
	}
	ctx, span := a.Tracer.Start(ctx, SpanExecute, trace.WithAttributes(AttrTaskRunID.Int64(t.ID),
		AttrExecutor.String(string(t.Executor)), AttrAttempt.Int(int(attempt)), AttrDatabase.String(t.Database), AttrVersion.String(t.Version)))
	out, err := a.execute(ctx, t)
	endWith(span, err)
	return out, err
}

// traceFinished draws the write of a group's results into each task run's trace: one span
// per task over the group's one statement, from start until now.
func (a *RolloutActivities) traceFinished(group []taskOutcome, start time.Time, err error) {
	if a.Tracer == nil {
		return
	}
	end := time.Now()
	for _, r := range group {
		if r.skip || r.traceContext == "" {
			continue
		}
		_, span := a.Tracer.Start(telemetry.Resume(context.Background(), r.traceContext), SpanFinish, trace.WithTimestamp(start),
			trace.WithAttributes(AttrTaskRunID.Int64(r.ID), AttrTaskState.String(string(r.Status)), AttrClaim.Int(int(r.Attempt))))
		if r.Status == domain.TaskRunFailed {
			span.SetStatus(codes.Error, r.Error)
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End(trace.WithTimestamp(end))
	}
}
