package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// ScheduleWorkflowType is the registered name of the schedule workflow.
const ScheduleWorkflowType = "ScheduleWorkflow"

// Signal and update names of ScheduleWorkflow. Other services may send them as signals
// (fire and forget) or updates (answered); both reach the same handler, and the result is
// mirrored in Postgres.
const (
	SchedulePause   = "pause"   // payload PauseRequest
	ScheduleResume  = "resume"  // no payload
	ScheduleTrigger = "trigger" // payload TriggerRequest; the update answers TriggerResult
	ScheduleRefresh = "refresh" // no payload: the definition changed in Postgres, reload it
	// ScheduleReschedule moves the next fire; payload RescheduleRequest.
	ScheduleReschedule = "reschedule"
	// ScheduleBackfill fires every tick of a past range once; payload BackfillRequest, the
	// update answers BackfillResult.
	ScheduleBackfill = "backfill"
	// ScheduleDescribe is the query answering ScheduleDescription.
	ScheduleDescribe = "describe"
)

// ErrBackfillTooLarge is the error type of a backfill update whose range holds too many ticks.
const ErrBackfillTooLarge = "BackfillTooLarge"

// ScheduleWorkflowID is the one workflow id of a schedule.
func ScheduleWorkflowID(name string) string { return "schedule/" + name }

// ScheduleInput starts (or continues) a schedule's workflow.
type ScheduleInput struct {
	ScheduleID int64
	Name       string
	// Carry is the state handed over by continue-as-new; nil on the first run.
	Carry *ScheduleCarry `json:",omitempty"`
}

// ScheduleCarry is the state a schedule keeps across continue-as-new.
type ScheduleCarry struct {
	Watermark time.Time // the newest nominal tick already processed
	Paused    bool
	Note      string
	Running   []RunningRun
	Buffer    []BufferedTick
	// LastSuccessAt is the nominal time of the newest run that succeeded (a manual run's
	// nominal time is when it was triggered); skip_if_successful compares it to the
	// previous tick.
	LastSuccessAt time.Time
	// ContinueAsNewAfter overrides how many loop iterations a run makes before it continues
	// as new (0: the default); for tests and tuning.
	ContinueAsNewAfter int `json:",omitempty"`
	// Rescheduled replaces the next natural tick when set (reschedule).
	Rescheduled *time.Time `json:",omitempty"`
	// Backfills are the ranges still to fire, oldest request first.
	Backfills []Backfill `json:",omitempty"`
}

// Backfill is a range of ticks still to fire: those after Done up to End.
type Backfill struct {
	Done    time.Time
	End     time.Time
	Overlap domain.Overlap
}

// RescheduleRequest sets the schedule's next fire time. Natural ticks before it are
// recorded SKIPPED with the reason; ticks after it follow the spec again.
type RescheduleRequest struct {
	NextRunAt time.Time `json:"next_run_at"`
}

// BackfillRequest fires every tick in [Start, End] once, in order, subject to the overlap
// policy (Overlap overrides it). Ticks that already ran are not run again.
type BackfillRequest struct {
	Start   time.Time      `json:"start"`
	End     time.Time      `json:"end"`
	Overlap domain.Overlap `json:"overlap,omitempty"`
}

// BackfillResult says how many ticks the range holds.
type BackfillResult struct {
	Ticks int `json:"ticks"`
}

// RunningRun is a run of a workflow action that has not finished.
type RunningRun struct {
	RunID       int64
	WorkflowID  string
	ScheduledAt time.Time
}

// BufferedTick is a tick waiting for running runs to finish (overlap buffer_one/buffer_all,
// cancel_other).
type BufferedTick struct {
	Tick    time.Time
	Trigger domain.Trigger
	Key     string
	Input   json.RawMessage `json:",omitempty"`
	// Overlap is the policy the tick was buffered under ("" in state carried from before it
	// was kept: the schedule's policy).
	Overlap domain.Overlap `json:",omitempty"`
}

// PauseRequest pauses a schedule with an operator's note.
type PauseRequest struct {
	Note string `json:"note"`
}

// TriggerRequest fires a schedule now. RequestID makes a retried trigger idempotent (the
// API sets it; a signal without one gets a fresh id); Overlap overrides the schedule's
// policy for this run; Input overrides the workflow action's input.
type TriggerRequest struct {
	RequestID string          `json:"request_id,omitempty"`
	Overlap   domain.Overlap  `json:"overlap,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// TriggerResult is the run a trigger recorded.
type TriggerResult struct {
	RunID       int64            `json:"run_id"`
	Status      domain.RunStatus `json:"status"`
	Reason      string           `json:"reason,omitempty"`
	ScheduledAt time.Time        `json:"scheduled_at"`
	// existed marks a tick recorded before (a retry, or a backfill of a tick that ran).
	existed bool
}

// ScheduleDescription answers the describe query.
type ScheduleDescription struct {
	Name       string       `json:"name"`
	Paused     bool         `json:"paused"`
	Note       string       `json:"note,omitempty"`
	Watermark  time.Time    `json:"watermark"`
	NextFireAt *time.Time   `json:"next_fire_at,omitempty"`
	Running    []RunningRun `json:"running"`
	Buffered   int          `json:"buffered"`
	Backfills  int          `json:"backfills"`
	Version    int64        `json:"version"`
}

// adoptUnwatchedRunChange versions the adoption of a RUNNING run row committed by a fire
// whose answer was lost (see start): histories recorded before it replay the old way.
const adoptUnwatchedRunChange = "adopt-unwatched-run"

// cancelOtherSupersedesChange versions cancel_other keeping only its newest waiting tick
// (see supersedeWaiting): histories recorded before it replay the old way.
const cancelOtherSupersedesChange = "cancel-other-supersedes-waiting"

// Scheduling constants.
const (
	// onTimeTolerance is how late a tick may be processed and still count as on time
	// (timer and worker latency), whatever the catch-up window.
	onTimeTolerance = 10 * time.Second
	// maxTicksPerRound bounds the ticks handled between two waits, so a long outage is
	// worked through in slices and the workflow stays responsive.
	maxTicksPerRound = 500
	// maxBuffer caps buffered ticks (as Temporal Schedules do); beyond it ticks are SKIPPED.
	maxBuffer = 1000
	// backfillPerRound is how many backfill ticks are fired between two looks at new ticks
	// and handlers, as Temporal Schedules do.
	backfillPerRound = 10
	// maxBackfillTicks bounds one backfill request.
	maxBackfillTicks = 10000
	// continueAsNewAfter bounds history even if the server never suggests continue-as-new.
	continueAsNewAfter = 500
)

var scheduleActs *activities.ScheduleActivities

// scheduleWorkflow is one schedule's runtime state; its workflow is the single writer.
type scheduleWorkflow struct {
	in       ScheduleInput
	def      activities.ScheduleDefinition
	spec     *schedulespec.Compiled
	carry    ScheduleCarry
	dirty    bool // a handler changed something the loop must look at
	reload   bool
	inFlight int // signals being handled (they are not counted by AllHandlersFinished)
	// mirrorBusy serialises the writes of next_run_at (fires, pause, resume, reschedule and
	// the loop\'s mirror), so the loop and a handler never overwrite each other out of order.
	mirrorBusy bool
	mirrored   *time.Time // next_run_at last written to Postgres
	next       *time.Time // next nominal tick, for describe
	events     int        // history growth proxy
}

// ScheduleWorkflow fires one schedule's ticks exactly once each: it sleeps on a durable
// timer until the next tick, records every fire through one Postgres transaction, and
// answers pause / resume / trigger / refresh from the API and other services.
func ScheduleWorkflow(ctx workflow.Context, in ScheduleInput) error {
	w := &scheduleWorkflow{in: in}
	if in.Carry != nil {
		w.carry = *in.Carry
	}
	if err := w.setup(ctx); err != nil {
		return err
	}
	return w.run(ctx)
}

// localCtx runs the schedule's Postgres writes as local activities, inside the workflow
// task: no activity-task round trip through the server, which is most of a fire's latency.
// A worker killed mid-write loses the workflow task; its retry on another worker runs the
// write again, and the idempotency key makes that safe.
func localCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second, ScheduleToCloseTimeout: waitOutOutages,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second,
			NonRetryableErrorTypes: []string{activities.ErrScheduleGone},
		},
	})
}

// setup registers the query, update and signal handlers.
func (w *scheduleWorkflow) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, ScheduleDescribe, func() (ScheduleDescription, error) {
		return w.describe(), nil
	}); err != nil {
		return fmt.Errorf("register describe: %w", err)
	}
	updates := map[string]any{
		SchedulePause: func(ctx workflow.Context, req PauseRequest) (ScheduleDescription, error) {
			return w.pause(ctx, req)
		},
		ScheduleResume: func(ctx workflow.Context) (ScheduleDescription, error) {
			return w.resume(ctx)
		},
		ScheduleTrigger: func(ctx workflow.Context, req TriggerRequest) (TriggerResult, error) {
			return w.trigger(ctx, req)
		},
		ScheduleRefresh: func(ctx workflow.Context) (ScheduleDescription, error) {
			w.reload, w.dirty = true, true
			return w.describe(), nil
		},
		ScheduleReschedule: func(ctx workflow.Context, req RescheduleRequest) (ScheduleDescription, error) {
			return w.reschedule(ctx, req)
		},
		ScheduleBackfill: func(ctx workflow.Context, req BackfillRequest) (BackfillResult, error) {
			return w.backfill(ctx, req)
		},
	}
	validators := map[string]any{
		ScheduleReschedule: func(ctx workflow.Context, req RescheduleRequest) error {
			if req.NextRunAt.IsZero() {
				return errors.New("next_run_at is required")
			}
			if w.carry.Paused {
				return errors.New("the schedule is paused: resume it first")
			}
			return nil
		},
		ScheduleBackfill: func(ctx workflow.Context, req BackfillRequest) error {
			if req.Start.IsZero() || req.End.IsZero() || req.End.Before(req.Start) {
				return errors.New("want start <= end")
			}
			return nil
		},
	}
	for _, name := range []string{SchedulePause, ScheduleResume, ScheduleTrigger, ScheduleRefresh, ScheduleReschedule, ScheduleBackfill} {
		opts := workflow.UpdateHandlerOptions{}
		if v, ok := validators[name]; ok {
			opts.Validator = v
		}
		if err := workflow.SetUpdateHandlerWithOptions(ctx, name, updates[name], opts); err != nil {
			return fmt.Errorf("register update %s: %w", name, err)
		}
	}
	// Signals from other services reach the same handlers.
	workflow.Go(ctx, func(ctx workflow.Context) {
		pauseCh := workflow.GetSignalChannel(ctx, SchedulePause)
		resumeCh := workflow.GetSignalChannel(ctx, ScheduleResume)
		triggerCh := workflow.GetSignalChannel(ctx, ScheduleTrigger)
		refreshCh := workflow.GetSignalChannel(ctx, ScheduleRefresh)
		rescheduleCh := workflow.GetSignalChannel(ctx, ScheduleReschedule)
		backfillCh := workflow.GetSignalChannel(ctx, ScheduleBackfill)
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(pauseCh, func(c workflow.ReceiveChannel, _ bool) {
				w.inFlight++
				defer func() { w.inFlight-- }()
				var req PauseRequest
				c.Receive(ctx, &req)
				_, _ = w.pause(ctx, req)
			})
			sel.AddReceive(resumeCh, func(c workflow.ReceiveChannel, _ bool) {
				w.inFlight++
				defer func() { w.inFlight-- }()
				c.Receive(ctx, nil)
				_, _ = w.resume(ctx)
			})
			sel.AddReceive(triggerCh, func(c workflow.ReceiveChannel, _ bool) {
				w.inFlight++
				defer func() { w.inFlight-- }()
				var req TriggerRequest
				c.Receive(ctx, &req)
				if _, err := w.trigger(ctx, req); err != nil {
					workflow.GetLogger(ctx).Warn("trigger signal failed", "error", err)
				}
			})
			sel.AddReceive(refreshCh, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				w.reload, w.dirty = true, true
			})
			sel.AddReceive(rescheduleCh, func(c workflow.ReceiveChannel, _ bool) {
				var req RescheduleRequest
				c.Receive(ctx, &req)
				if req.NextRunAt.IsZero() || w.carry.Paused {
					workflow.GetLogger(ctx).Warn("reschedule signal ignored", "next_run_at", req.NextRunAt, "paused", w.carry.Paused)
					return
				}
				_, _ = w.reschedule(ctx, req)
			})
			sel.AddReceive(backfillCh, func(c workflow.ReceiveChannel, _ bool) {
				var req BackfillRequest
				c.Receive(ctx, &req)
				if _, err := w.backfill(ctx, req); err != nil {
					workflow.GetLogger(ctx).Warn("backfill signal ignored", "error", err)
				}
			})
			sel.Select(ctx)
		}
	})
	return nil
}

// run is the schedule's loop: process due ticks, then sleep until the next one or until
// a handler wakes it.
func (w *scheduleWorkflow) run(ctx workflow.Context) error {
	if err := w.load(ctx); err != nil {
		return w.stopIfGone(err)
	}
	if w.in.Carry == nil {
		// A new schedule counts ticks from its creation, and takes its paused flag from the row.
		w.carry.Watermark = w.def.CreatedAt
		w.carry.Paused, w.carry.Note = w.def.Paused, w.def.PauseNote
	}
	for _, r := range w.carry.Running {
		w.watch(ctx, r)
	}
	for {
		// Cleared before reading state: a handler that runs while this iteration waits on an
		// activity sets it again, and the wait below then returns at once.
		w.dirty = false
		if w.reload {
			w.reload = false
			// Ticks already due under the old definition are handled under it first.
			if !w.carry.Paused {
				if _, err := w.processDue(ctx); err != nil {
					return w.stopIfGone(err)
				}
			}
			oldSpec := w.spec.Spec
			if err := w.load(ctx); err != nil {
				return w.stopIfGone(err)
			}
			if !specsEqual(oldSpec, w.spec.Spec) {
				// A changed spec counts ticks from the change on: ticks the new spec puts in
				// the past were never due under the old one.
				if now := workflow.Now(ctx); now.After(w.carry.Watermark) {
					w.carry.Watermark = now
				}
				w.carry.Rescheduled = nil
			}
		}
		if err := w.drainBuffer(ctx); err != nil {
			return w.stopIfGone(err)
		}
		if !w.carry.Paused && len(w.carry.Backfills) > 0 {
			if err := w.processBackfill(ctx); err != nil {
				return w.stopIfGone(err)
			}
		}
		if !w.carry.Paused {
			more, err := w.processDue(ctx)
			if err != nil {
				return w.stopIfGone(err)
			}
			if more || len(w.carry.Backfills) > 0 {
				continue // a long outage or a backfill: keep working through it before sleeping
			}
		}
		next := w.nextTick(ctx)
		if err := w.mirrorNext(ctx, next); err != nil {
			return w.stopIfGone(err)
		}
		if w.shouldContinueAsNew(ctx) {
			return w.continueAsNew(ctx)
		}
		w.events++
		if next == nil {
			workflow.SetCurrentDetails(ctx, w.details(nil))
			if err := workflow.Await(ctx, func() bool { return w.dirty }); err != nil {
				return err
			}
			continue
		}
		fireAt := next.Add(w.spec.JitterFor(w.def.Name, *next))
		workflow.SetCurrentDetails(ctx, w.details(&fireAt))
		wait := fireAt.Sub(workflow.Now(ctx))
		if wait > 0 {
			_, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
				Timeout:      wait,
				TimerOptions: workflow.TimerOptions{Summary: "next fire at " + fireAt.UTC().Format(time.RFC3339)},
			}, func() bool { return w.dirty })
			if err != nil {
				return err
			}
		}
	}
}

func specsEqual(x, y schedulespec.Spec) bool {
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(bx) == string(by)
}

func (w *scheduleWorkflow) stopIfGone(err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == activities.ErrScheduleGone {
		return nil // the schedule was deleted: nothing left to fire
	}
	return err
}

func (w *scheduleWorkflow) load(ctx workflow.Context) error {
	var def activities.ScheduleDefinition
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.LoadSchedule, w.in.ScheduleID).Get(ctx, &def); err != nil {
		return err
	}
	spec, err := schedulespec.Normalize(def.Spec, def.CreatedAt)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("stored spec is invalid: "+err.Error(), "BadSpec", err)
	}
	w.def, w.spec = def, spec
	return nil
}

// nextTick computes the first tick after the watermark. It runs as a side effect so that a
// later change to time zone data or the cron library cannot change a replayed history.
func (w *scheduleWorkflow) nextTick(ctx workflow.Context) *time.Time {
	if w.carry.Paused {
		w.next = nil
		return nil
	}
	if w.carry.Rescheduled != nil {
		next := *w.carry.Rescheduled
		w.next = &next
		return &next
	}
	var next time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		return w.spec.Next(w.carry.Watermark)
	}).Get(&next)
	if next.IsZero() {
		w.next = nil
		return nil
	}
	w.next = &next
	return &next
}

// dueTicks lists the ticks in (watermark, now], at most maxTicksPerRound, as a side effect.
func (w *scheduleWorkflow) dueTicks(ctx workflow.Context, now time.Time) []time.Time {
	var ticks []time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []time.Time
		t := w.carry.Watermark
		for len(out) < maxTicksPerRound {
			n := w.spec.Next(t)
			if n.IsZero() || n.Add(w.spec.JitterFor(w.def.Name, n)).After(now) {
				break
			}
			out = append(out, n)
			t = n
		}
		return out
	}).Get(&ticks)
	return ticks
}

// processDue handles every due tick in time order: on time → fire; late but inside the
// catch-up window → fire as catchup; older → MISSED. It reports whether more remain.
func (w *scheduleWorkflow) processDue(ctx workflow.Context) (bool, error) {
	now := workflow.Now(ctx)
	if w.carry.Rescheduled != nil {
		return false, w.processRescheduled(ctx, now)
	}
	ticks := w.dueTicks(ctx, now)
	if len(ticks) == 0 {
		return false, nil
	}
	var missed []time.Time
	for _, tick := range ticks {
		late := now.Sub(tick.Add(w.spec.JitterFor(w.def.Name, tick)))
		switch {
		case late <= onTimeTolerance:
			if err := w.flushMissed(ctx, &missed); err != nil {
				return false, err
			}
			if _, err := w.fire(ctx, tick, domain.TriggerScheduled, domain.TickKey(w.def.ID, tick), "", nil); err != nil {
				return false, err
			}
		case late <= w.def.CatchupWindow:
			if err := w.flushMissed(ctx, &missed); err != nil {
				return false, err
			}
			if _, err := w.fire(ctx, tick, domain.TriggerCatchup, domain.TickKey(w.def.ID, tick), "", nil); err != nil {
				return false, err
			}
		default:
			missed = append(missed, tick)
			w.carry.Watermark = tick
		}
	}
	if err := w.flushMissed(ctx, &missed); err != nil {
		return false, err
	}
	return len(ticks) == maxTicksPerRound, nil
}

func (w *scheduleWorkflow) flushMissed(ctx workflow.Context, missed *[]time.Time) error {
	if len(*missed) == 0 {
		return nil
	}
	reason := fmt.Sprintf("missed: the scheduler was not running and the tick is older than the catch-up window (%s)", w.def.CatchupWindow)
	if err := w.lockMirror(ctx); err != nil {
		return err
	}
	defer w.unlockMirror()
	next := w.nextAfterWatermark()
	var res activities.MissedResult
	err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RecordMissed, activities.MissedTicks{
		ScheduleID: w.def.ID, Ticks: *missed, Reason: reason, NextRunAt: next,
	}).Get(ctx, &res)
	*missed = nil
	if err != nil {
		return err
	}
	w.mirrored = next
	for _, run := range res.Running {
		w.adoptIfUnwatched(ctx, run, nil)
	}
	return nil
}

// nextAfterWatermark is the tick after the watermark, to mirror as next_run_at. It is only
// ever an activity's argument (never a decision), so it needs no side effect.
func (w *scheduleWorkflow) nextAfterWatermark() *time.Time {
	n := w.spec.Next(w.carry.Watermark)
	if n.IsZero() {
		return nil
	}
	return &n
}

// fire decides what one tick does under the overlap and skip_if_successful policies and
// records it. overlap "" means the schedule's policy.
func (w *scheduleWorkflow) fire(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, overlap domain.Overlap, input json.RawMessage) (TriggerResult, error) {
	if (trigger == domain.TriggerScheduled || trigger == domain.TriggerCatchup) && tick.After(w.carry.Watermark) {
		w.carry.Watermark = tick
	}
	if overlap == "" {
		overlap = w.def.Overlap
	}
	if (trigger == domain.TriggerScheduled || trigger == domain.TriggerCatchup) && w.def.SkipIfSuccessful && !w.carry.LastSuccessAt.IsZero() {
		prev := w.previousTick(ctx, tick)
		if w.carry.LastSuccessAt.After(prev) {
			return w.record(ctx, tick, trigger, key, domain.RunSkipped,
				fmt.Sprintf("skip_if_successful: a run already succeeded at %s", w.carry.LastSuccessAt.UTC().Format(time.RFC3339)), "")
		}
	}
	if len(w.carry.Running) > 0 && w.def.Action.Kind == domain.ActionWorkflow {
		switch overlap {
		case domain.OverlapSkip:
			return w.record(ctx, tick, trigger, key, domain.RunSkipped,
				fmt.Sprintf("overlap skip: run %d is still running", w.carry.Running[0].RunID), "")
		case domain.OverlapBufferOne, domain.OverlapBufferAll, domain.OverlapCancelOther:
			if overlap == "cancel_other" {
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
			w.carry.Buffer = append(w.carry.Buffer, BufferedTick{Tick: tick, Trigger: trigger, Key: key, Input: input, Overlap: overlap})
			if overlap == "cancel_other" {
				w.stopRunning(ctx, false)
			}
			return TriggerResult{Status: "BUFFERED", ScheduledAt: tick}, nil
		case domain.OverlapTerminateOther:
			w.stopRunning(ctx, true)
		}
	}
	return w.start(ctx, tick, trigger, key, input)
}

// processRescheduled fires the rescheduled tick once it is due; natural ticks it replaced
// are recorded SKIPPED with the reason, so none is silently lost (S2).
func (w *scheduleWorkflow) processRescheduled(ctx workflow.Context, now time.Time) error {
	at := *w.carry.Rescheduled
	if at.After(now) {
		return nil
	}
	var replaced []time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []time.Time
		for t := w.spec.Next(w.carry.Watermark); !t.IsZero() && t.Before(at) && len(out) < maxTicksPerRound; t = w.spec.Next(t) {
			out = append(out, t)
		}
		return out
	}).Get(&replaced)
	reason := "rescheduled: the next fire was moved to " + at.UTC().Format(time.RFC3339)
	for _, tick := range replaced {
		w.carry.Watermark = tick
		if _, err := w.record(ctx, tick, domain.TriggerScheduled, domain.TickKey(w.def.ID, tick), domain.RunSkipped, reason, ""); err != nil {
			return err
		}
	}
	w.carry.Rescheduled = nil
	_, err := w.fire(ctx, at, domain.TriggerScheduled, domain.TickKey(w.def.ID, at), "", nil)
	return err
}

// processBackfill fires the next few ticks of the oldest backfill request.
func (w *scheduleWorkflow) processBackfill(ctx workflow.Context) error {
	b := &w.carry.Backfills[0]
	var ticks []time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		var out []time.Time
		for t := w.spec.Next(b.Done); !t.IsZero() && !t.After(b.End) && len(out) < backfillPerRound; t = w.spec.Next(t) {
			out = append(out, t)
		}
		return out
	}).Get(&ticks)
	for _, tick := range ticks {
		if _, err := w.fire(ctx, tick, domain.TriggerBackfill, domain.TickKey(w.def.ID, tick), b.Overlap, nil); err != nil {
			return err
		}
		b.Done = tick
	}
	if len(ticks) < backfillPerRound {
		w.carry.Backfills = w.carry.Backfills[1:]
	}
	return nil
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
// the cancelled run — uncancelled, at full length — and a schedule catching up on a
// backlog would fall further behind with every tick.)
func (w *scheduleWorkflow) supersedeWaiting(ctx workflow.Context, newer time.Time) error {
	// GetVersion only when something is superseded, so other histories carry no marker.
	if !slices.ContainsFunc(w.carry.Buffer, w.cancelsOther) ||
		workflow.GetVersion(ctx, cancelOtherSupersedesChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
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
	return overlap == "cancel_other"
}

func (w *scheduleWorkflow) record(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, status domain.RunStatus, reason, workflowID string) (TriggerResult, error) {
	return w.recordWithInput(ctx, tick, trigger, key, status, reason, workflowID, nil)
}

// recordWithInput records a tick; input is the fire's own input for a run that has to be
// adopted (see adoptIfUnwatched).
func (w *scheduleWorkflow) recordWithInput(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, status domain.RunStatus, reason, workflowID string, input json.RawMessage) (TriggerResult, error) {
	if err := w.lockMirror(ctx); err != nil {
		return TriggerResult{}, err
	}
	defer w.unlockMirror()
	rec := activities.TickRecord{
		ScheduleID: w.def.ID, ScheduledAt: tick, Trigger: trigger, Status: status, Reason: reason,
		IdempotencyKey: key, WorkflowID: workflowID, NextRunAt: w.mirrored,
	}
	if (trigger == domain.TriggerScheduled || trigger == domain.TriggerCatchup) && !w.carry.Paused {
		// The same transaction moves next_run_at past this tick.
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
	w.mirrored = rec.NextRunAt
	if !run.Created {
		// The tick was recorded before. Whatever this attempt meant to do with it (fire it,
		// skip it), the row decides; if it is a run nobody watches, it is adopted.
		w.adoptIfUnwatched(ctx, run, input)
	}
	return TriggerResult{RunID: run.ID, Status: run.Status, Reason: reason, ScheduledAt: run.ScheduledAt, existed: !run.Created}, nil
}

// adoptIfUnwatched starts (idempotently) and watches a RUNNING run this workflow does not
// watch. Such a row was committed by a fire whose answer was lost — a local activity retried
// after its commit, or a workflow task whose worker died before completing it — and the
// retry decided differently or found it "recorded before" (found by the chaos run: such runs
// stayed RUNNING for good, and overlap policies waited on them). input is the fire's input
// when known (nil: the action's own).
func (w *scheduleWorkflow) adoptIfUnwatched(ctx workflow.Context, run activities.RunRecord, input json.RawMessage) {
	if run.Status != domain.RunRunning || w.def.Action.Kind != domain.ActionWorkflow || run.WorkflowID == "" || w.isWatching(run.ID) {
		return
	}
	if workflow.GetVersion(ctx, adoptUnwatchedRunChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return // recorded before the change: replays as it ran
	}
	w.launch(ctx, run.ID, run.WorkflowID, run.ScheduledAt, input)
}

// eventFor is the event appended with a fire: the action's own topic/type/data for an event
// action, a schedule.fired event for a workflow action.
func (w *scheduleWorkflow) eventFor(tick time.Time, trigger domain.Trigger, firedAt time.Time) *domain.Event {
	act := w.def.Action
	if act.Kind == domain.ActionEvent {
		return &domain.Event{Topic: act.Topic, Type: act.Type, Data: act.Data}
	}
	data, _ := json.Marshal(map[string]any{
		"schedule": w.def.Name, "scheduled_at": tick.UTC(), "fired_at": firedAt.UTC(), "trigger": trigger,
		"workflow_type": act.WorkflowType,
	})
	return &domain.Event{Topic: domain.DefaultEventTopic, Type: domain.DefaultEventType, Data: data}
}

// start records a fired run and performs its action.
func (w *scheduleWorkflow) start(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, input json.RawMessage) (TriggerResult, error) {
	if w.def.Action.Kind != domain.ActionWorkflow {
		res, err := w.record(ctx, tick, trigger, key, domain.RunSucceeded, "", "")
		if err == nil && !res.existed {
			w.succeeded(tick)
		}
		return res, err
	}
	workflowID := fmt.Sprintf("schedule/%s/run/%s", w.def.Name, keySuffix(key))
	res, err := w.recordWithInput(ctx, tick, trigger, key, domain.RunRunning, "", workflowID, input)
	if err != nil || res.existed {
		return res, err // recorded before: started and watched then, or adopted by record now
	}
	if status := w.launch(ctx, res.RunID, workflowID, tick, input); status != "" {
		return TriggerResult{RunID: res.RunID, Status: status, ScheduledAt: tick}, nil
	}
	return res, nil
}

// launch starts a recorded run's workflow and watches it. Starting is idempotent: the run's
// workflow id is reused, never started twice. When the start fails the run is finished
// FAILED and launch returns that status ("" otherwise).
func (w *scheduleWorkflow) launch(ctx workflow.Context, runID int64, workflowID string, tick time.Time, input json.RawMessage) domain.RunStatus {
	if input == nil {
		input = w.def.Action.Input
	}
	err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.StartRunWorkflow, activities.StartRun{
		WorkflowID: workflowID, WorkflowType: w.def.Action.WorkflowType, TaskQueue: w.def.Action.TaskQueue,
		Input: input, Schedule: w.def.Name,
	}).Get(ctx, nil)
	if err != nil {
		_ = workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.FinishRun, activities.FinishedRun{
			RunID: runID, Status: domain.RunFailed, Error: "start run workflow: " + err.Error(),
		}).Get(ctx, nil)
		return domain.RunFailed
	}
	r := RunningRun{RunID: runID, WorkflowID: workflowID, ScheduledAt: tick}
	w.carry.Running = append(w.carry.Running, r)
	w.watch(ctx, r)
	return ""
}

func keySuffix(key string) string {
	_, suffix, found := strings.Cut(key, "@")
	if !found {
		return key
	}
	return suffix
}

// watch waits for a run's workflow to close, records its outcome and frees its place.
func (w *scheduleWorkflow) watch(ctx workflow.Context, r RunningRun) {
	workflow.Go(ctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 365 * 24 * time.Hour,
			HeartbeatTimeout:    activities.AwaitRunHeartbeatTimeout,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second},
			Summary:             "await run " + r.WorkflowID,
		})
		var out activities.RunOutcome
		if err := workflow.ExecuteActivity(actx, scheduleActs.AwaitRunWorkflow, r.WorkflowID).Get(ctx, &out); err != nil {
			out = activities.RunOutcome{Status: domain.RunFailed, Error: err.Error()}
		}
		_ = workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.FinishRun, activities.FinishedRun{
			RunID: r.RunID, Status: out.Status, Error: out.Error,
		}).Get(ctx, nil)
		for i, x := range w.carry.Running {
			if x.RunID == r.RunID {
				w.carry.Running = append(w.carry.Running[:i], w.carry.Running[i+1:]...)
				break
			}
		}
		if out.Status == domain.RunSucceeded {
			w.succeeded(r.ScheduledAt)
		}
		w.dirty = true
	})
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

// drainBuffer starts buffered ticks once nothing is running.
func (w *scheduleWorkflow) drainBuffer(ctx workflow.Context) error {
	for len(w.carry.Buffer) > 0 && len(w.carry.Running) == 0 {
		b := w.carry.Buffer[0]
		w.carry.Buffer = w.carry.Buffer[1:]
		if _, err := w.start(ctx, b.Tick, b.Trigger, b.Key, b.Input); err != nil {
			return err
		}
	}
	return nil
}

func (w *scheduleWorkflow) stopRunning(ctx workflow.Context, terminate bool) {
	for _, r := range w.carry.Running {
		_ = workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.StopRunWorkflow, activities.StopRun{
			WorkflowID: r.WorkflowID, Terminate: terminate, Reason: "overlap policy of schedule " + w.def.Name,
		}).Get(ctx, nil)
	}
}

// mirrorNext writes next_run_at when it changed.
func (w *scheduleWorkflow) mirrorNext(ctx workflow.Context, next *time.Time) error {
	if timesEqual(next, w.mirrored) {
		return nil
	}
	if err := w.lockMirror(ctx); err != nil {
		return err
	}
	defer w.unlockMirror()
	if w.dirty || timesEqual(next, w.mirrored) {
		return nil // a handler changed the state meanwhile: the loop goes round again
	}
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorNextRun, activities.NextRun{ScheduleID: w.def.ID, NextRunAt: next}).Get(ctx, nil); err != nil {
		return err
	}
	w.mirrored = next
	return nil
}

func (w *scheduleWorkflow) lockMirror(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return !w.mirrorBusy }); err != nil {
		return err
	}
	w.mirrorBusy = true
	return nil
}

func (w *scheduleWorkflow) unlockMirror() { w.mirrorBusy = false }

func timesEqual(x, y *time.Time) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return x.Equal(*y)
}

func (w *scheduleWorkflow) pause(ctx workflow.Context, req PauseRequest) (ScheduleDescription, error) {
	if err := w.lockMirror(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	defer w.unlockMirror()
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorPaused, activities.PausedState{
		ScheduleID: w.in.ScheduleID, Paused: true, Note: req.Note,
	}).Get(ctx, nil); err != nil {
		return ScheduleDescription{}, err
	}
	// Pausing drops a pending reschedule: a paused schedule catches nothing up.
	w.carry.Paused, w.carry.Note, w.mirrored, w.carry.Rescheduled = true, req.Note, nil, nil
	w.dirty = true
	return w.describe(), nil
}

func (w *scheduleWorkflow) resume(ctx workflow.Context) (ScheduleDescription, error) {
	if err := w.lockMirror(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	defer w.unlockMirror()
	if !w.carry.Paused {
		return w.describe(), nil
	}
	// The paused time is not caught up: ticks count again from now.
	now := workflow.Now(ctx)
	var next time.Time
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return w.spec.Next(now) }).Get(&next)
	var nextPtr *time.Time
	if !next.IsZero() {
		nextPtr = &next
	}
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorPaused, activities.PausedState{
		ScheduleID: w.in.ScheduleID, Paused: false, NextRunAt: nextPtr,
	}).Get(ctx, nil); err != nil {
		return ScheduleDescription{}, err
	}
	if now.After(w.carry.Watermark) {
		w.carry.Watermark = now
	}
	w.carry.Paused, w.carry.Note, w.mirrored = false, "", nextPtr
	w.dirty = true
	return w.describe(), nil
}

func (w *scheduleWorkflow) trigger(ctx workflow.Context, req TriggerRequest) (TriggerResult, error) {
	if w.spec == nil {
		if err := workflow.Await(ctx, func() bool { return w.spec != nil }); err != nil {
			return TriggerResult{}, err
		}
	}
	if req.RequestID == "" {
		_ = workflow.SideEffect(ctx, func(workflow.Context) any {
			return fmt.Sprintf("signal-%d", time.Now().UnixNano())
		}).Get(&req.RequestID)
	}
	now := workflow.Now(ctx)
	res, err := w.fire(ctx, now, domain.TriggerManual, domain.ManualKey(w.def.ID, req.RequestID), req.Overlap, req.Input)
	w.dirty = true
	return res, err
}

func (w *scheduleWorkflow) reschedule(ctx workflow.Context, req RescheduleRequest) (ScheduleDescription, error) {
	at := req.NextRunAt.UTC()
	if err := w.lockMirror(ctx); err != nil {
		return ScheduleDescription{}, err
	}
	defer w.unlockMirror()
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorNextRun, activities.NextRun{
		ScheduleID: w.in.ScheduleID, NextRunAt: &at,
	}).Get(ctx, nil); err != nil {
		return ScheduleDescription{}, err
	}
	w.carry.Rescheduled, w.mirrored, w.next = &at, &at, &at
	w.dirty = true
	return w.describe(), nil
}

func (w *scheduleWorkflow) backfill(ctx workflow.Context, req BackfillRequest) (BackfillResult, error) {
	if w.spec == nil {
		if err := workflow.Await(ctx, func() bool { return w.spec != nil }); err != nil {
			return BackfillResult{}, err
		}
	}
	start, end := req.Start.UTC(), req.End.UTC()
	var n int
	_ = workflow.SideEffect(ctx, func(workflow.Context) any {
		count := 0
		for t := w.spec.Next(start.Add(-time.Nanosecond)); !t.IsZero() && !t.After(end) && count <= maxBackfillTicks; t = w.spec.Next(t) {
			count++
		}
		return count
	}).Get(&n)
	if n > maxBackfillTicks {
		return BackfillResult{}, temporal.NewApplicationError(fmt.Sprintf("the range holds more than %d ticks", maxBackfillTicks), ErrBackfillTooLarge)
	}
	if n > 0 {
		w.carry.Backfills = append(w.carry.Backfills, Backfill{Done: start.Add(-time.Nanosecond), End: end, Overlap: req.Overlap})
		w.dirty = true
	}
	return BackfillResult{Ticks: n}, nil
}

func (w *scheduleWorkflow) describe() ScheduleDescription {
	return ScheduleDescription{
		Name: w.in.Name, Paused: w.carry.Paused, Note: w.carry.Note, Watermark: w.carry.Watermark,
		NextFireAt: w.next, Running: append([]RunningRun{}, w.carry.Running...), Buffered: len(w.carry.Buffer),
		Backfills: len(w.carry.Backfills), Version: w.def.Version,
	}
}

func (w *scheduleWorkflow) details(fireAt *time.Time) string {
	switch {
	case w.carry.Paused:
		return fmt.Sprintf("**paused** %s", w.carry.Note)
	case fireAt == nil:
		return "no further ticks (end_at reached)"
	}
	return fmt.Sprintf("next fire at %s · running %d · buffered %d", fireAt.UTC().Format(time.RFC3339), len(w.carry.Running), len(w.carry.Buffer))
}

func (w *scheduleWorkflow) shouldContinueAsNew(ctx workflow.Context) bool {
	limit := continueAsNewAfter
	if w.carry.ContinueAsNewAfter > 0 {
		limit = w.carry.ContinueAsNewAfter
	}
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested() || w.events >= limit
}

// continueAsNew hands the watermark, buffer and running runs to a fresh run, after the
// in-flight handlers finish and no signal is left unread.
func (w *scheduleWorkflow) continueAsNew(ctx workflow.Context) error {
	signalsRead := func() bool {
		for _, name := range []string{SchedulePause, ScheduleResume, ScheduleTrigger, ScheduleRefresh, ScheduleReschedule, ScheduleBackfill} {
			if workflow.GetSignalChannel(ctx, name).Len() > 0 {
				return false
			}
		}
		return true
	}
	if err := workflow.Await(ctx, func() bool {
		return workflow.AllHandlersFinished(ctx) && w.inFlight == 0 && signalsRead()
	}); err != nil {
		return err
	}
	carry := w.carry
	return workflow.NewContinueAsNewError(ctx, ScheduleWorkflowType, ScheduleInput{ScheduleID: w.in.ScheduleID, Name: w.in.Name, Carry: &carry})
}
