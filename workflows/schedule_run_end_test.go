package workflows_test

import (
	"context"
	"errors"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/workflows"
)

// A run's end is what its target did: a wait for the target that fails (AwaitRunWorkflow
// fails when a poll is cut short under load, see activities.TestAwaitRunWorkflowFails…) is
// retried, the run stays RUNNING meanwhile, and it ends as the target did — here FAILED with
// the target's own error, not the wait's.
func (s *ScheduleWorkflowSuite) TestAFailedWaitLeavesTheRunRunningUntilItsTargetEnds() {
	start := s.t0.Add(10 * time.Second)
	in := s.createSchedule("failed-wait", schedulespec.Spec{Interval: every(1, "HOURS"), StartAt: &start}, s.t0, withOverlap(domain.OverlapSkip))
	s.env.OnActivity(s.acts.StartRunWorkflow, mock.Anything, mock.Anything).Return("run", nil)
	var waits int
	s.env.OnActivity(s.acts.AwaitRunWorkflow, mock.Anything, mock.Anything).After(30 * time.Second).Return(
		func(_ context.Context, id string) (activities.RunOutcome, error) {
			if waits++; waits == 1 {
				return activities.RunOutcome{}, errors.New("wait for " + id + " to close: context deadline exceeded")
			}
			return activities.RunOutcome{Status: domain.RunFailed, Error: "the report could not be built"}, nil
		})
	var between string
	s.env.RegisterDelayedCallback(func() { between = string(s.runs("failed-wait")[0].Status) }, 50*time.Second)
	s.stopAt(3 * minute)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.Equal(2, waits, "the failed wait was retried")
	s.Equal("RUNNING", between, "a failed wait is not the run's end")
	runs := s.runs("failed-wait")
	s.Require().Len(runs, 1)
	s.Equal(domain.RunFailed, runs[0].Status)
	s.Equal("the report could not be built", runs[0].Error, "the target's own error")
}
