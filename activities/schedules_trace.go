package activities

import (
	"context"
	"errors"
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

// scheduleOfActivity is the schedule whose workflow runs the activity.
func scheduleOfActivity(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return domain.ScheduleOfWorkflowID(activity.GetInfo(ctx).WorkflowExecution.ID)
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

// traceTick starts a RecordTick's spans: the tick, and under it the commit that records it.
// The store call runs in the commit's context, so its statements are the commit's children.
func (a *ScheduleActivities) traceTick(ctx context.Context, r TickRecord) (tickCtx, stepCtx context.Context, tick, step trace.Span) {
	attrs := []attribute.KeyValue{AttrArmed.Bool(false)}
	if r.WorkflowID != "" {
		attrs = append(attrs, AttrWorkflowID.String(r.WorkflowID))
	}
	tickCtx, tick = startTick(ctx, a.Tracer, scheduleOfActivity(ctx), r.ScheduleID, r.ScheduledAt, r.Trigger, attrs...)
	stepCtx, step = a.Tracer.Start(tickCtx, SpanCommit, trace.WithAttributes(AttrStatus.String(string(r.Status))))
	return tickCtx, stepCtx, tick, step
}

// roundTrace draws a planner round's arming into the traces of the fires it arms: for each
// fire its own trace (a tick, linked to the planner's activity, and its arming), whose span
// context the round writes on the fire's run for its release to join. A round's statements
// serve up to a thousand schedules, so they stay in the planner's own trace.
type roundTrace struct {
	tracer trace.Tracer
	ctx    context.Context
	ticks  map[tickKey]trace.Span
	spans  []trace.Span
}

type tickKey struct {
	schedule int64
	tick     int64
}

// arm starts the spans of the fires in plans, setting each fire's TraceContext. A round
// whose transaction is retried decides again: the spans of the attempt before end first.
func (t *roundTrace) arm(plans []store.RoundDecision, names map[int64]string) {
	if t.tracer == nil {
		return
	}
	t.end(nil, errRoundRetried)
	t.ticks = map[tickKey]trace.Span{}
	for i := range plans {
		p := &plans[i]
		for j := range p.Fires {
			f := &p.Fires[j]
			attrs := []attribute.KeyValue{AttrArmed.Bool(true), AttrVisibleAt.String(f.VisibleAt.UTC().Format(time.RFC3339Nano)),
				AttrWindow.Int(len(p.Fires))}
			if f.WorkflowID != "" {
				attrs = append(attrs, AttrWorkflowID.String(f.WorkflowID))
			}
			tctx, tick := startTick(t.ctx, t.tracer, names[p.ScheduleID], p.ScheduleID, f.Tick, domain.TriggerScheduled, attrs...)
			_, arm := t.tracer.Start(tctx, SpanArm)
			f.TraceContext = telemetry.Traceparent(tctx)
			t.ticks[tickKey{p.ScheduleID, f.Tick.UnixNano()}] = tick
			t.spans = append(t.spans, arm, tick)
		}
	}
}

// end names each armed fire's run on its tick and ends every span with the round's
// outcome (a tick recorded before creates no run: its span says so).
func (t *roundTrace) end(armed []store.ArmedFire, err error) {
	for _, f := range armed {
		if tick, ok := t.ticks[tickKey{f.ScheduleID, f.Tick.UnixNano()}]; ok {
			tick.SetAttributes(AttrRunID.Int64(f.RunID), AttrCreated.Bool(true))
		}
	}
	for _, s := range t.spans {
		endWith(s, err)
	}
	t.spans, t.ticks = nil, nil
}

// errRoundRetried ends the spans of a round attempt whose transaction was retried.
var errRoundRetried = errors.New("the round's transaction was retried")
