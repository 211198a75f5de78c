package workflows_test

import (
	"context"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// recordsTaking makes every RecordTick answer a commit time step later than the previous
// one (zero: no commit time, as answers recorded before it existed), and counts the
// loop's yields: the millisecond timers that end a workflow task.
func (s *ScheduleWorkflowSuite) recordsTaking(step time.Duration) (yields func() int) {
	var mu sync.Mutex
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s.env.OnActivity(s.acts.RecordTick, mock.Anything, mock.Anything).Return(func(ctx context.Context, rec activities.TickRecord) (activities.RunRecord, error) {
		res, err := s.acts.RecordTick(ctx, rec)
		mu.Lock()
		defer mu.Unlock()
		res.CommittedAt = time.Time{}
		if step > 0 {
			clock = clock.Add(step)
			res.CommittedAt = clock
		}
		return res, err
	})
	n := 0
	s.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		if d == time.Millisecond {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// catchup30 is a schedule whose workflow starts 30 one-minute ticks late, all inside its
// catch-up window.
func (s *ScheduleWorkflowSuite) catchup30(name string) workflows.ScheduleInput {
	start := s.t0.Add(-30 * time.Minute)
	return s.createSchedule(name, schedulespec.Spec{Interval: every(1, "MINUTES"), StartAt: &start}, start, func(p *store.NewSchedule) {
		p.CatchupWindowMs = time.Hour.Milliseconds()
	})
}

func (s *ScheduleWorkflowSuite) assertCaughtUpOnce(name string) {
	runs := s.runs(name)
	s.Require().Len(runs, 30, "ticks -29m..0, each once")
	for i, r := range runs {
		s.Equal(s.t0.Add(time.Duration(i-29)*time.Minute), r.ScheduledAt.UTC(), "tick %d in order", i)
		s.Equal(domain.RunSucceeded, r.Status)
	}
}

// A catch-up whose records take long ends its workflow task every couple of seconds of
// work (so a slow server does not time the whole stretch out and redo it), and still
// records every tick once, in order.
func (s *ScheduleWorkflowSuite) TestLongCatchupCommitsItsWorkInShortWorkflowTasks() {
	yields := s.recordsTaking(time.Second)
	in := s.catchup30("slow-catchup")
	s.stopAt(30 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.assertCaughtUpOnce("slow-catchup")
	// 30 records a second apart, a yield once two seconds are spent: about one per three.
	s.GreaterOrEqual(yields(), 9)
	s.LessOrEqual(yields(), 10)
}

// Records answered before they carried a commit time (histories of earlier workers) never
// make the loop yield, so those histories replay as they ran.
func (s *ScheduleWorkflowSuite) TestRecordsWithoutCommitTimeNeverYield() {
	yields := s.recordsTaking(0)
	in := s.catchup30("old-records")
	s.stopAt(30 * time.Second)
	s.env.ExecuteWorkflow(workflows.ScheduleWorkflowType, in)

	s.assertCaughtUpOnce("old-records")
	s.Zero(yields())
}
