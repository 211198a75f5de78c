package activities_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/store"
)

// recordingNudger remembers which rollouts were nudged.
type recordingNudger struct {
	mu     sync.Mutex
	woken  []int64
	nudges atomic.Int64
}

func (w *recordingNudger) NudgeRollouts(_ context.Context, ids []int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.woken = append(w.woken, ids...)
	return nil
}
func (w *recordingNudger) NudgePromoter(context.Context) error { w.nudges.Add(1); return nil }

func (w *recordingNudger) wasNudged(id int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.woken, id)
}

// A runner started with the first promoted tasks runs the whole rollout: after each write
// of results it promotes and claims the next tasks itself. Every task is recorded DONE
// exactly once under its one claim, R1–R3 hold throughout, the external task is left for
// the workflow (woken for it), and another rollout the runner's rounds promoted into is woken.
// (Not parallel: TestPromoteRolloutsWakesAndObservesTheRound counts the promotion rounds.)
func TestRunnerRunsTheRolloutAndRecordsEachResultOnce(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	var tasks []store.NewTaskRun
	for db := 0; db < 4; db++ {
		for v := 1; v <= 5; v++ {
			typ := domain.TaskDML
			if (db+v)%2 == 0 {
				typ = domain.TaskDDL
			}
			vs := fmt.Sprint(v)
			tasks = append(tasks, store.NewTaskRun{Database: fmt.Sprintf("db%d", db), Type: typ, Version: vs, VersionKey: version.MustKey(vs),
				Executor: domain.ExecutorNoop, Payload: []byte(`{"sleep":"5ms"}`)})
		}
	}
	ext := store.NewTaskRun{Database: "db0", Type: domain.TaskDML, Version: "6", VersionKey: version.MustKey("6"), Executor: domain.ExecutorExternal}
	r, err := st.CreateRollout(ctx, "runner", 3, append(tasks, ext))
	require.NoError(t, err)
	// Another rollout waits on db1 behind this one's versions (R2).
	other, err := st.CreateRollout(ctx, "other", 5, []store.NewTaskRun{{Database: "db1", Type: domain.TaskDDL, Version: "9",
		VersionKey: version.MustKey("9"), Executor: domain.ExecutorNoop}})
	require.NoError(t, err)

	_, err = st.PromoteRound(ctx)
	require.NoError(t, err)
	first, err := st.ClaimTaskRunsOf(ctx, r.ID, 100, store.ClaimRunnable)
	require.NoError(t, err)
	require.NotEmpty(t, first)
	var claimed []activities.ClaimedTaskRun
	for _, tr := range first {
		claimed = append(claimed, activities.ClaimedTaskRun{ID: tr.ID, RolloutID: tr.RolloutID, Attempt: tr.Attempt, Database: tr.Database,
			Type: tr.Type, Version: tr.Version, Executor: tr.Executor, Payload: tr.Payload})
	}

	stop := make(chan struct{})
	var breaches []string
	var checks sync.WaitGroup
	checks.Add(1)
	go func() {
		defer checks.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			b, err := invariants.RolloutBreaches(ctx, st.Pool)
			if err == nil {
				breaches = append(breaches, b...)
			}
		}
	}()
	w := &recordingNudger{}
	a := &activities.RolloutActivities{Store: st, Nudger: w}
	res, err := a.RunRolloutTasks(ctx, activities.BatchInput{Tasks: claimed, MaxAttempts: 1, AsRunner: true, RolloutID: r.ID})
	close(stop)
	checks.Wait()
	require.NoError(t, err)
	require.Empty(t, breaches)
	require.Empty(t, res.Failed)
	require.Len(t, res.Done, len(tasks), "every task recorded once")
	seen := map[int64]bool{}
	for _, id := range res.Done {
		require.False(t, seen[id], "task %d recorded twice", id)
		seen[id] = true
	}
	runs, err := st.ListTaskRuns(ctx, r.ID, 0, nil, 100)
	require.NoError(t, err)
	for _, tr := range runs {
		if tr.Executor == domain.ExecutorExternal {
			require.Equal(t, domain.TaskRunAvailable, tr.Status, "the external task is the workflow's to claim")
			continue
		}
		require.Equal(t, domain.TaskRunDone, tr.Status)
		require.EqualValues(t, 1, tr.Attempt, "claimed once")
	}
	require.True(t, w.wasNudged(r.ID), "its workflow is woken for the external task")
	require.True(t, w.wasNudged(other.ID), "the other rollout is woken for its promoted task")
	require.Positive(t, w.nudges.Load(), "the promoter hears when the runner stops")
}

// A runner whose worker died is retried by Temporal: the retry adopts the rollout's RUNNING
// executor tasks (the runner held them all, including ones it had claimed itself) and
// records each once, under its original claim.
func TestRunnerRetryAdoptsItsRunningTasks(t *testing.T) {
	st := testenv.Store(t)
	ctx := context.Background()
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
	payload := `{"url":"` + target.URL + `"}`
	tasks := claimAll(t, st, [2]string{"http", payload}, [2]string{"http", payload}, [2]string{"external", `{}`})
	a := &activities.RolloutActivities{Outbound: loopbackAllowed(t), Store: st}

	killed, kill := context.WithCancel(ctx)
	go func() {
		for calls.Load() < 1 {
			time.Sleep(time.Millisecond)
		}
		kill()
	}()
	// The first attempt was given only the first task; the second stands for one it
	// claimed itself and had not started when its worker died.
	in := activities.BatchInput{Tasks: tasks[:1], MaxAttempts: 3, AsRunner: true, RolloutID: tasks[0].RolloutID}
	_, err := a.RunRolloutTasks(killed, in)
	require.Error(t, err)
	for _, tk := range tasks {
		tr, err := st.GetTaskRun(ctx, tk.ID)
		require.NoError(t, err)
		require.Equal(t, domain.TaskRunRunning, tr.Status, "the dead worker recorded nothing")
	}

	defer activities.PlayRetry(2)()
	res, err := a.RunRolloutTasks(ctx, in)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{tasks[0].ID, tasks[1].ID}, res.Done)
	for i, tk := range tasks {
		tr, err := st.GetTaskRun(ctx, tk.ID)
		require.NoError(t, err)
		require.EqualValues(t, 1, tr.Attempt, "still the one claim")
		if i < 2 {
			require.Equal(t, domain.TaskRunDone, tr.Status)
		} else {
			require.Equal(t, domain.TaskRunRunning, tr.Status, "the external task is not the runner's")
		}
	}
	require.EqualValues(t, 3, calls.Load(), "the dead attempt's call and one per adopted task")
	// PostgreSQL's count: the first task's attempt in flight when its worker died is lost
	// (it spent nothing), the retry's is its second; the other task started once.
	outcomes := func(id int64) []string {
		as, err := st.ExecutorAttemptsOf(ctx, id)
		require.NoError(t, err)
		var out []string
		for _, a := range as {
			require.NotNil(t, a.Outcome)
			out = append(out, fmt.Sprintf("%d:%s", a.Attempt, *a.Outcome))
		}
		return out
	}
	require.Equal(t, []string{"1:lost", "2:succeeded"}, outcomes(tasks[0].ID))
	require.Equal(t, []string{"1:succeeded"}, outcomes(tasks[1].ID))
	require.Empty(t, outcomes(tasks[2].ID), "an external task has no executor attempts")
}

// A canceled rollout's workflow ends its runner's tasks without knowing them one by one
// (RunnerOf); its external task is ended only when listed.
func TestEndRolloutTasksOfRunner(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	tasks := claimAll(t, st, [2]string{"noop", `{}`}, [2]string{"http", `{"url":"http://x"}`}, [2]string{"external", `{}`})
	a := &activities.RolloutActivities{Store: st}
	n, err := a.EndRolloutTasks(context.Background(), activities.FailInput{Tasks: tasks[:1], Status: domain.TaskRunCanceled, Error: "rollout canceled", RunnerOf: tasks[0].RolloutID})
	require.NoError(t, err)
	require.Equal(t, 2, n, "the listed task and the runner's other task, each once")
	for i, tk := range tasks {
		tr, err := st.GetTaskRun(context.Background(), tk.ID)
		require.NoError(t, err)
		if i < 2 {
			require.Equal(t, domain.TaskRunCanceled, tr.Status)
		} else {
			require.Equal(t, domain.TaskRunRunning, tr.Status)
		}
	}
}
