package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// dueTicks lists the ticks in (watermark, until], at most maxTicksPerRound, as a side effect.
func (w *scheduleWorkflow) dueTicks(ctx workflow.Context, until time.Time) []time.Time {
	var ticks []time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []time.Time
		t := w.carry.Watermark
		for len(out) < maxTicksPerRound {
			n := w.spec.Next(t)
			if n.IsZero() || n.Add(w.spec.JitterFor(w.def.Name, n)).After(until) {
				break
			}
			out = append(out, n)
			t = n
		}
		return out
	}).Get(&ticks)
	return ticks
}

// processDue handles every tick due by until (now, or when a command the loop takes next
// arrived) in time order, judged by how late it is now (see lateness): on time, or late
// while tickgate ran → fire; late after an outage → fire as catchup inside the catch-up
// window, MISSED beyond it. It reports whether more remain.
func (w *scheduleWorkflow) processDue(ctx workflow.Context, until time.Time) (bool, error) {
	now := workflow.Now(ctx)
	if w.carry.Rescheduled != nil {
		return false, w.processRescheduled(ctx, until)
	}
	// On time, the tick the last record answered fires without computing the spec again.
	for fired := 0; fired < maxTicksPerRound; fired++ {
		tick, known := w.plannedNext()
		if !known {
			break
		}
		if tick == nil {
			return false, nil // no further tick
		}
		fireAt := tick.Add(w.spec.JitterFor(w.def.Name, *tick))
		if fireAt.After(until) {
			return false, nil // not due yet
		}
		if now.Sub(fireAt) > domain.OnTimeTolerance {
			break // late: catch-up or missed, decided below over every due tick
		}
		if _, err := w.fire(ctx, *tick, domain.TriggerScheduled, domain.TickKey(w.def.ID, *tick), "", nil); err != nil {
			return false, err
		}
		if w.work.spent() {
			return true, nil
		}
	}
	ticks := w.dueTicks(ctx, until)
	if len(ticks) == 0 {
		return false, nil
	}
	fates, err := w.judgeLateness(ctx, ticks, now)
	if err != nil {
		return false, err
	}
	var missed []time.Time
	var missedReason string
	for i, tick := range ticks {
		if reason := fates[i].Missed; reason != "" {
			if reason != missedReason {
				if err := w.flushMissed(ctx, &missed, missedReason); err != nil {
					return false, err
				}
			}
			missed, missedReason = append(missed, tick), reason
			w.carry.Watermark = tick
			continue
		}
		if err := w.flushMissed(ctx, &missed, missedReason); err != nil {
			return false, err
		}
		if _, err := w.fire(ctx, tick, fates[i].Trigger, domain.TickKey(w.def.ID, tick), "", nil); err != nil {
			return false, err
		}
		if w.work.spent() {
			return true, nil // the rest in the next workflow task (missed is flushed before each fire)
		}
	}
	if err := w.flushMissed(ctx, &missed, missedReason); err != nil {
		return false, err
	}
	return len(ticks) == maxTicksPerRound, nil
}

// judgeLateness is the fate of each due tick (S2): on time within domain.OnTimeTolerance,
// it fires as scheduled; later than that, tick_fate in PostgreSQL — the one rule of a late
// tick, which the release of armed fires follows too — decides from the workers' liveness:
// fired late while tickgate ran, a catch-up fire after an outage inside the catch-up window,
// MISSED beyond it (in a local activity, so replays read the same answer). Only a round
// whose oldest tick is late asks.
func (w *scheduleWorkflow) judgeLateness(ctx workflow.Context, ticks []time.Time, now time.Time) ([]activities.TickFate, error) {
	fates := make([]activities.TickFate, len(ticks))
	fireAt := make([]time.Time, len(ticks))
	for i, tick := range ticks {
		fates[i] = activities.TickFate{Trigger: domain.TriggerScheduled}
		fireAt[i] = tick.Add(w.spec.JitterFor(w.def.Name, tick))
	}
	if now.Sub(fireAt[0]) <= domain.OnTimeTolerance {
		return fates, nil // the oldest due tick is on time, and so is every later one
	}
	err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.JudgeLateTicks, activities.LateTicks{
		FireAt: fireAt, JudgedAt: now, CatchupWindow: w.def.CatchupWindow,
	}).Get(ctx, &fates)
	return fates, err
}

// flushMissed records the missed ticks gathered so far, all with the same reason.
func (w *scheduleWorkflow) flushMissed(ctx workflow.Context, missed *[]time.Time, reason string) error {
	if len(*missed) == 0 {
		return nil
	}
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	next := w.nextAfterWatermark()
	var res activities.MissedResult
	err = workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RecordMissed, activities.MissedTicks{
		ScheduleID: w.def.ID, Ticks: *missed, Reason: reason, NextRunAt: next, ExcludeCalendars: w.calendars(ctx),
	}).Get(ctx, &res)
	*missed = nil
	if err != nil {
		return err
	}
	w.mirrored = res.NextRunAt // the record's answer, which the history holds
	for _, run := range res.Running {
		w.adoptIfUnwatched(ctx, run, nil)
	}
	return nil
}

// nextAfterWatermark is the tick after the watermark, to mirror as next_run_at. It is only
// ever a record's argument, never a decision: what the workflow remembers as mirrored is the
// record's answer (RunRecord.NextRunAt), so a replay under other time-zone data, which would
// compute another tick here, still decides as the run did.
func (w *scheduleWorkflow) nextAfterWatermark() *time.Time {
	n := w.spec.Next(w.carry.Watermark)
	if n.IsZero() {
		return nil
	}
	return &n
}

// fire decides what one tick does under the overlap and skip_if_successful policies and
// records it. overlap "" means the schedule's policy. A record that finds runs in flight the
// decision did not count records nothing; they are taken in and the tick is decided again
// (schedule_premise.go).
func (w *scheduleWorkflow) fire(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, overlap domain.Overlap, input json.RawMessage) (TriggerResult, error) {
	for decided := 1; ; decided++ {
		res, err := w.decideFire(ctx, tick, trigger, key, overlap, input)
		var unknown *unknownRuns
		if !errors.As(err, &unknown) || decided == maxDecisions {
			return res, err
		}
	}
}

// decideFire is one decision of fire.
func (w *scheduleWorkflow) decideFire(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, overlap domain.Overlap, input json.RawMessage) (TriggerResult, error) {
	if (trigger == domain.TriggerScheduled || trigger == domain.TriggerCatchup) && tick.After(w.carry.Watermark) {
		w.carry.Watermark = tick
	}
	if overlap == "" {
		overlap = w.def.Overlap
	}
	if reason, err := w.excludedBy(ctx, tick, trigger); err != nil {
		return TriggerResult{}, err
	} else if reason != "" {
		return w.record(ctx, tick, trigger, key, domain.RunSkipped, reason, "")
	}
	if w.def.SkipIfSuccessful && !w.carry.LastSuccessAt.IsZero() && skipIfSuccessfulApplies(trigger) {
		prev := w.previousTick(ctx, tick)
		if w.carry.LastSuccessAt.After(prev) {
			return w.record(ctx, tick, trigger, key, domain.RunSkipped,
				fmt.Sprintf("skip_if_successful: a run already succeeded at %s", w.carry.LastSuccessAt.UTC().Format(time.RFC3339)), "")
		}
	}
	if overlap == domain.OverlapAllowAll && w.def.MaxConcurrent > 0 && w.def.Action.StartsWorkflow() {
		if full, res, err := w.applyCap(ctx, tick, trigger, key, input); full || err != nil {
			return res, err
		}
	}
	if len(w.carry.Running) > 0 && w.def.Action.StartsWorkflow() {
		switch overlap {
		case domain.OverlapSkip:
			return w.record(ctx, tick, trigger, key, domain.RunSkipped,
				fmt.Sprintf("overlap skip: run %d is still running", w.carry.Running[0].RunID), "")
		case domain.OverlapBufferOne, domain.OverlapBufferAll, domain.OverlapCancelOther:
			// The run the tick waits for, named before anything below yields. (Recording the
			// superseded ticks does; in a run pinned before scheduleOneWriterChange the run
			// may end meanwhile, its watch freeing its place and waking the loop, which starts
			// the buffered tick. In the new branch its end waits in the inbox.)
			waitFor := w.carry.Running[0].RunID
			if overlap == domain.OverlapCancelOther {
				if err := w.supersedeWaiting(ctx, tick); err != nil {
					return TriggerResult{}, err
				}
			}
			limit := maxBuffer
			if overlap == domain.OverlapBufferOne {
				limit = 1
			}
			if len(w.carry.Buffer) >= limit {
				return w.record(ctx, tick, trigger, key, domain.RunSkipped,
					fmt.Sprintf("overlap %s: buffer full (%d)", overlap, limit), "")
			}
			res, err := w.buffer(ctx, BufferedTick{Tick: tick, Trigger: trigger, Key: key, Input: input, Overlap: overlap}, waitFor)
			if err == nil && overlap == domain.OverlapCancelOther {
				w.stopRunning(ctx, false)
			}
			return res, err
		case domain.OverlapTerminateOther:
			w.stopRunning(ctx, true)
		}
	}
	return w.startCounted(ctx, tick, trigger, key, overlap, input)
}

// buffer queues a tick behind the running run and records it as a BUFFERED row with the
// reason it waits, so that what is waiting is in PostgreSQL like every other tick (S2). A
// tick recorded before with another outcome (a retried fire, a backfill of a tick that
// ran) is that outcome, and does not wait.
func (w *scheduleWorkflow) buffer(ctx workflow.Context, b BufferedTick, waitFor int64) (TriggerResult, error) {
	reason := fmt.Sprintf("overlap %s: waiting for run %d to end", b.Overlap, waitFor)
	res, err := w.record(ctx, b.Tick, b.Trigger, b.Key, domain.RunBuffered, reason, "")
	if err != nil || res.Status != domain.RunBuffered {
		return res, err
	}
	w.carry.Buffer = append(w.carry.Buffer, b)
	return res, nil
}

// skipIfSuccessfulApplies reports whether skip_if_successful may skip a tick of this
// trigger: a scheduled one only. Catch-up ticks are historical runs that must execute; only
// the overlap policy applies to them (seed 004, case 15). Manual and backfill runs were
// asked for explicitly.
func skipIfSuccessfulApplies(trigger domain.Trigger) bool {
	return trigger == domain.TriggerScheduled
}

// previousTick is the nominal tick before tick (for skip_if_successful).
func (w *scheduleWorkflow) previousTick(ctx workflow.Context, tick time.Time) time.Time {
	var prev time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return w.spec.Prev(tick) }).Get(&prev)
	return prev
}

// supersedeWaiting applies cancel_other to the ticks already waiting for the running run
// to stop: as in Temporal Schedules, only the newest cancel_other tick waits, and each
// older one is recorded SKIPPED with its reason. (Kept, they would each start in turn after
// the canceled run — uncanceled, at full length — and a schedule catching up on a
// backlog would fall further behind with every tick.)
func (w *scheduleWorkflow) supersedeWaiting(ctx workflow.Context, newer time.Time) error {
	if !slices.ContainsFunc(w.carry.Buffer, w.cancelsOther) {
		return nil
	}
	reason := fmt.Sprintf("overlap cancel_other: superseded by the tick of %s", newer.UTC().Format(time.RFC3339))
	var kept []BufferedTick
	for _, b := range w.carry.Buffer {
		if !w.cancelsOther(b) {
			kept = append(kept, b)
		} else if _, err := w.record(ctx, b.Tick, b.Trigger, b.Key, domain.RunSkipped, reason, ""); err != nil {
			return err
		}
	}
	w.carry.Buffer = kept
	return nil
}

// cancelsOther reports whether a buffered tick waits under cancel_other (a tick carried
// from before its policy was kept waits under the schedule's).
func (w *scheduleWorkflow) cancelsOther(b BufferedTick) bool {
	overlap := b.Overlap
	if overlap == "" {
		overlap = w.def.Overlap
	}
	return overlap == domain.OverlapCancelOther
}

func (w *scheduleWorkflow) record(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, status domain.RunStatus, reason, workflowID string) (TriggerResult, error) {
	return w.recordFire(ctx, tick, trigger, key, status, reason, workflowID, nil, nil)
}

// recordFire records a tick; input is the fire's own input for a run that has to be
// adopted (see adoptIfUnwatched). premise, for a fire that starts a run, is the runs in
// flight it was decided on: when PostgreSQL holds others, nothing is recorded, they are
// taken in, and recordFire answers *unknownRuns (schedule_premise.go).
func (w *scheduleWorkflow) recordFire(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, status domain.RunStatus, reason, workflowID string,
	input json.RawMessage, premise *activities.FirePremise) (TriggerResult, error) {
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return TriggerResult{}, err
	}
	defer unlock()
	if status.Fired() && trigger != domain.TriggerManual {
		if now := workflow.Now(ctx); tick.After(now) {
			// No fire before its tick, whatever door the command came through: the rules
			// keep every path from asking, and this is the last guard.
			return TriggerResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("refusing to fire the tick of %s at %s, before it", tick.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)), "FireBeforeTick", nil)
		}
	}
	rec := activities.TickRecord{
		ScheduleID: w.def.ID, ScheduledAt: tick, Trigger: trigger, Status: status, Reason: reason,
		IdempotencyKey: key, WorkflowID: workflowID, NextRunAt: w.mirrored, Premise: premise,
	}
	if trigger != domain.TriggerManual {
		rec.ExcludeCalendars = w.calendars(ctx)
	}
	// The same transaction moves next_run_at past a scheduled tick, and its answer tells the
	// loop which tick that is (see plannedTick).
	plans := (trigger == domain.TriggerScheduled || trigger == domain.TriggerCatchup) && !w.carry.Paused
	after := w.carry.Watermark
	if plans {
		rec.NextRunAt = w.nextAfterWatermark()
	}
	if status != domain.RunSkipped && status != domain.RunMissed {
		rec.FiredAt = workflow.Now(ctx)
		rec.Event = w.eventFor(tick, trigger, rec.FiredAt)
	}
	var run activities.RunRecord
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RecordTick, rec).Get(ctx, &run); err != nil {
		return TriggerResult{}, err
	}
	if len(run.Unknown) > 0 {
		w.work.add(run.CommittedAt)
		return TriggerResult{}, w.takeIn(ctx, run.Unknown)
	}
	w.mirrored = run.NextRunAt // the record's answer, which the history holds
	w.work.add(run.CommittedAt)
	if plans {
		w.remember(after, run.NextRunAt)
	}
	if !run.Created {
		// The tick was recorded before. Whatever this attempt meant to do with it (fire it,
		// skip it), the row decides; if it is a run nobody watches, it is adopted.
		w.adoptIfUnwatched(ctx, run, input)
	}
	res := TriggerResult{RunID: run.ID, Status: run.Status, Reason: reason, ScheduledAt: run.ScheduledAt,
		existed: !run.Created, workflowID: run.WorkflowID}
	if res.workflowID == "" {
		res.workflowID = workflowID // answers recorded before the record returned it
	}
	return res, nil
}

// adoptIfUnwatched starts (idempotently) and watches a RUNNING run this workflow does not
// watch. Such a row was committed by a fire whose answer was lost — a local activity retried
// after its commit, or a workflow task whose worker died before completing it — and the
// retry decided differently or found it "recorded before" (found by the chaos run: such runs
// stayed RUNNING for good, and overlap policies waited on them). input is the fire's input
// when known (nil: the action's own).
func (w *scheduleWorkflow) adoptIfUnwatched(ctx workflow.Context, run activities.RunRecord, input json.RawMessage) {
	if run.Status != domain.RunRunning || !w.def.Action.StartsWorkflow() || run.WorkflowID == "" || w.isWatching(run.ID) {
		return
	}
	w.launch(ctx, run.ID, run.WorkflowID, run.ScheduledAt, input, run.StartAt)
}

// eventFor is the event appended with a fire (domain.FireEvent).
func (w *scheduleWorkflow) eventFor(tick time.Time, trigger domain.Trigger, firedAt time.Time) *domain.Event {
	e := domain.FireEvent(w.def.Name, w.def.Action, tick, trigger, firedAt)
	return &e
}

// startCounted starts a tick decided to start under overlap. In a run pinned before
// scheduleOneWriterChange it holds the tick's place in flight (concurrentHandlers.starting)
// until launch has put its run in carry.Running, for the decision of a fire in another
// handler meanwhile; in the new branch nothing is decided meanwhile.
func (w *scheduleWorkflow) startCounted(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, overlap domain.Overlap, input json.RawMessage) (TriggerResult, error) {
	if w.legacy != nil {
		w.legacy.starting++
		defer func() { w.legacy.starting-- }()
	}
	return w.start(ctx, tick, trigger, key, overlap, input)
}

// start records a fired run and performs its action. A workflow's run is recorded on the
// premise of the runs in flight its start was decided on (see premise).
func (w *scheduleWorkflow) start(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, overlap domain.Overlap, input json.RawMessage) (TriggerResult, error) {
	if !w.def.Action.StartsWorkflow() {
		res, err := w.record(ctx, tick, trigger, key, domain.RunSucceeded, "", "")
		if err == nil && !res.existed && res.Status == domain.RunSucceeded {
			w.succeeded(tick)
		}
		return res, err
	}
	res, err := w.recordFire(ctx, tick, trigger, key, domain.RunRunning, "", domain.RunWorkflowID(w.def.Name, key), input, w.premise(ctx, overlap))
	if err != nil || res.existed || res.Status != domain.RunRunning {
		// Recorded before: started and watched then, or adopted by record now. Or recorded
		// SKIPPED: a calendar edited since the workflow asked excludes the tick.
		return res, err
	}
	if status := w.launch(ctx, res.RunID, res.workflowID, tick, input, nil); status != "" {
		return TriggerResult{RunID: res.RunID, Status: status, ScheduledAt: tick}, nil
	}
	return res, nil
}

// launch starts a recorded run's workflow and watches it. Starting is idempotent: the run's
// workflow id is reused, never started twice. startAt, for an armed fire, delays the start
// to its tick. When the start fails the run is finished FAILED and launch returns that
// status ("" otherwise).
func (w *scheduleWorkflow) launch(ctx workflow.Context, runID int64, workflowID string, tick time.Time, input json.RawMessage, startAt *time.Time) domain.RunStatus {
	start := activities.RunStart(w.def.Name, w.def.Action, w.def.Retry)
	start.WorkflowID, start.StartAt, start.RunID = workflowID, startAt, runID
	if input != nil {
		start.Input = input // a trigger's own input (a workflow action's)
	}
	err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.StartRunWorkflow, start).Get(ctx, nil)
	if err != nil {
		_ = workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.FinishRun, activities.FinishedRun{
			RunID: runID, Status: domain.RunFailed, Error: "start run workflow: " + err.Error(),
		}).Get(ctx, nil)
		return domain.RunFailed
	}
	r := RunningRun{RunID: runID, WorkflowID: workflowID, ScheduledAt: tick}
	if startAt != nil && startAt.After(workflow.Now(ctx)) {
		r.WatchFrom = startAt // its target starts then: watched from its start (watchDue)
		w.carry.Running = append(w.carry.Running, r)
		return ""
	}
	w.carry.Running = append(w.carry.Running, r)
	w.watch(ctx, r)
	return ""
}

// watchDue begins the watches whose time has come: an armed fire's run is watched from its
// start, not from its arming, so a burst of runs armed together holds no activity through
// the arming lead.
func (w *scheduleWorkflow) watchDue(ctx workflow.Context) {
	now := workflow.Now(ctx)
	for i := range w.carry.Running {
		r := &w.carry.Running[i]
		if r.WatchFrom != nil && !r.WatchFrom.After(now) {
			r.WatchFrom = nil
			w.watch(ctx, *r)
		}
	}
}

// watchDeadline is when the loop must wake at the latest to begin a deferred watch
// (zero: none is deferred): watchDeferMax after the earliest start, when no round of the
// loop came meanwhile (a schedule whose next tick is far off).
func (w *scheduleWorkflow) watchDeadline() time.Time {
	var at time.Time
	for _, r := range w.carry.Running {
		if r.WatchFrom != nil && (at.IsZero() || r.WatchFrom.Before(at)) {
			at = *r.WatchFrom
		}
	}
	if at.IsZero() {
		return at
	}
	return at.Add(watchDeferMax)
}

// watch waits for a run's workflow to close and puts its end in the loop's inbox, where the
// loop records it and frees the run's place (schedule_inbox.go). The wait retries until
// Temporal says the target closed (activities.AwaitRunWorkflow: a poll that fails is not an
// end), so it fails only when this workflow stops waiting — canceled, ending — and then the
// run stays RUNNING for the schedule's next run to watch. (A run pinned before
// scheduleOneWriterChange records the end here: watchEndedLegacy.)
func (w *scheduleWorkflow) watch(ctx workflow.Context, r RunningRun) {
	workflow.Go(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 365 * 24 * time.Hour,
			HeartbeatTimeout:    activities.AwaitRunHeartbeatTimeout,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
			Summary:             "await run " + r.WorkflowID,
		})
		var out activities.RunOutcome
		err := workflow.ExecuteActivity(actx, scheduleActs.AwaitRunWorkflow, r.WorkflowID).Get(ctx, &out)
		if w.legacy != nil {
			w.watchEndedLegacy(ctx, r, out, err)
			return
		}
		if err != nil {
			workflow.GetLogger(ctx).Warn("stopped waiting for a run; it stays RUNNING", "workflow_id", r.WorkflowID, "error", err)
			return
		}
		w.arrive(ctx, &arrival{ended: &runEnd{run: r, outcome: out}})
	})
}

// forgetRun removes a run from the running ones (it ended, or its start was stopped).
func (w *scheduleWorkflow) forgetRun(runID int64) {
	for i, x := range w.carry.Running {
		if x.RunID == runID {
			w.carry.Running = append(w.carry.Running[:i], w.carry.Running[i+1:]...)
			return
		}
	}
}

// isWatching reports whether the run is one this workflow waits for.
func (w *scheduleWorkflow) isWatching(runID int64) bool {
	for _, r := range w.carry.Running {
		if r.RunID == runID {
			return true
		}
	}
	return false
}

func (w *scheduleWorkflow) succeeded(nominal time.Time) {
	if nominal.After(w.carry.LastSuccessAt) {
		w.carry.LastSuccessAt = nominal
	}
}

// drainBuffer starts buffered ticks, oldest first: each once nothing is running, or, waiting
// under the concurrency cap, once the cap has room (mayStartBuffered). While the
// schedule is paused it starts only buffered manual triggers and backfill ticks (the
// explicit requests a paused schedule allows): its other buffered ticks stay buffered, and
// start after resume under the overlap policy (seed 004, case 14).
func (w *scheduleWorkflow) drainBuffer(ctx workflow.Context) error {
	if len(w.carry.Buffer) == 0 {
		return nil
	}
	holdTicks := w.carry.Paused
	refused := 0
	for {
		i := 0
		if holdTicks {
			i = slices.IndexFunc(w.carry.Buffer, func(b BufferedTick) bool {
				return b.Trigger == domain.TriggerManual || b.Trigger == domain.TriggerBackfill
			})
		}
		if i < 0 || i >= len(w.carry.Buffer) {
			return nil
		}
		b := w.carry.Buffer[i]
		if !w.mayStartBuffered(ctx, b) {
			return nil
		}
		overlap := b.Overlap
		if overlap == "" {
			overlap = w.def.Overlap
		}
		w.carry.Buffer = slices.Delete(w.carry.Buffer, i, i+1)
		_, err := w.startCounted(ctx, b.Tick, b.Trigger, b.Key, overlap, b.Input)
		var unknown *unknownRuns
		if errors.As(err, &unknown) && refused < maxDecisions-1 {
			// Runs the workflow did not count hold the place it was to take: taken in, they
			// are in flight now, and it waits on in its place (mayStartBuffered decides again).
			// Under cancel_other they are what it waits to see canceled.
			refused++
			w.carry.Buffer = slices.Insert(w.carry.Buffer, i, b)
			if overlap == domain.OverlapCancelOther {
				w.stopRunning(ctx, false)
			}
			continue
		}
		if err != nil {
			return err
		}
	}
}

func (w *scheduleWorkflow) stopRunning(ctx workflow.Context, terminate bool) {
	for _, r := range w.carry.Running {
		_ = workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.StopRunWorkflow, activities.StopRun{
			WorkflowID: r.WorkflowID, Terminate: terminate, Reason: "overlap policy of schedule " + w.def.Name,
		}).Get(ctx, nil)
	}
}
