package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// workflowTaskBudget bounds the work one stretch of a schedule's loop does before it ends
// its workflow task. A workflow task that runs local activities for longer than its timeout
// (10 s) loses them all unless the SDK's heartbeat reaches the server in time; on a loaded
// server it did not, and a schedule catching up on a few minutes of workflow-action ticks
// (terminate, start and record per tick) retried the same workflow task for minutes (the
// chaos run on the real server). Committing every couple of seconds keeps each task short.
const workflowTaskBudget = 2 * time.Second

// workSpan is the wall-clock span of the records written since the loop last waited, read
// from the commit times the records answered. Those answers are in the history, so a replay
// decides to yield exactly where the run did; records from before the answers carried a
// time have none and never make the loop yield.
type workSpan struct{ first, last time.Time }

func (s *workSpan) add(committedAt time.Time) {
	if committedAt.IsZero() {
		return
	}
	if s.first.IsZero() {
		s.first = committedAt
	}
	s.last = committedAt
}

func (s *workSpan) spent() bool {
	return !s.first.IsZero() && s.last.Sub(s.first) >= workflowTaskBudget
}

// yieldIfSpent ends the workflow task with a short timer once the budget is spent, so what
// it did is committed to the history before the loop goes on.
func (w *scheduleWorkflow) yieldIfSpent(ctx workflow.Context) error {
	if !w.work.spent() {
		return nil
	}
	w.work = workSpan{}
	return workflow.NewTimerWithOptions(ctx, time.Millisecond, workflow.TimerOptions{
		Summary: "commit the ticks recorded so far",
	}).Get(ctx, nil)
}
