package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// Scheduling constants.
const (
	// maxTicksPerRound bounds the ticks handled between two waits, so a long outage is
	// worked through in slices and the workflow stays responsive.
	maxTicksPerRound = 500
	// maxBuffer caps buffered ticks (as Temporal Schedules do); beyond it ticks are SKIPPED.
	maxBuffer = 1000
	// backfillPerRound is how many backfill ticks are fired between two looks at new ticks
	// and handlers, as Temporal Schedules do.
	backfillPerRound = 10
	// continueAsNewAfter bounds history even if the server never suggests continue-as-new.
	continueAsNewAfter = 500
	// watchDeferMax is how long after its start a deferred watch begins at the latest.
	watchDeferMax = 30 * time.Second
	// restLinger is how long a workflow with nothing in flight waits after its last command
	// before it rests: a burst of commands (pause, then resume; a client's retries) is
	// served by one run rather than a run each.
	restLinger = time.Minute
)

var scheduleActs *activities.ScheduleActivities

// scheduleWorkflow is one schedule's runtime state; its workflow is the single writer, and
// its loop the one place that decides a fire (schedule_inbox.go).
type scheduleWorkflow struct {
	in    ScheduleInput
	def   activities.ScheduleDefinition
	spec  *schedulespec.Compiled
	carry ScheduleCarry
	// inbox holds the commands and run ends the loop has still to take, in the order they
	// arrived; tookArrival: the loop took one in this run (see branchTaken).
	inbox       []*arrival
	tookArrival bool
	// legacy is the handlers' state of a run pinned before scheduleOneWriterChange (nil in
	// a run of the new branch).
	legacy   *concurrentHandlers
	mirrored *time.Time   // next_run_at last written to Postgres
	next     *time.Time   // next nominal tick, for describe
	planned  *plannedTick // the tick after the watermark, as a record answered it
	events   int          // history growth proxy
	work     workSpan     // records since the loop last waited (see yieldIfSpent)
	// ready: the run has taken its schedule over (see awaitTakeover).
	ready bool
	// busyUntil is when the workflow may rest at the earliest: restLinger after its start
	// and after the last command it served.
	busyUntil time.Time
	// Resident runs (schedule_resident.go): mayStayOpen, the run takes
	// scheduleResidentChange's new branch; restedInPlace, its rest was completed in place and
	// it stays open (the first look at rest); resting, the last look while it is at rest (nil
	// while it holds the schedule); wakeAsked, the planner's wake reached it; tookResident,
	// it stayed open at rest in this run (see branchTaken).
	mayStayOpen   bool
	restedInPlace *activities.RestLook
	resting       *activities.RestLook
	wakeAsked     bool
	tookResident  bool
}

// ScheduleWorkflow fires one schedule's ticks exactly once each: it sleeps on a durable
// timer until the next tick, records every fire through one Postgres transaction, and
// answers pause / resume / trigger / refresh from the API and other services.
func ScheduleWorkflow(ctx workflow.Context, in ScheduleInput) error {
	pinChanges(ctx, ScheduleWorkflowType)
	w := &scheduleWorkflow{in: in, legacy: legacyHandlers(ctx), mayStayOpen: mayStayOpen(ctx)}
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

// setup registers the describe query and every command twice: as an update (answered,
// its validator refusing bad input before anything is recorded) and as a signal (fire and
// forget, for other services). Both doors judge a command by the same rules
// (schedule_commands.go), with the workflow's clock, and put it in the loop's inbox, where
// the loop decides it with the same function (schedule_ops.go).
func (w *scheduleWorkflow) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, ScheduleDescribe, func() (ScheduleDescription, error) {
		return w.describe(), nil
	}); err != nil {
		return fmt.Errorf("register describe: %w", err)
	}
	regs := []error{
		registerCommand(ctx, w, SchedulePause, func(_ workflow.Context, req PauseRequest) *Refusal {
			return CheckPause(req)
		}, func(ctx workflow.Context, req PauseRequest) (ScheduleDescription, error) {
			return w.pause(ctx, req, domain.DoorUpdate)
		}),
		registerCommand(ctx, w, ScheduleResume, func(_ workflow.Context, req ResumeRequest) *Refusal {
			return CheckResume(req)
		}, func(ctx workflow.Context, req ResumeRequest) (ScheduleDescription, error) {
			return w.resume(ctx, req, domain.DoorUpdate)
		}),
		registerCommand(ctx, w, ScheduleTrigger, func(_ workflow.Context, req TriggerRequest) *Refusal {
			return CheckTrigger(req, w.target())
		}, w.trigger),
		workflow.SetUpdateHandler(ctx, ScheduleRefresh, func(ctx workflow.Context) (ScheduleDescription, error) {
			w.served(ctx)
			return decideCommand(ctx, w, ScheduleRefresh, w.refresh)
		}),
		registerCommand(ctx, w, ScheduleReschedule, func(ctx workflow.Context, req RescheduleRequest) *Refusal {
			return CheckReschedule(req, w.target(), workflow.Now(ctx))
		}, w.reschedule),
		registerCommand(ctx, w, ScheduleBackfill, func(ctx workflow.Context, req BackfillRequest) *Refusal {
			t := w.target()
			t.PendingBackfills += w.queued(ScheduleBackfill) // asked, not yet taken by the loop
			_, refusal := CheckBackfill(req, t, workflow.Now(ctx))
			return refusal
		}, w.backfill),
	}
	if err := errors.Join(regs...); err != nil {
		return fmt.Errorf("register updates: %w", err)
	}
	workflow.Go(ctx, w.handleSignals)
	return nil
}

// registerCommand registers a command as an update whose payload is received raw and read
// by DecodeCommand, as a signal's is, so that an update, a signal and an HTTP request with
// the same bad payload get the same refusal. The validator judges it (check) before
// anything is recorded; the loop, deciding it (run), judges it again with the definition
// loaded and every command before it applied.
func registerCommand[Req, Res any](ctx workflow.Context, w *scheduleWorkflow, name string, check func(workflow.Context, Req) *Refusal,
	run func(workflow.Context, Req) (Res, error)) error {
	decode := func(raw json.RawMessage) (Req, *Refusal) {
		var req Req
		return req, DecodeCommand(name, raw, &req)
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, name, func(ctx workflow.Context, raw json.RawMessage) (Res, error) {
		w.served(ctx)
		req, refusal := decode(raw)
		if refusal != nil {
			var zero Res
			return zero, refusal.ApplicationError()
		}
		return decideCommand(ctx, w, name, func(ctx workflow.Context) (Res, error) { return run(ctx, req) })
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, raw json.RawMessage) error {
		req, refusal := decode(raw)
		if refusal == nil {
			refusal = check(ctx, req)
		}
		return refusalError(refusal)
	}})
}

// decideCommand has the loop decide an update's command and returns the loop's answer. (A
// run pinned before scheduleOneWriterChange decides it in the update's handler.)
func decideCommand[Res any](ctx workflow.Context, w *scheduleWorkflow, command string, run func(workflow.Context) (Res, error)) (Res, error) {
	if w.legacy != nil {
		return run(ctx)
	}
	var res Res
	err := w.askLoop(ctx, command, func(ctx workflow.Context) (err error) {
		res, err = run(ctx)
		return err
	})
	return res, err
}

// served notes a command: the run lingers restLinger after it before it rests.
func (w *scheduleWorkflow) served(ctx workflow.Context) {
	w.busyUntil = workflow.Now(ctx).Add(restLinger)
	w.handlerChanged()
}

// target is what the command rules read of this schedule (Spec nil and Action "" until the
// definition is loaded: the loop judges the command again when it decides it).
func (w *scheduleWorkflow) target() CommandTarget {
	t := CommandTarget{Paused: w.carry.Paused, PendingBackfills: len(w.carry.Backfills)}
	if w.ready {
		t.Spec = w.spec
		t.Action, t.CreatedAt = w.def.Action.Kind, w.def.CreatedAt
	}
	return t
}

// refusalError is a refusal as an update or handler returns it (nil for none).
func refusalError(r *Refusal) error {
	if r == nil {
		return nil
	}
	return r.ApplicationError()
}

// handleSignals receives the commands other services send as signals and puts each in the
// loop's inbox as it comes; the loop decodes it, decides it, and records a refusal. (A run
// pinned before scheduleOneWriterChange serves them here, one at a time, each handler
// counting itself in flight so that continue-as-new waits for the one mid-way.)
func (w *scheduleWorkflow) handleSignals(ctx workflow.Context) {
	commands := w.signalCommands()
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(workflow.GetSignalChannel(ctx, ScheduleWake), func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			w.wakeAsked = true // the planner woke a resident run at rest (schedule_resident.go)
		})
		for _, cmd := range commands {
			sel.AddReceive(workflow.GetSignalChannel(ctx, cmd.name), func(c workflow.ReceiveChannel, _ bool) {
				if w.legacy != nil {
					defer w.legacy.handlers.track()()
				}
				var raw json.RawMessage
				c.Receive(ctx, &raw)
				w.served(ctx)
				if w.legacy != nil {
					w.serveSignal(ctx, cmd, raw)
					return
				}
				w.arrive(ctx, &arrival{command: cmd.name, decide: func(ctx workflow.Context) error {
					w.serveSignal(ctx, cmd, raw)
					return nil // a signal has no caller: its failure is recorded by serveSignal
				}})
			})
		}
		sel.Select(ctx)
	}
}

// serveSignal decides a command signal and leaves the record of one that did nothing.
func (w *scheduleWorkflow) serveSignal(ctx workflow.Context, cmd signalCommand, raw json.RawMessage) {
	if err := cmd.run(ctx, raw); err != nil {
		w.signalFailed(ctx, cmd.name, raw, err)
	}
}

// signalCommand decodes one command signal's payload and runs its handler.
type signalCommand struct {
	name string
	run  func(ctx workflow.Context, raw json.RawMessage) error
}

// signalCommands are the commands a signal may carry, in a fixed order (the order picks
// among waiting signals). A payload is received raw and decoded here, so that one that does
// not decode is refused and recorded like any other bad input instead of being dropped by
// the SDK unseen.
func (w *scheduleWorkflow) signalCommands() []signalCommand {
	return []signalCommand{
		{SchedulePause, func(ctx workflow.Context, raw json.RawMessage) error {
			var req PauseRequest
			if r := DecodeCommand(SchedulePause, raw, &req); r != nil {
				return r
			}
			_, err := w.pause(ctx, req, domain.DoorSignal)
			return err
		}},
		{ScheduleResume, func(ctx workflow.Context, raw json.RawMessage) error {
			var req ResumeRequest
			if r := DecodeCommand(ScheduleResume, raw, &req); r != nil {
				return r
			}
			_, err := w.resume(ctx, req, domain.DoorSignal)
			return err
		}},
		{ScheduleTrigger, func(ctx workflow.Context, raw json.RawMessage) error {
			var req TriggerRequest
			if r := DecodeCommand(ScheduleTrigger, raw, &req); r != nil {
				return r
			}
			_, err := w.trigger(ctx, req)
			return err
		}},
		{ScheduleRefresh, func(ctx workflow.Context, _ json.RawMessage) error {
			_, err := w.refresh(ctx)
			return err
		}},
		{ScheduleReschedule, func(ctx workflow.Context, raw json.RawMessage) error {
			var req RescheduleRequest
			if r := DecodeCommand(ScheduleReschedule, raw, &req); r != nil {
				return r
			}
			_, err := w.reschedule(ctx, req)
			return err
		}},
		{ScheduleBackfill, func(ctx workflow.Context, raw json.RawMessage) error {
			var req BackfillRequest
			if r := DecodeCommand(ScheduleBackfill, raw, &req); r != nil {
				return r
			}
			_, err := w.backfill(ctx, req)
			return err
		}},
	}
}

// signalFailed leaves the record an operator can find of a command signal that did
// nothing: a refused one (bad input) is logged, counted and listed in the schedule's view
// (RecordRefusal); any other failure is logged.
func (w *scheduleWorkflow) signalFailed(ctx workflow.Context, command string, raw json.RawMessage, err error) {
	logger := workflow.GetLogger(ctx)
	refusal, ok := err.(*Refusal)
	if !ok {
		refusal = RefusalOf(err)
	}
	if refusal == nil {
		logger.Warn("schedule command signal failed", "command", command, "error", err)
		return
	}
	logger.Warn("schedule command signal refused", "command", command, "field", refusal.Field, "reason", refusal.Reason)
	payload := string(raw)
	if len(payload) > maxRefusedPayload {
		payload = payload[:maxRefusedPayload]
	}
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RecordRefusal, activities.RefusedCommand{
		ScheduleID: w.in.ScheduleID, Command: command, Door: "signal", Field: refusal.Field, Reason: refusal.Reason,
		Payload: payload, RefusedAt: workflow.Now(ctx),
	}).Get(ctx, nil); err != nil {
		logger.Warn("record a refused signal", "command", command, "error", err)
	}
}

// maxRefusedPayload is how much of a refused signal's payload its record keeps.
const maxRefusedPayload = 2000

// awaitTakeover waits until the run has taken its schedule over (begin): a command may
// arrive first — it started the run, with update- or signal-with-start — and must act on
// the schedule's state, not on an empty one begin is about to replace.
func (w *scheduleWorkflow) awaitTakeover(ctx workflow.Context) error {
	if w.ready {
		return nil
	}
	return workflow.Await(ctx, func() bool { return w.ready })
}

// run is the schedule's loop, the one place a fire is decided: take what arrived (commands,
// run ends) in order, with the ticks due before each; start what waits and fire what is
// due; then rest, or sleep until the next tick or until something arrives.
func (w *scheduleWorkflow) run(ctx workflow.Context) error {
	if w.in.AtRest {
		// Continued as new at rest: the schedule is the planner's until something reaches the run.
		if end, err := w.stayAtRest(ctx, nil); end || err != nil {
			return w.stopIfGone(err)
		}
	}
	if err := w.begin(ctx); err != nil {
		return w.stopIfGone(err)
	}
	for {
		if w.legacy != nil {
			// Cleared before reading state: a handler that runs while this iteration waits on
			// an activity sets it again, and the wait below then returns at once.
			w.legacy.dirty = false
		}
		w.watchDue(ctx)
		more, err := w.takeInbox(ctx)
		if err != nil {
			return w.stopIfGone(err)
		}
		if !more {
			if err := w.reloadIfAsked(ctx); err != nil {
				return w.stopIfGone(err)
			}
			if more, err = w.processWaiting(ctx); err != nil {
				return w.stopIfGone(err)
			}
		}
		if more {
			// A long outage or a backfill: keep working through it before sleeping,
			// committing the work every workflowTaskBudget.
			if err := w.yieldIfSpent(ctx); err != nil {
				return err
			}
			continue
		}
		next := w.nextTick(ctx)
		if err := w.mirrorNextFire(ctx, next); err != nil {
			return w.stopIfGone(err)
		}
		if rested, err := w.restIfIdle(ctx, next); rested || err != nil {
			if err != nil || w.restedInPlace == nil {
				return w.stopIfGone(err)
			}
			// A resident run stays open at rest until something reaches it, then takes the
			// schedule over again.
			look := w.restedInPlace
			w.restedInPlace = nil
			if end, err := w.stayAtRest(ctx, look); end || err != nil {
				return w.stopIfGone(err)
			}
			if err := w.begin(ctx); err != nil {
				return w.stopIfGone(err)
			}
			continue
		}
		if w.shouldContinueAsNew(ctx) {
			ready, err := w.readyToContinueAsNew(ctx)
			if err != nil {
				return err
			}
			if ready {
				return w.continueAsNew(ctx)
			}
			continue // something arrived: take it first
		}
		w.events++
		if err := w.sleep(ctx, next); err != nil {
			return err
		}
	}
}

// begin takes the schedule over from its row (TakeOwnership: from now on this run is its
// single writer, and the planner leaves it alone) and resumes watching the runs in flight.
// A run started afresh — woken by the planner, or by a command — takes every piece of
// runtime state from the row; one continued as new carries its own.
func (w *scheduleWorkflow) begin(ctx workflow.Context) error {
	var t activities.Takeover
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.TakeOwnership, activities.OwnershipRequest{
		ScheduleID: w.in.ScheduleID, Name: w.in.Name, RunID: workflow.GetInfo(ctx).WorkflowExecution.RunID,
	}).Get(ctx, &t); err != nil {
		return err
	}
	if err := w.setDefinition(t.Definition); err != nil {
		return err
	}
	w.in.ScheduleID = t.Definition.ID
	if w.in.Carry == nil {
		keep := w.carry.ContinueAsNewAfter // a tuning a resident run keeps across its takeovers
		w.carry = carryOf(t)
		w.carry.ContinueAsNewAfter = keep
		w.ensureStarted(ctx)
	}
	for _, r := range w.carry.Running {
		if r.WatchFrom == nil { // a deferred watch begins in the loop (watchDue)
			w.watch(ctx, r)
		}
	}
	w.ready = true
	if !w.in.Woken {
		// A run a command started lingers restLinger before it rests: that command may be
		// the first of a few (a pause, then a resume; a client's retry).
		w.busyUntil = workflow.Now(ctx).Add(restLinger)
	}
	return nil
}

// ensureStarted starts, idempotently, the targets of the runs in flight a run took over from
// the row: the planner starts an armed fire's target after its commit, and a planner that
// died in between left the run RUNNING with no target (the start reuses the run's workflow
// id, so a target that exists, or ran, is never started twice).
func (w *scheduleWorkflow) ensureStarted(ctx workflow.Context) {
	if !w.def.Action.StartsWorkflow() {
		return
	}
	for _, r := range w.carry.Running {
		start := activities.RunStart(w.def.Name, w.def.Action, w.def.Retry)
		start.WorkflowID, start.StartAt = r.WorkflowID, r.WatchFrom
		if w.def.Action.Kind == domain.ActionHTTP {
			start.RunID = r.RunID // its delivery reads the run's tick key
		}
		if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.StartRunWorkflow, start).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("start a run taken over", "workflow_id", r.WorkflowID, "error", err)
		}
	}
}

// carryOf is the state a run taking its schedule over from the row goes on from.
func carryOf(t activities.Takeover) ScheduleCarry {
	c := ScheduleCarry{
		Watermark: t.Watermark, Paused: t.Definition.Paused, Note: t.Definition.PauseNote,
		LastSuccessAt: t.LastSuccessAt, Rescheduled: t.Rescheduled,
	}
	for _, b := range t.Backfills {
		c.Backfills = append(c.Backfills, Backfill{Done: b.Done, End: b.End, Overlap: b.Overlap})
	}
	for _, r := range t.Running {
		// An armed fire's run is watched once its target starts (see watchDue).
		c.Running = append(c.Running, RunningRun{RunID: r.RunID, WorkflowID: r.WorkflowID, ScheduledAt: r.ScheduledAt, WatchFrom: r.StartAt})
	}
	for _, b := range t.Buffered {
		c.Buffer = append(c.Buffer, BufferedTick{Tick: b.Tick, Trigger: b.Trigger, Key: b.Key})
	}
	if len(t.Armed) > 0 {
		fires := make([]ArmedTick, len(t.Armed))
		for i, f := range t.Armed {
			fires[i] = ArmedTick{Tick: f.Tick, FireAt: f.FireAt}
		}
		c.Armed = armedFires(fires, t.ArmedBefore)
		if last := t.Armed[len(t.Armed)-1]; last.WorkflowID != "" {
			c.Armed.WorkflowID, c.Armed.RunID = last.WorkflowID, last.RunID
		}
	}
	return c
}

// restIfIdle hands the schedule to the planner and ends the run when nothing is in flight
// and the next fire is one the planner arms, or far off (scheduleplan.Schedule.MayRest):
// the run asks to rest (RequestRest) and ends; the planner completes the handover once
// Temporal says the run has ended, so a command that reached it meanwhile is not lost.
func (w *scheduleWorkflow) restIfIdle(ctx workflow.Context, next *time.Time) (bool, error) {
	now := workflow.Now(ctx)
	if now.Before(w.busyUntil) || !w.idle(ctx) {
		return false, nil
	}
	var fireAt *time.Time
	if next != nil {
		f := next.Add(w.spec.JitterFor(w.def.Name, *next))
		fireAt = &f
	}
	if !w.planFacts().MayRest(now, fireAt) {
		return false, nil
	}
	// A wake is for a run at rest: one that reached this run while it held the schedule is moot.
	w.wakeAsked = false
	var rested activities.Rested
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.RequestRest, activities.RestRequest{
		ScheduleID: w.in.ScheduleID, RunID: workflow.GetInfo(ctx).WorkflowExecution.RunID, Watermark: w.carry.Watermark,
		LastSuccessAt: w.carry.LastSuccessAt, Rescheduled: w.carry.Rescheduled, StayOpen: w.mayStayOpen, At: now,
	}).Get(ctx, &rested); err != nil {
		return false, err
	}
	if rested.InPlace {
		// Rested and still open: what arrived meanwhile makes it take the schedule over again.
		w.restedInPlace = rested.Look
		return true, nil
	}
	if !w.idle(ctx) {
		// A command arrived while the request was written: serve it. (The planner finds this
		// run still open and leaves the schedule with it; the next rest asks again.)
		return false, nil
	}
	return true, nil
}

// idle reports whether nothing is in flight: no run, no buffered tick, no backfill, nothing
// in the inbox, no handler mid-way, no command unread.
func (w *scheduleWorkflow) idle(ctx workflow.Context) bool {
	if len(w.carry.Running) > 0 || len(w.carry.Buffer) > 0 || len(w.carry.Backfills) > 0 || len(w.inbox) > 0 ||
		w.legacyBusy() || !workflow.AllHandlersFinished(ctx) {
		return false
	}
	for _, name := range commandNames {
		if workflow.GetSignalChannel(ctx, name).Len() > 0 {
			return false
		}
	}
	return true
}

// commandNames are the signals a schedule's workflow serves.
var commandNames = []string{SchedulePause, ScheduleResume, ScheduleTrigger, ScheduleRefresh, ScheduleReschedule, ScheduleBackfill}

// planFacts is the schedule as the plan's decisions read it: the one place the workflow
// builds it, with one count of the runs in flight (every run the loop started is in
// carry.Running before it decides anything else).
func (w *scheduleWorkflow) planFacts() scheduleplan.Schedule {
	running, waiting := len(w.carry.Running)+w.startingElsewhere(), len(w.carry.Buffer)
	return scheduleplan.Schedule{
		Name: w.def.Name, Spec: w.spec, Action: w.def.Action, Overlap: w.def.Overlap, SkipIfSuccessful: w.def.SkipIfSuccessful,
		Paused: w.carry.Paused, Watermark: w.carry.Watermark, Rescheduled: w.carry.Rescheduled,
		Backfilling: len(w.carry.Backfills) > 0, InFlight: running > 0 || waiting > 0,
		MaxConcurrent: w.def.MaxConcurrent, Running: running, Waiting: waiting,
	}
}

// reloadDefinition takes the definition the row holds now: the armed fires of the old one
// are retracted, and a changed spec counts ticks from the change on (ticks it puts in the
// past were never due under the old one). The ticks due before the refresh came were
// decided under the old definition first.
func (w *scheduleWorkflow) reloadDefinition(ctx workflow.Context) error {
	oldSpec := w.spec.Spec
	if err := w.load(ctx); err != nil {
		return err
	}
	if err := w.retractArmedAfterReload(ctx); err != nil {
		return err
	}
	if !specsEqual(oldSpec, w.spec.Spec) {
		w.carry.Watermark = w.watermarkForNewSpec(ctx)
		w.carry.Rescheduled = nil
	}
	return nil
}

// processWaiting starts what waits (the buffer, backfill ticks) and handles the ticks due
// now; it reports whether work remains before the loop may sleep.
func (w *scheduleWorkflow) processWaiting(ctx workflow.Context) (more bool, err error) {
	if err := w.drainBuffer(ctx); err != nil {
		return false, err
	}
	if w.backfilling() {
		if err := w.processBackfill(ctx); err != nil {
			return false, err
		}
	}
	if !w.carry.Paused {
		if more, err = w.processDue(ctx, workflow.Now(ctx)); err != nil {
			return false, err
		}
	}
	return more || w.backfilling(), nil
}

// mirrorNextFire writes next_run_at: the next tick, or the first armed fire not yet
// visible, which is still the next one.
func (w *scheduleWorkflow) mirrorNextFire(ctx workflow.Context, next *time.Time) error {
	mirrored := next
	if a := w.pendingArmed(workflow.Now(ctx)); a != nil {
		mirrored = &a.Tick
		w.next = &a.Tick
	}
	return w.mirrorNext(ctx, mirrored)
}

// sleep waits on a durable timer whose summary says why — the next fire, the start of a
// deferred watch, or the rest after the last command — or until something arrives.
func (w *scheduleWorkflow) sleep(ctx workflow.Context, next *time.Time) error {
	woken := func() bool { return len(w.inbox) > 0 || w.changedMeanwhile() }
	var wakeAt time.Time
	var summary string
	if next == nil {
		workflow.SetCurrentDetails(ctx, w.details(nil))
	} else {
		fireAt := next.Add(w.spec.JitterFor(w.def.Name, *next))
		workflow.SetCurrentDetails(ctx, w.details(&fireAt))
		wakeAt, summary = fireAt, "next fire at "+fireAt.UTC().Format(time.RFC3339)
	}
	if watch := w.watchDeadline(); !watch.IsZero() && (wakeAt.IsZero() || watch.Before(wakeAt)) {
		wakeAt, summary = watch, "watch the runs started since "+watch.Add(-watchDeferMax).UTC().Format(time.RFC3339)
	}
	if rest := w.busyUntil; rest.After(workflow.Now(ctx)) && (wakeAt.IsZero() || rest.Before(wakeAt)) {
		wakeAt, summary = rest, "rest unless a command comes first"
	}
	if wakeAt.IsZero() {
		return workflow.Await(ctx, woken)
	}
	w.work = workSpan{} // the wait ends this workflow task
	wait := wakeAt.Sub(workflow.Now(ctx))
	if wait <= 0 {
		return nil
	}
	_, err := workflow.AwaitWithOptions(ctx, workflow.AwaitOptions{
		Timeout:      wait,
		TimerOptions: workflow.TimerOptions{Summary: summary},
	}, woken)
	return err
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

// plannedTick is a fact the history holds: the spec's tick after `after` is `next` (nil:
// none). A record that moves next_run_at past its tick computes that tick anyway; its
// answer returns it (RunRecord.NextRunAt), so the loop knows the tick after its watermark
// without a side effect of its own, and replays read the same answer.
type plannedTick struct {
	after time.Time
	next  *time.Time
}

// remember keeps what a record answered about the tick after `after`.
func (w *scheduleWorkflow) remember(after time.Time, next *time.Time) {
	w.planned = &plannedTick{after: after, next: next}
}

// plannedNext returns the tick after the watermark when a record answered it; known is false
// when it has to be computed (the watermark moved otherwise, or the spec was reloaded).
func (w *scheduleWorkflow) plannedNext() (next *time.Time, known bool) {
	if w.planned == nil || !w.planned.after.Equal(w.carry.Watermark) {
		return nil, false
	}
	return w.planned.next, true
}

func (w *scheduleWorkflow) load(ctx workflow.Context) error {
	var def activities.ScheduleDefinition
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.LoadSchedule, w.in.ScheduleID).Get(ctx, &def); err != nil {
		return err
	}
	return w.setDefinition(def)
}

// setDefinition takes a definition read from the row.
func (w *scheduleWorkflow) setDefinition(def activities.ScheduleDefinition) error {
	spec, err := schedulespec.Normalize(def.Spec, def.CreatedAt)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("stored spec is invalid: "+err.Error(), "BadSpec", err)
	}
	w.def, w.spec = def, spec
	w.planned = nil // answered under the definition this load replaces
	return nil
}

// nextTick is the first tick after the watermark: the one the last record answered, else
// computed in a side effect, so that a later change to time zone data or the cron library
// cannot change a replayed history.
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
	if next, known := w.plannedNext(); known {
		w.next = next
		return next
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

// mirrorNext writes next_run_at when it changed.
func (w *scheduleWorkflow) mirrorNext(ctx workflow.Context, next *time.Time) error {
	if timesEqual(next, w.mirrored) {
		return nil
	}
	unlock, err := w.lockMirror(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if w.changedMeanwhile() || timesEqual(next, w.mirrored) {
		return nil // a handler changed the state meanwhile: the loop goes round again
	}
	if err := workflow.ExecuteLocalActivity(localCtx(ctx), scheduleActs.MirrorNextRun, activities.NextRun{ScheduleID: w.def.ID, NextRunAt: next}).Get(ctx, nil); err != nil {
		return err
	}
	w.mirrored = next
	return nil
}

func timesEqual(x, y *time.Time) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return x.Equal(*y)
}

func (w *scheduleWorkflow) describe() ScheduleDescription {
	if w.resting != nil {
		return w.describeAtRest(*w.resting)
	}
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

// readyToContinueAsNew waits until the handlers have finished and no signal is left
// unread; it reports false when something arrived meanwhile, for the loop to take first (an
// update waits for the loop to decide its command, so its handler finishes only then).
func (w *scheduleWorkflow) readyToContinueAsNew(ctx workflow.Context) (bool, error) {
	signalsRead := func() bool {
		for _, name := range commandNames {
			if workflow.GetSignalChannel(ctx, name).Len() > 0 {
				return false
			}
		}
		return true
	}
	midway := func() bool { return w.legacy != nil && w.legacy.handlers > 0 }
	if err := workflow.Await(ctx, func() bool {
		return len(w.inbox) > 0 || !midway() && workflow.AllHandlersFinished(ctx) && signalsRead()
	}); err != nil {
		return false, err
	}
	return len(w.inbox) == 0, nil
}

// continueAsNew hands the watermark, buffer and running runs to a fresh run.
func (w *scheduleWorkflow) continueAsNew(ctx workflow.Context) error {
	carry := w.carry
	return workflow.NewContinueAsNewError(ctx, ScheduleWorkflowType, ScheduleInput{ScheduleID: w.in.ScheduleID, Name: w.in.Name, Carry: &carry})
}
