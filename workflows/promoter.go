package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
)

// promoterMaxRounds: the promoter continues as new after this many rounds.
var promoterMaxRounds = 500

// PromoterWorkflow is the singleton (id PromoterWorkflowID(task queue)) that applies the promotion gates
// across all rollouts. It runs a round when nudged (a task finished, tasks added, a rollout
// resumed), when the earliest future run_at comes (a durable timer), and on a slow safety
// poll; nudges that arrive during a round are coalesced into the next one. Correctness does
// not depend on it being single: every round is atomic in SQL.
func PromoterWorkflow(ctx workflow.Context) error {
	nudges := workflow.GetSignalChannel(ctx, SignalNudgePromoter)
	var handlers handlerCount // the nudge handler, counted like every signal handler (see handlerCount)
	// A round is a local activity: it is short, idempotent (re-running one after a lost
	// workflow task promotes nothing twice) and saves two server round trips per round.
	actx := databaseLocalActivity(ctx, "promotion round")
	for round := 1; ; round++ {
		for nudges.ReceiveAsync(nil) {
		}
		var res activities.PromoteResult
		// The round reads run_at against this workflow's clock too: the timer below woke it
		// for the earliest run_at, so that run_at has come even if the database's clock lags.
		in := activities.PromoteInput{AsOf: workflow.Now(ctx)}
		if err := workflow.ExecuteLocalActivity(actx, rolloutActs.PromoteRollouts, in).Get(ctx, &res); err != nil {
			return err
		}
		info := workflow.GetInfo(ctx)
		if round >= promoterMaxRounds || info.GetContinueAsNewSuggested() {
			// Nudges that came during the round are answered by the next run's first round.
			if err := handlers.awaitIdle(ctx); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, PromoterWorkflowType)
		}
		wait, summary := PromoterSafetyPoll, "safety poll"
		if res.NextRunAt != nil {
			if d := res.NextRunAt.Sub(workflow.Now(ctx)); d < wait {
				why := "earliest run_at" // (a result of a version before NextWhy says nothing)
				if res.NextWhy != "" && res.NextWhy != "run_at" {
					why = res.NextWhy
				}
				wait, summary = max(d, time.Millisecond), why+" "+res.NextRunAt.UTC().Format(time.RFC3339)
			}
		}
		tctx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimerWithOptions(tctx, wait, workflow.TimerOptions{Summary: summary})
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) {})
		sel.AddReceive(nudges, func(c workflow.ReceiveChannel, _ bool) {
			defer handlers.track()()
			c.Receive(ctx, nil)
		})
		sel.Select(ctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err // the promoter was canceled
		}
	}
}
