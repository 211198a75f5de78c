package activities

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/store"
)

// One trace per fire (docs/tracing.md): its tick, the arming or commit that recorded it,
// its release by a worker's releaser, and for a workflow action its target's start and first
// workflow task. The fire is recorded by its schedule's workflow, whose own trace spans its
// whole life (started by the request that created it), so a scheduled fire begins a trace
// of its own, linked to that workflow's; a manual trigger's fire continues the request that
// triggered it. The fire's span context is written on its run (schedule_runs.trace_context),
// which is how the release, in whichever worker and however much later, joins it.

// Span names and attributes of a fire.
const (
	SpanTick    = "schedule.tick"    // the fire: root of its trace, recorded when the tick is armed or fires
	SpanArm     = "schedule.arm"     // the arming: committed ahead, hidden until its release
	SpanCommit  = "schedule.commit"  // a commit that made the fire true: the tick's own, or its release's
	SpanRelease = "schedule.release" // the releaser made the armed fire visible (or MISSED)

	AttrSchedule   = attribute.Key("tickgate.schedule.name")
	AttrScheduleID = attribute.Key("tickgate.schedule.id")
	AttrTick       = attribute.Key("tickgate.tick")
	AttrTrigger    = attribute.Key("tickgate.trigger")
	AttrRunID      = attribute.Key("tickgate.run.id")
	AttrStatus     = attribute.Key("tickgate.run.status")
	AttrVisibleAt  = attribute.Key("tickgate.fire.visible_at")
	AttrArmed      = attribute.Key("tickgate.fire.armed")
	AttrCreated    = attribute.Key("tickgate.run.created") // false: recorded before (a retried activity); the run keeps its first trace
	AttrWorkflowID = attribute.Key("tickgate.run.workflow_id")
	AttrLateMs     = attribute.Key("tickgate.fire.late_ms")
	AttrWindow     = attribute.Key("tickgate.arm.window_ticks")
)

// scheduleOfActivity is the schedule whose workflow (id schedule/<name>) runs the activity.
func scheduleOfActivity(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return strings.TrimPrefix(activity.GetInfo(ctx).WorkflowExecution.ID, "schedule/")
}

// startTick begins a fire's trace: a new root linked to the calling span (the schedule
// workflow's), or, for a manual trigger, a child of the request's span that triggered it.
func startTick(ctx context.Context, tr trace.Tracer, name string, scheduleID int64, tick time.Time, trigger domain.Trigger, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithAttributes(append([]attribute.KeyValue{
		AttrSchedule.String(name), AttrScheduleID.Int64(scheduleID), AttrTick.String(tick.UTC().Format(time.RFC3339Nano)),
		AttrTrigger.String(string(trigger)),
	}, attrs...)...)}
	if trigger != domain.TriggerManual {
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.LinkFromContext(ctx)))
	}
	return tr.Start(ctx, SpanTick, opts...)
}

// endWith ends span, recording err as its status.
func endWith(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// TraceReleased draws each released fire's release into the trace it was armed in: a
// release span timed as its transaction, and under it the commit that made it visible (or
// MISSED). The releaser calls it once the transaction committed; fires armed with tracing
// off carry no context and are left out. A release transaction takes up to a thousand
// schedules, so it has no span of its own for its fires to share.
func TraceReleased(tr trace.Tracer, fires []store.ReleasedFire) {
	if tr == nil {
		return
	}
	for _, f := range fires {
		if f.TraceContext == "" {
			continue
		}
		ctx := telemetry.Resume(context.Background(), f.TraceContext)
		attrs := []attribute.KeyValue{
			AttrRunID.Int64(f.RunID), AttrScheduleID.Int64(f.ScheduleID), AttrTick.String(f.ScheduledAt.Format(time.RFC3339Nano)),
			AttrTrigger.String(string(f.Trigger)), AttrStatus.String(string(f.Status)),
			AttrVisibleAt.String(f.VisibleAt.Format(time.RFC3339Nano)), AttrLateMs.Int64(f.ReleasedAt.Sub(f.VisibleAt).Milliseconds()),
		}
		if f.WorkflowID != "" {
			attrs = append(attrs, AttrWorkflowID.String(f.WorkflowID))
		}
		ctx, release := tr.Start(ctx, SpanRelease, trace.WithTimestamp(f.Began), trace.WithAttributes(attrs...))
		what := "the event and its outbox message became visible to the feed"
		switch {
		case f.Status == domain.RunMissed:
			what = "recorded MISSED: released beyond its catch-up window after an outage"
		case f.WorkflowID != "":
			what = "the run became visible; Temporal starts the target at its tick"
		}
		_, commit := tr.Start(ctx, SpanCommit, trace.WithTimestamp(f.Committing),
			trace.WithAttributes(AttrRunID.Int64(f.RunID), attribute.String("tickgate.commit", what)))
		if f.Status == domain.RunMissed {
			release.SetStatus(codes.Error, "missed")
		}
		commit.End(trace.WithTimestamp(f.Committed))
		release.End(trace.WithTimestamp(f.Committed))
	}
}

// traceTick starts a RecordTick's spans: the tick, and under it the step that records it —
// the arming of a fire committed ahead, or the commit of one recorded at its tick. The
// store call runs in the step's context, so its statements are the step's children.
func (a *ScheduleActivities) traceTick(ctx context.Context, r TickRecord) (tickCtx, stepCtx context.Context, tick, step trace.Span) {
	attrs := []attribute.KeyValue{AttrArmed.Bool(r.VisibleAt != nil)}
	if r.VisibleAt != nil {
		attrs = append(attrs, AttrVisibleAt.String(r.VisibleAt.UTC().Format(time.RFC3339Nano)))
	}
	if r.WorkflowID != "" {
		attrs = append(attrs, AttrWorkflowID.String(r.WorkflowID))
	}
	tickCtx, tick = startTick(ctx, a.Tracer, scheduleOfActivity(ctx), r.ScheduleID, r.ScheduledAt, r.Trigger, attrs...)
	name := SpanCommit
	if r.VisibleAt != nil {
		name = SpanArm
	}
	stepCtx, step = a.Tracer.Start(tickCtx, name, trace.WithAttributes(AttrStatus.String(string(r.Status))))
	return tickCtx, stepCtx, tick, step
}

// traceWindow starts the spans of an armed window: for each tick its own trace (a tick and
// its arming), all drawn over the window's one transaction. The statements run in the
// first tick's arming; the others link to it. It returns the context to run them in and a
// function to end every span with the transaction's outcome.
func (a *ScheduleActivities) traceWindow(ctx context.Context, r ArmWindowRequest, ticks []store.ArmedTick) (context.Context, func(error)) {
	var spans []trace.Span
	storeCtx := ctx
	var first trace.Link
	for i := range ticks {
		tctx, tick := startTick(ctx, a.Tracer, r.Name, r.ScheduleID, ticks[i].Tick, domain.TriggerScheduled,
			AttrArmed.Bool(true), AttrVisibleAt.String(ticks[i].VisibleAt.Format(time.RFC3339Nano)), AttrWindow.Int(len(ticks)))
		opts := []trace.SpanStartOption{trace.WithAttributes(AttrStatus.String(string(domain.RunSucceeded)))}
		if i > 0 {
			opts = append(opts, trace.WithLinks(first))
		}
		actx, arm := a.Tracer.Start(tctx, SpanArm, opts...)
		if i == 0 {
			storeCtx, first = actx, trace.LinkFromContext(actx)
		}
		ticks[i].TraceContext = telemetry.Traceparent(tctx)
		spans = append(spans, arm, tick)
	}
	return storeCtx, func(err error) {
		for _, s := range spans {
			endWith(s, err)
		}
	}
}
