package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/workflows"
)

var acts *activities.RolloutActivities

type RolloutWorkflowSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
	// mu guards what the mocks record: activities run on their own goroutines.
	mu sync.Mutex
	// nudges counts the signals the rollout workflow sent the promoter.
	nudges int
}

func (s *RolloutWorkflowSuite) locked(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

func TestRolloutWorkflowSuite(t *testing.T) { suite.Run(t, new(RolloutWorkflowSuite)) }

func (s *RolloutWorkflowSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(workflows.RolloutWorkflow, workflow.RegisterOptions{Name: workflows.RolloutWorkflowType})
	s.env.RegisterWorkflowWithOptions(workflows.PromoterWorkflow, workflow.RegisterOptions{Name: workflows.PromoterWorkflowType})
	s.env.RegisterActivity(acts)
	s.nudges = 0
	s.env.OnSignalExternalWorkflow(mock.Anything, workflows.PromoterWorkflowID("default-test-taskqueue"), "", workflows.SignalNudgePromoter, mock.Anything).
		Return(func(_, _, _, _ string, _ any) error { s.locked(func() { s.nudges++ }); return nil }).Maybe()
}

func (s *RolloutWorkflowSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

// claims scripts ClaimRolloutTasks: each call answers the next result, the last one repeats.
func (s *RolloutWorkflowSuite) claims(results ...activities.ClaimResult) *int {
	calls := 0
	s.env.OnActivity(acts.ClaimRolloutTasks, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.Equal(int64(7), in.RolloutID)
			res := results[min(calls, len(results)-1)]
			calls++
			return res, nil
		})
	return &calls
}

func running(n int64) activities.ClaimResult {
	return activities.ClaimResult{RolloutStatus: domain.RolloutRunning, Unfinished: n}
}

func task(id int64, executor domain.Executor) activities.ClaimedTaskRun {
	return activities.ClaimedTaskRun{ID: id, RolloutID: 7, Attempt: 1, Database: "db1", Type: "DDL", Version: "1", Executor: executor, Payload: json.RawMessage(`{}`)}
}

// An external task finishes when its result signal arrives; the workflow then ends.
func (s *RolloutWorkflowSuite) TestExternalResult() {
	first := running(1)
	first.Tasks = []activities.ClaimedTaskRun{task(11, domain.ExecutorExternal)}
	s.claims(first, running(0))
	var finished []activities.FinishInput
	s.env.OnActivity(acts.FinishRolloutTask, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FinishInput) (bool, error) {
			finished = append(finished, in)
			return true, nil
		}).Once()
	s.env.RegisterDelayedCallback(func() {
		s.locked(func() { s.Empty(finished, "nothing finishes before the result arrives") })
		s.env.SignalWorkflow(workflows.SignalTaskResult, workflows.ExternalTaskResult{TaskID: 11, TaskRunResult: domain.TaskRunResult{Status: "DONE", Output: json.RawMessage(`{"ok":true}`)}})
	}, 3*time.Hour)

	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.Require().Len(finished, 1)
	s.Equal(int64(11), finished[0].TaskID)
	s.Equal(domain.TaskRunDone, finished[0].Status)
	s.JSONEq(`{"ok":true}`, string(finished[0].Output))
	s.GreaterOrEqual(s.nudges, 1, "the promoter hears of the finished task")
}

// A result that arrives before the task is claimed is applied when it is.
func (s *RolloutWorkflowSuite) TestExternalResultBeforeClaim() {
	withTask := running(1)
	withTask.Tasks = []activities.ClaimedTaskRun{task(12, domain.ExecutorExternal)}
	s.claims(running(1), withTask, running(0))
	s.env.OnActivity(acts.FinishRolloutTask, mock.Anything, mock.MatchedBy(func(in activities.FinishInput) bool {
		return in.TaskID == 12 && in.Attempt == 1 && in.Status == domain.TaskRunFailed && in.Error == "migration refused"
	})).Return(true, nil).Once()
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SignalTaskResult, workflows.ExternalTaskResult{TaskID: 12, TaskRunResult: domain.TaskRunResult{Status: "FAILED", Error: "migration refused"}})
	}, time.Minute)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(workflows.SignalPromoted, nil) }, 2*time.Minute)
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.NoError(s.env.GetWorkflowError())
}

// Claimed tasks run in batches of TaskBatch per activity (runs begun before the runner).
func (s *RolloutWorkflowSuite) TestTasksRunInBatches() {
	s.env.OnGetVersion("rollout-runner", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	first := running(120)
	for i := int64(1); i <= 120; i++ {
		first.Tasks = append(first.Tasks, task(100+i, domain.ExecutorNoop))
	}
	s.claims(first, running(0))
	var sizes []int
	s.env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BatchInput) (activities.BatchResult, error) {
			s.locked(func() { sizes = append(sizes, len(in.Tasks)) })
			s.Equal(workflows.TaskMaxAttempts, in.MaxAttempts)
			return activities.BatchResult{}, nil
		})
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.NoError(s.env.GetWorkflowError())
	s.ElementsMatch([]int{50, 50, 20}, sizes)
}

// From the runner version on, every claimed task an executor runs goes to one runner
// activity (AsRunner), which claims the rollout's next tasks itself; while it runs the
// workflow claims only external tasks and adopts nothing (the runner holds the RUNNING
// tasks), and once it ends the workflow claims everything again.
func (s *RolloutWorkflowSuite) TestRunnerHoldsExecutorTasks() {
	first := running(122)
	for i := int64(1); i <= 120; i++ {
		first.Tasks = append(first.Tasks, task(100+i, domain.ExecutorNoop))
	}
	first.Tasks = append(first.Tasks, task(300, domain.ExecutorExternal))
	during := running(121)
	during.RunningIDs = []int64{400, 401} // claimed by the runner meanwhile: not orphans
	var inputs []activities.ClaimInput
	calls := 0
	s.env.OnActivity(acts.ClaimRolloutTasks, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			inputs = append(inputs, in)
			calls++
			switch calls {
			case 1:
				return first, nil
			case 2:
				return during, nil
			}
			return running(0), nil
		})
	var batches []activities.BatchInput
	s.env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BatchInput) (activities.BatchResult, error) {
			s.locked(func() { batches = append(batches, in) })
			s.env.SignalWorkflow(workflows.SignalPromoted, nil)
			// The nudge is handled (a second claim) while the runner runs.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				n := 0
				s.locked(func() { n = calls })
				if n >= 2 {
					break
				}
			}
			return activities.BatchResult{}, nil
		})
	s.env.OnActivity(acts.FinishRolloutTask, mock.Anything, mock.Anything).Return(true, nil)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SignalTaskResult, workflows.ExternalTaskResult{TaskID: 300, TaskRunResult: domain.TaskRunResult{Status: "DONE"}})
	}, time.Minute)
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.NoError(s.env.GetWorkflowError())
	s.locked(func() {
		s.Require().Len(batches, 1, "one runner, not batches of TaskBatch")
		s.True(batches[0].AsRunner)
		s.Equal(int64(7), batches[0].RolloutID)
		s.Len(batches[0].Tasks, 120)
		s.Require().GreaterOrEqual(len(inputs), 3)
		s.False(inputs[0].ExternalOnly)
		s.True(inputs[1].ExternalOnly, "while the runner runs the workflow claims external tasks only")
		s.Nil(inputs[1].Adopt)
		for _, in := range inputs[2:] {
			s.False(in.ExternalOnly, "after the runner the workflow claims everything again")
			s.Nil(in.Adopt, "the runner's tasks were not taken for orphans")
		}
	})
}

// A batch whose worker is lost again and again (its heartbeat times out) is run again each
// time, past the ten runs it was once allowed (BatchMaxAttempts): losing a worker is not a
// task failing, and only the executor attempts PostgreSQL records (the activity's own
// business) may fail a task. The workflow never ends the task FAILED itself.
func (s *RolloutWorkflowSuite) TestBatchLostAgainAndAgainIsRunAgainNotFailed() {
	first := running(1)
	first.Tasks = []activities.ClaimedTaskRun{task(21, domain.ExecutorHTTP)}
	s.claims(first, running(0))
	const lost = 25
	attempts := 0
	s.env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.BatchInput) (activities.BatchResult, error) {
			n := 0
			s.locked(func() { attempts++; n = attempts })
			if n <= lost {
				return activities.BatchResult{}, temporal.NewHeartbeatTimeoutError()
			}
			return activities.BatchResult{Done: []int64{21}}, nil
		})
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.NoError(s.env.GetWorkflowError())
	s.Equal(lost+1, attempts)
	// (EndRolloutTasks is not mocked: had the workflow ended the task, the test would fail.)
}

// A batch that fails once (a killed worker) is retried and succeeds: nothing is marked FAILED.
func (s *RolloutWorkflowSuite) TestBatchRetriedThenDone() {
	first := running(1)
	first.Tasks = []activities.ClaimedTaskRun{task(22, domain.ExecutorNoop)}
	s.claims(first, running(0))
	attempts := 0
	s.env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.BatchInput) (activities.BatchResult, error) {
			n := 0
			s.locked(func() { attempts++; n = attempts })
			if n == 1 {
				return activities.BatchResult{}, temporal.NewApplicationError("worker lost", "Transient")
			}
			return activities.BatchResult{Done: []int64{22}}, nil
		})
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.NoError(s.env.GetWorkflowError())
	s.Equal(2, attempts)
}

// Canceling the rollout cancels its running batch and marks its tasks CANCELED, the
// external one too.
func (s *RolloutWorkflowSuite) TestCancelStopsRunningTasks() {
	first := running(2)
	first.Tasks = []activities.ClaimedTaskRun{task(31, domain.ExecutorNoop), task(32, domain.ExecutorExternal)}
	s.claims(first, running(2))
	s.env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.BatchInput) (activities.BatchResult, error) {
			// A long task: the operator cancels the rollout while it runs, which ends it.
			s.env.SignalWorkflow(workflows.SignalCancelRollout, nil)
			select {
			case <-ctx.Done():
				return activities.BatchResult{}, ctx.Err()
			case <-time.After(10 * time.Second):
				return activities.BatchResult{}, errors.New("the activity was not canceled")
			}
		})
	var canceled []int64
	s.env.OnActivity(acts.EndRolloutTasks, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FailInput) (int, error) {
			s.Equal(domain.TaskRunCanceled, in.Status)
			s.locked(func() {
				for _, t := range in.Tasks {
					canceled = append(canceled, t.ID)
				}
			})
			return len(in.Tasks), nil
		}).Once()
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.ElementsMatch([]int64{31, 32}, canceled)
}

// While the rollout is paused nothing is claimed; the workflow waits (polling slowly), and
// after the resume's nudge it runs the task and ends.
func (s *RolloutWorkflowSuite) TestPausedThenResumed() {
	paused := activities.ClaimResult{RolloutStatus: domain.RolloutPaused, Unfinished: 1}
	resumed := running(1)
	resumed.Tasks = []activities.ClaimedTaskRun{task(41, domain.ExecutorNoop)}
	calls := s.claims(paused, paused, paused, paused, resumed, running(0))
	ran := time.Time{}
	s.env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.BatchInput) (activities.BatchResult, error) {
			s.locked(func() { ran = s.env.Now() })
			return activities.BatchResult{Done: []int64{41}}, nil
		}).Once()
	start := s.env.Now()
	// Safety polls at 30 s, 60 s and 90 s find it still paused; the resume nudges it at 100 s.
	s.env.RegisterDelayedCallback(func() {
		s.locked(func() { s.Equal(4, *calls) })
		s.env.SignalWorkflow(workflows.SignalPromoted, nil)
	}, 100*time.Second)
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.NoError(s.env.GetWorkflowError())
	s.Equal(6, *calls)
	s.Equal(100*time.Second, ran.Sub(start).Round(time.Second), "the task ran when the resume woke the workflow")
}

// RUNNING tasks the workflow does not hold (left by a terminated run, or by a claim whose
// result was lost with a workflow task) are adopted by the next claim and run again; the
// tasks it holds are not.
func (s *RolloutWorkflowSuite) TestAdoptsOrphans() {
	first := running(2)
	first.Tasks = []activities.ClaimedTaskRun{task(52, domain.ExecutorExternal)}
	first.RunningIDs = []int64{51}
	adopted := running(2)
	adopted.Tasks = []activities.ClaimedTaskRun{task(51, domain.ExecutorSQL)}
	adopted.RunningIDs = []int64{52}
	last := running(1)
	var adopts [][]int64
	calls := 0
	s.env.OnActivity(acts.ClaimRolloutTasks, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ClaimInput) (activities.ClaimResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			adopts = append(adopts, in.Adopt)
			calls++
			switch calls {
			case 1:
				return first, nil
			case 2:
				return adopted, nil
			}
			return last, nil
		})
	s.env.OnActivity(acts.FinishRolloutTask, mock.Anything, mock.Anything).Return(true, nil)
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow(workflows.SignalTaskResult, workflows.ExternalTaskResult{TaskID: 52, TaskRunResult: domain.TaskRunResult{Status: "DONE"}})
	}, time.Minute)
	s.env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.MatchedBy(func(in activities.BatchInput) bool {
		return len(in.Tasks) == 1 && in.Tasks[0].ID == 51
	})).Return(activities.BatchResult{Done: []int64{51}}, nil).Once()
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 2*time.Minute)
	s.env.ExecuteWorkflow(workflows.RolloutWorkflow, workflows.RolloutInput{RolloutID: 7})
	s.locked(func() {
		s.Require().GreaterOrEqual(len(adopts), 2)
		s.Nil(adopts[0])
		s.Equal([]int64{51}, adopts[1], "the orphan is adopted; the held external task 52 is not")
		for _, a := range adopts[2:] {
			s.Nil(a)
		}
	})
}

type PromoterSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func TestPromoterSuite(t *testing.T) { suite.Run(t, new(PromoterSuite)) }

func (s *PromoterSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterWorkflowWithOptions(workflows.PromoterWorkflow, workflow.RegisterOptions{Name: workflows.PromoterWorkflowType})
	s.env.RegisterActivity(acts)
}

// A task with run_at 20 minutes ahead is promoted by the durable timer at that time, not by
// a fixed loop: the rounds run at start, at the run_at, and on the safety poll after that.
func (s *PromoterSuite) TestRunAtTimer() {
	start := s.env.Now()
	runAt := start.Add(20*time.Minute + 10*time.Second)
	var rounds []time.Duration
	s.env.OnActivity(acts.PromoteRollouts, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PromoteInput) (activities.PromoteResult, error) {
			now := s.env.Now()
			rounds = append(rounds, now.Sub(start))
			if now.Before(runAt) {
				return activities.PromoteResult{NextRunAt: &runAt}, nil
			}
			return activities.PromoteResult{Promoted: 1, RolloutIDs: []int64{7}}, nil
		})
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 21*time.Minute)
	s.env.ExecuteWorkflow(workflows.PromoterWorkflow)
	// Safety polls every 30 s until the timer fires exactly at run_at (20m10s, between two
	// polls); the task is promoted by that round, then the polls continue.
	var want []time.Duration
	for d := time.Duration(0); d <= 20*time.Minute; d += 30 * time.Second {
		want = append(want, d)
	}
	want = append(want, 20*time.Minute+10*time.Second, 20*time.Minute+40*time.Second)
	got := make([]time.Duration, len(rounds))
	for i, r := range rounds {
		got[i] = r.Round(time.Second)
	}
	s.Equal(want, got)
}

// A nudge runs a round at once; without nudges the safety poll runs one every 30 s.
func (s *PromoterSuite) TestNudgeAndSafetyPoll() {
	start := s.env.Now()
	var rounds []time.Duration
	s.env.OnActivity(acts.PromoteRollouts, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PromoteInput) (activities.PromoteResult, error) {
			rounds = append(rounds, s.env.Now().Sub(start).Round(time.Second))
			return activities.PromoteResult{}, nil
		})
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow(workflows.SignalNudgePromoter, nil) }, 10*time.Second)
	s.env.RegisterDelayedCallback(func() { s.env.CancelWorkflow() }, 45*time.Second)
	s.env.ExecuteWorkflow(workflows.PromoterWorkflow)
	s.Equal([]time.Duration{0, 10 * time.Second, 40 * time.Second}, rounds)
}

// TestExternalTaskResultKeepsItsRecordedJSON: the task-result signal's payload, now a task
// run id beside the one domain.TaskRunResult, is written and read with the keys recorded
// histories carry (task_id, status, output, error).
func TestExternalTaskResultKeepsItsRecordedJSON(t *testing.T) {
	const recorded = `{"task_id":7,"status":"DONE","output":{"rows":3},"error":"late"}`
	var got workflows.ExternalTaskResult
	if err := json.Unmarshal([]byte(recorded), &got); err != nil {
		t.Fatal(err)
	}
	want := workflows.ExternalTaskResult{TaskID: 7, TaskRunResult: domain.TaskRunResult{Status: domain.TaskRunDone, Output: json.RawMessage(`{"rows":3}`), Error: "late"}}
	if got.TaskID != want.TaskID || got.Status != want.Status || string(got.Output) != string(want.Output) || got.Error != want.Error {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != recorded {
		t.Fatalf("encoded %s, want %s", again, recorded)
	}
}
