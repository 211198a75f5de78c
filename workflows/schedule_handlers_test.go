package workflows_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/workflows"
)

// A reschedule signal that arrives while the loop is recording a tick waits in the inbox;
// the loop then decides to continue as new. Continue-as-new must take it first: the new run
// carries the reschedule, and Postgres mirrors it. (When handlers decided beside the loop,
// an uncounted handler mid-way was cut off and the reschedule lost.)
func (s *ScheduleWorkflowSuite) TestContinueAsNewWaitsForARescheduleSignalMidWay() {
	s.future()
	start := s.t0
	// A workflow action: each tick is recorded through RecordTick, armed one ahead (an event
	// schedule this fast arms windows instead).
	in := s.createSchedule("resched-can", schedulespec.Spec{Interval: every(10, "SECONDS"), StartAt: &start}, s.t0, withOverlap("allow_all"))
	s.mockTargets(time.Second)
	in.Carry = &workflows.ScheduleCarry{Watermark: s.t0, ContinueAsNewAfter: 1}
	at := s.t0.Add(45 * time.Second)
	var once sync.Once
	s.env.OnActivity(s.acts.RecordTick, mock.Anything, mock.Anything).Return(func(ctx context.Context, rec activities.TickRecord) (activities.RunRecord, error) {
		// The signal comes while the first tick is being recorded.
		once.Do(func() { s.env.SignalWorkflow(workflows.ScheduleReschedule, workflows.RescheduleRequest{NextRunAt: at}) })
		return s.acts.RecordTick(ctx, rec)
	})
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	var can *workflow.ContinueAsNewError
	s.Require().True(errors.As(s.env.GetWorkflowError(), &can), "%v", s.env.GetWorkflowError())
	var next workflows.ScheduleInput
	s.Require().NoError(converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	s.Require().NotNil(next.Carry.Rescheduled, "the reschedule carries over")
	s.Equal(at, next.Carry.Rescheduled.UTC())
	row, err := s.store.GetSchedule(context.Background(), "resched-can")
	s.Require().NoError(err)
	s.Require().NotNil(row.NextRunAt)
	s.Equal(at, row.NextRunAt.UTC(), "next_run_at mirrors the reschedule")
}
