package activities_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

type countingNudger struct{ nudges, rollouts atomic.Int64 }

func (w *countingNudger) NudgeRollouts(context.Context, []int64) error { w.rollouts.Add(1); return nil }
func (w *countingNudger) NudgePromoter(context.Context) error          { w.nudges.Add(1); return nil }

// claimAll creates a rollout of the given (executor, payload) tasks, each on its own
// database, promotes and claims them.
func claimAll(t *testing.T, st *store.Store, specs ...[2]string) []activities.ClaimedTaskRun {
	t.Helper()
	ctx := context.Background()
	var tasks []store.NewTaskRun
	for i, sp := range specs {
		tasks = append(tasks, store.NewTaskRun{Database: "db" + string(rune('a'+i)), Type: "DML", Version: "1", VersionKey: version.MustKey("1"),
			Executor: domain.Executor(sp[0]), Payload: json.RawMessage(sp[1])})
	}
	r, err := st.CreateRollout(ctx, "r", 100, tasks)
	require.NoError(t, err)
	_, err = st.PromoteRound(ctx)
	require.NoError(t, err)
	a := &activities.RolloutActivities{Store: st}
	res, err := a.ClaimRolloutTasks(ctx, activities.ClaimInput{RolloutID: r.ID, Max: 100})
	require.NoError(t, err)
	require.Len(t, res.Tasks, len(specs))
	return res.Tasks
}

func TestRunRolloutTasksRetriesAndResults(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	var calls atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer flaky.Close()
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer refused.Close()

	tasks := claimAll(t, st,
		[2]string{"noop", `{}`},
		[2]string{"http", `{"url":"` + flaky.URL + `"}`},
		[2]string{"http", `{"url":"` + refused.URL + `"}`},
		[2]string{"sql", `{"statement":"SELECT 1"}`},
	)
	nudger := &countingNudger{}
	a := &activities.RolloutActivities{Outbound: loopbackAllowed(t), Store: st, Nudger: nudger}
	res, err := a.RunRolloutTasks(context.Background(), activities.BatchInput{Tasks: tasks, MaxAttempts: 3, Backoff: 10 * time.Millisecond})
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{tasks[0].ID, tasks[1].ID}, res.Done)
	require.ElementsMatch(t, []int64{tasks[2].ID, tasks[3].ID}, res.Failed)
	require.EqualValues(t, 3, calls.Load(), "the 503s were retried, the third attempt succeeded")
	require.GreaterOrEqual(t, nudger.nudges.Load(), int64(1), "finishes nudge the promoter")

	got := func(i int) store.TaskRun {
		tr, err := st.GetTaskRun(context.Background(), tasks[i].ID)
		require.NoError(t, err)
		return tr
	}
	require.Equal(t, domain.TaskRunDone, got(0).Status)
	require.Equal(t, domain.TaskRunDone, got(1).Status)
	require.JSONEq(t, `{"http_status":200}`, string(got(1).Output))
	require.Equal(t, domain.TaskRunFailed, got(2).Status)
	require.Contains(t, got(2).Error, "403")
	require.Equal(t, domain.TaskRunFailed, got(3).Status)
	require.Contains(t, got(3).Error, "no SQL target")

	// Running the same batch again (a retry after a lost worker) changes nothing: the
	// results are recorded once per claim.
	res, err = a.RunRolloutTasks(context.Background(), activities.BatchInput{Tasks: tasks[:1], MaxAttempts: 1})
	require.NoError(t, err)
	require.Empty(t, res.Done)
}

// An operator's cancel of a RUNNING task stops its executor at the batch's next status check.
func TestRunRolloutTasksStopsCanceledTask(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tasks := claimAll(t, st, [2]string{"noop", `{"sleep":"1h"}`}, [2]string{"noop", `{}`})
	a := &activities.RolloutActivities{Store: st}
	go func() {
		_, _ = st.CancelRunningTaskRun(context.Background(), tasks[0].ID)
	}()
	res, err := a.RunRolloutTasks(context.Background(), activities.BatchInput{Tasks: tasks, MaxAttempts: 1, StatusCheck: 20 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, []int64{tasks[1].ID}, res.Done)
	require.Empty(t, res.Failed)
	tr, err := st.GetTaskRun(context.Background(), tasks[0].ID)
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunCanceled, tr.Status)
}

// EndRolloutTasks ends only the tasks still RUNNING under their claim.
func TestEndRolloutTasks(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tasks := claimAll(t, st, [2]string{"noop", `{}`}, [2]string{"external", `{}`})
	a := &activities.RolloutActivities{Store: st}
	_, err := a.FinishRolloutTask(context.Background(), activities.FinishInput{TaskID: tasks[1].ID, Attempt: tasks[1].Attempt, Status: domain.TaskRunDone, Output: json.RawMessage("null")})
	require.NoError(t, err)
	n, err := a.EndRolloutTasks(context.Background(), activities.FailInput{Tasks: tasks, Status: domain.TaskRunCanceled, Error: "rollout canceled"})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	tr, err := st.GetTaskRun(context.Background(), tasks[1].ID)
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunDone, tr.Status)
	require.Nil(t, tr.Output)
	_, err = a.EndRolloutTasks(context.Background(), activities.FailInput{Tasks: tasks, Status: domain.TaskRunDone})
	require.Error(t, err)
}

// A worker killed mid-task leaves the task RUNNING; Temporal retries the batch elsewhere
// and the task runs to DONE, once.
func TestRunRolloutTasksRecoversAfterKilledWorker(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	var calls atomic.Int64
	hang := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-hang // the first worker dies while its request is in flight
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer target.Close()
	defer close(hang)
	tasks := claimAll(t, st, [2]string{"http", `{"url":"` + target.URL + `"}`})
	a := &activities.RolloutActivities{Outbound: loopbackAllowed(t), Store: st}

	killed, kill := context.WithCancel(context.Background())
	go func() {
		for calls.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		kill()
	}()
	_, err := a.RunRolloutTasks(killed, activities.BatchInput{Tasks: tasks, MaxAttempts: 3})
	require.Error(t, err)
	tr, err := st.GetTaskRun(context.Background(), tasks[0].ID)
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunRunning, tr.Status, "the dead worker recorded nothing")

	res, err := a.RunRolloutTasks(context.Background(), activities.BatchInput{Tasks: tasks, MaxAttempts: 3})
	require.NoError(t, err)
	require.Equal(t, []int64{tasks[0].ID}, res.Done)
	tr, err = st.GetTaskRun(context.Background(), tasks[0].ID)
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunDone, tr.Status)
	require.EqualValues(t, 1, tr.Attempt, "still the one claim")
	require.EqualValues(t, 2, calls.Load())
}

// PromoteRollouts promotes in one round, nudges the rollouts it promoted into, and records
// the round's duration in the promotion histogram the worker serves at /metrics.
func TestPromoteRolloutsWakesAndObservesTheRound(t *testing.T) {
	// Not parallel: the histogram is process-wide, and a parallel round would blur the count.
	st := testenv.Store(t)
	ctx := context.Background()
	r, err := st.CreateRollout(ctx, "promote", 10, []store.NewTaskRun{
		{Database: "a", Type: "DML", Version: "1", VersionKey: version.MustKey("1"), Executor: "noop", Payload: json.RawMessage(`{}`)},
		{Database: "a", Type: "DML", Version: "2", VersionKey: version.MustKey("2"), Executor: "noop", Payload: json.RawMessage(`{}`)},
	})
	require.NoError(t, err)
	nudger := &countingNudger{}
	a := &activities.RolloutActivities{Store: st, Nudger: nudger}
	before := histogramCount(t, metrics.PromotionRound)

	res, err := a.PromoteRollouts(ctx, activities.PromoteInput{})
	require.NoError(t, err)
	require.Equal(t, 1, res.Promoted, "R2: version 2 waits for version 1")
	require.Equal(t, []int64{r.ID}, res.RolloutIDs)
	require.Equal(t, int64(1), nudger.rollouts.Load())
	require.Equal(t, before+1, histogramCount(t, metrics.PromotionRound))

	res, err = a.PromoteRollouts(ctx, activities.PromoteInput{})
	require.NoError(t, err)
	require.Zero(t, res.Promoted)
	require.Equal(t, int64(1), nudger.rollouts.Load(), "a round that promoted nothing nudges nobody")
	require.Equal(t, before+2, histogramCount(t, metrics.PromotionRound))
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleCount()
}

// loopbackAllowed is the outbound rule with 127.0.0.1 allowed: the tests' endpoints listen
// there, which the rule refuses otherwise.
func loopbackAllowed(t *testing.T) outbound.Rule {
	rule, err := outbound.Parse("127.0.0.1")
	require.NoError(t, err)
	return rule
}
