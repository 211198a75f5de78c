package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// PCInput starts a PC workflow.
type PCInput struct {
	PC string
	// Poll is the safety refill interval. Default 1 minute.
	Poll time.Duration
}

// pcIterations bounds one run's history before it continues as new.
const pcIterations = 500

// PCWorkflow keeps one PC's slots full: it refills them (one execution per free slot,
// D2, in SQL under the PC's lock) whenever it is signalled — a device added, reset or gone,
// another service asking — and on a safety poll. A slot freed by a result or a timeout is
// refilled in the same transaction that frees it, so the hot path does not wait for this
// workflow. It ends when the PC is deleted.
func PCWorkflow(ctx workflow.Context, in PCInput) error {
	if in.Poll <= 0 {
		in.Poll = time.Minute
	}
	nudges := workflow.GetSignalChannel(ctx, SignalNudgePC)
	var handlers handlerCount // the nudge handler, counted like every signal handler (see handlerCount)
	actx := deviceActivityCtx(ctx)
	for i := 0; ; i++ {
		var n int
		if err := workflow.ExecuteActivity(actx, deviceActs.RefillPC, in.PC).Get(ctx, &n); err != nil {
			if isDeviceGone(err) {
				return nil
			}
			return err
		}
		tctx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimerWithOptions(tctx, in.Poll, workflow.TimerOptions{Summary: "PC " + in.PC + " safety refill"})
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(nudges, func(c workflow.ReceiveChannel, _ bool) {
			defer handlers.track()()
			var ignored any
			c.Receive(ctx, &ignored)
		})
		sel.AddFuture(timer, func(workflow.Future) {})
		sel.Select(ctx)
		cancel()
		for {
			var ignored any
			if !nudges.ReceiveAsync(&ignored) {
				break
			}
		}
		if i+1 >= pcIterations || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			// A refill asked for after the drain is done by the next run's first refill.
			if err := handlers.awaitIdle(ctx); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, PCWorkflow, in)
		}
	}
}
