package workflows_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// Attempts that mean executor attempts (docs/rollouts.md, "Attempts"): the rollout's runner
// is killed mid-task again and again — more often than the ten runs it was once allowed —
// and each time Temporal runs it again (a heartbeat timeout, skipped through in workflow
// time). Nothing is mocked but the kill: the real workflow, the real runner on a real
// PostgreSQL, a real HTTP target. The task ends as its executor's real attempts say: FAILED
// after exactly three failures, or DONE, never FAILED by the kills.

// killTarget is the task's HTTP target. It answers each request by its script (500 or 200),
// except the one request of a run that the test kills the runner on: that request hangs
// until the killed runner's request is canceled.
type killTarget struct {
	mu       sync.Mutex
	answers  []int // what the answered requests get, in order (the last repeats)
	answered []int // what it answered
	cut      int   // requests cut off by a kill
	hangAt   int   // the request (of the current run, from 1) to hang on; 0: none
	seen     int   // requests of the current run
	arrived  chan struct{}
}

func (k *killTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body) // (read: the server then notices the client leave)
	k.mu.Lock()
	k.seen++
	if k.hangAt > 0 && k.seen == k.hangAt {
		k.cut++
		arrived := k.arrived
		k.mu.Unlock()
		close(arrived)
		<-r.Context().Done() // the runner's process is gone: nobody reads the answer
		return
	}
	status := k.answers[min(len(k.answered), len(k.answers)-1)]
	k.answered = append(k.answered, status)
	k.mu.Unlock()
	w.WriteHeader(status)
}

// arm makes the next run's hangAt-th request hang (0: none) and returns a channel closed
// when it arrives.
func (k *killTarget) arm(hangAt int) chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hangAt, k.seen, k.arrived = hangAt, 0, make(chan struct{})
	return k.arrived
}

func TestRunnerKilledMidTaskSpendsNoExecutorAttempt(t *testing.T) {
	// kills[i] is the request of run i+1 on which its runner is killed: 1 kills it in its
	// first executor attempt; 2 lets one attempt end (answered) and kills it in the next.
	// Twelve kills, two of them after an attempt that failed.
	kills := []int{1, 1, 2, 1, 1, 1, 1, 2, 1, 1, 1, 1}
	for _, c := range []struct {
		name    string
		answers []int
		status  domain.TaskRunStatus
		// what the executor's real attempts ended as, in order
		outcomes []string
	}{
		{name: "always fails", answers: []int{500}, status: domain.TaskRunFailed, outcomes: []string{"failed", "failed", "failed"}},
		{name: "fails twice then succeeds", answers: []int{500, 500, 200}, status: domain.TaskRunDone, outcomes: []string{"failed", "failed", "succeeded"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := testenv.Store(t)
			target := &killTarget{answers: c.answers}
			srv := httptest.NewServer(target)
			defer srv.Close()
			r, err := st.CreateRollout(ctx, t.Name(), 1, []store.NewTaskRun{{Database: "billing", Type: domain.TaskDDL, Version: "1",
				VersionKey: version.MustKey("1"), Executor: domain.ExecutorHTTP, Payload: []byte(`{"url":"` + srv.URL + `"}`)}})
			require.NoError(t, err)
			_, err = st.PromoteRound(ctx)
			require.NoError(t, err)

			loopback, err := outbound.Parse("127.0.0.1")
			require.NoError(t, err)
			acts := &activities.RolloutActivities{Store: st, Nudger: nopNudger{}, Outbound: loopback}
			env, _ := rolloutEnv(t, acts)
			var (
				mu   sync.Mutex
				runs int
			)
			env.OnActivity(acts.RunRolloutTasks, mock.Anything, mock.Anything).Return(
				func(ctx context.Context, in activities.BatchInput) (activities.BatchResult, error) {
					mu.Lock()
					runs++
					run := runs
					mu.Unlock()
					in.Backoff = 5 * time.Millisecond // the executor's own backoff, not under test
					if run > len(kills) {
						target.arm(0)
						return acts.RunRolloutTasks(ctx, in)
					}
					// This run's worker dies while its executor's request is in flight: its
					// context ends there, and so does everything it does (a killed process
					// writes nothing more). Temporal notices by the heartbeat's timeout.
					arrived := target.arm(kills[run-1])
					killed, kill := context.WithCancel(ctx)
					go func() {
						select {
						case <-arrived:
						case <-time.After(30 * time.Second): // (the assertions below then fail)
						}
						kill()
					}()
					_, _ = acts.RunRolloutTasks(killed, in)
					return activities.BatchResult{}, temporal.NewHeartbeatTimeoutError()
				})
			env.ExecuteWorkflow(workflows.RolloutWorkflowType, workflows.RolloutInput{RolloutID: r.ID})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			require.Equal(t, len(kills)+1, runs, "every kill was followed by another run, past the ten runs once allowed")

			runsOf, err := st.ListTaskRuns(ctx, r.ID, 0, nil, 10)
			require.NoError(t, err)
			require.Len(t, runsOf, 1)
			tr := runsOf[0]
			require.Equal(t, c.status, tr.Status, "the task ended as its executor's attempts say (error %q)", tr.Error)
			require.EqualValues(t, 1, tr.Attempt, "one claim throughout")
			if c.status == domain.TaskRunFailed {
				require.Equal(t, fmt.Sprintf("POST %s answered 500", srv.URL), tr.Error, "its executor's own error, not the kills'")
			}

			target.mu.Lock()
			answered, cut := append([]int(nil), target.answered...), target.cut
			target.mu.Unlock()
			require.Len(t, answered, len(c.outcomes), "exactly %d real executor attempts reached their end", len(c.outcomes))
			require.Equal(t, len(kills), cut, "each kill cut one request off")

			attempts, err := st.ExecutorAttemptsOf(ctx, tr.ID)
			require.NoError(t, err)
			var ended []string
			lost := 0
			for i, a := range attempts {
				require.EqualValues(t, i+1, a.Attempt, "attempts numbered in order within the claim")
				require.NotNil(t, a.Outcome, "attempt %d is not left open", a.Attempt)
				require.NotNil(t, a.EndedAt)
				if *a.Outcome == "lost" {
					lost++
					continue
				}
				ended = append(ended, *a.Outcome)
			}
			require.Equal(t, c.outcomes, ended, "PostgreSQL recorded the executor's real attempts")
			require.Equal(t, len(kills), lost, "each killed attempt is recorded lost, and spent nothing")
		})
	}
}
