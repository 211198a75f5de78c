package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
)

// DispatcherInput configures the dispatcher.
type DispatcherInput struct {
	// Poll is the safety re-check interval (a missed nudge, an overdue execution whose slot
	// workflow never started). Default 30 seconds.
	Poll time.Duration
}

// dispatcherIterations bounds one run's history before it continues as new.
const dispatcherIterations = 500

// DispatcherWorkflow keeps the single active task (D1): on every nudge (a task created or
// canceled, an execution finishing with nothing left to refill, an abort) and on a safety
// poll it finishes the active task once all its executions are final, activates the oldest
// pending task and fills every PC's slots with it. It is a cluster singleton (fixed id);
// the state it acts on lives in SQL, so a restart loses nothing.
func DispatcherWorkflow(ctx workflow.Context, in DispatcherInput) error {
	if in.Poll <= 0 {
		in.Poll = 30 * time.Second
	}
	checks := workflow.GetSignalChannel(ctx, SignalDispatcherCheck)
	var handlers handlerCount // the check handler, counted like every signal handler (see handlerCount)
	actx := deviceActivityCtx(ctx)
	for i := 0; ; i++ {
		var adv activities.AdvanceResult
		if err := workflow.ExecuteActivity(actx, deviceActs.Advance).Get(ctx, &adv); err != nil {
			return err
		}
		if len(adv.Activated) > 0 || len(adv.Finished) > 0 {
			workflow.GetLogger(ctx).Info("dispatcher advanced", "active", adv.ActiveTaskID,
				"finished", adv.Finished, "activated", adv.Activated, "refilled", adv.Refilled)
		}

		tctx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimerWithOptions(tctx, in.Poll, workflow.TimerOptions{Summary: "dispatcher safety re-check"})
		polled := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(checks, func(c workflow.ReceiveChannel, _ bool) {
			defer handlers.track()()
			var ignored any
			c.Receive(ctx, &ignored)
		})
		sel.AddFuture(timer, func(f workflow.Future) { polled = f.Get(ctx, nil) == nil })
		sel.Select(ctx)
		cancel()
		// Coalesce the nudges that arrived together: one Advance answers them all.
		for {
			var ignored any
			if !checks.ReceiveAsync(&ignored) {
				break
			}
		}
		if polled {
			var sw activities.SweepResult
			if err := workflow.ExecuteActivity(actx, deviceActs.Sweep).Get(ctx, &sw); err != nil {
				return err
			}
		}
		if i+1 >= dispatcherIterations || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// A check that came after the drain is answered by the next run's first Advance.
			if err := handlers.awaitIdle(ctx); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, DispatcherWorkflow, in)
		}
	}
}
