package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// rolloutStatus reads a rollout's derived status through both store reads (one rollout and
// the list), which must agree: they are the same view.
func rolloutStatus(t *testing.T, st *store.Store, id int64) domain.RolloutStatus {
	t.Helper()
	ctx := context.Background()
	one, err := st.GetRolloutSummary(ctx, id)
	require.NoError(t, err)
	page, err := st.ListRolloutSummaries(ctx, id-1, 1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, one, page[0])
	return one.Status
}

// finishAs claims rollout r's AVAILABLE tasks and ends each with the status given for it
// (by task id); tasks not listed stay RUNNING.
func finishAs(t *testing.T, st *store.Store, r store.Rollout, statuses map[int64]domain.TaskRunStatus) {
	t.Helper()
	ctx := context.Background()
	claimed, err := st.ClaimTaskRuns(ctx, r.ID, 100)
	require.NoError(t, err)
	for _, c := range claimed {
		status, ok := statuses[c.ID]
		if !ok {
			continue
		}
		_, ok, err := st.FinishTaskRun(ctx, c.ID, c.Attempt, status, "", nil)
		require.NoError(t, err)
		require.True(t, ok)
	}
}

// TestRolloutStatusIsDerivedHonestly: a rollout is RUNNING while a task is active and then
// DONE only when every task is DONE or SKIPPED and one ran, FAILED when a task failed, and
// CANCELED when it was canceled or no task ran — never DONE for work that did not happen.
func TestRolloutStatusIsDerivedHonestly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)

	t.Run("every task canceled is CANCELED", func(t *testing.T) {
		r, runs := newRollout(t, st, 10, task("c1", "DML", "1"), task("c1", "DML", "2"))
		require.Equal(t, domain.RolloutRunning, rolloutStatus(t, st, r.ID))
		for _, tr := range runs {
			_, err := st.CancelTaskRun(ctx, tr.ID)
			require.NoError(t, err)
		}
		require.Equal(t, domain.RolloutCanceled, rolloutStatus(t, st, r.ID))
	})

	t.Run("every task skipped is CANCELED", func(t *testing.T) {
		r, runs := newRollout(t, st, 10, task("s1", "DML", "1"), task("s2", "DDL", "1"))
		for _, tr := range runs {
			_, err := st.SkipTaskRun(ctx, tr.ID)
			require.NoError(t, err)
		}
		require.Equal(t, domain.RolloutCanceled, rolloutStatus(t, st, r.ID))
	})

	t.Run("one failed task is FAILED once nothing is active", func(t *testing.T) {
		r, runs := newRollout(t, st, 10, task("f1", "DML", "1"), task("f2", "DML", "1"), task("f3", "DML", "1"))
		promote(t, st)
		finishAs(t, st, r, map[int64]domain.TaskRunStatus{runs[0].ID: domain.TaskRunDone, runs[1].ID: domain.TaskRunFailed})
		require.Equal(t, domain.RolloutRunning, rolloutStatus(t, st, r.ID), "a task is still RUNNING")
		_, err := st.CancelRunningTaskRun(ctx, runs[2].ID)
		require.NoError(t, err)
		require.Equal(t, domain.RolloutFailed, rolloutStatus(t, st, r.ID))

		// Retrying the failed task makes the rollout active again. Once the retry is DONE
		// the rollout is still not DONE: its canceled task never ran, so it is CANCELED.
		_, err = st.RetryTaskRun(ctx, runs[1].ID)
		require.NoError(t, err)
		require.Equal(t, domain.RolloutRunning, rolloutStatus(t, st, r.ID))
		promote(t, st)
		finishAs(t, st, r, map[int64]domain.TaskRunStatus{runs[1].ID: domain.TaskRunDone})
		require.Equal(t, domain.RolloutCanceled, rolloutStatus(t, st, r.ID))
	})

	t.Run("done and skipped is DONE", func(t *testing.T) {
		r, runs := newRollout(t, st, 10, task("d1", "DML", "1"), task("d2", "DML", "1"))
		_, err := st.SkipTaskRun(ctx, runs[1].ID)
		require.NoError(t, err)
		require.Equal(t, domain.RolloutRunning, rolloutStatus(t, st, r.ID), "a task is still PENDING")
		promote(t, st)
		finishAs(t, st, r, map[int64]domain.TaskRunStatus{runs[0].ID: domain.TaskRunDone})
		require.Equal(t, domain.RolloutDone, rolloutStatus(t, st, r.ID))
	})

	t.Run("a canceled rollout with some tasks done is CANCELED", func(t *testing.T) {
		r, runs := newRollout(t, st, 1, task("x1", "DML", "1"), task("x1", "DML", "2"), task("x2", "DML", "1"))
		promote(t, st)
		finishAs(t, st, r, map[int64]domain.TaskRunStatus{runs[0].ID: domain.TaskRunDone})
		_, canceled, err := st.CancelRollout(ctx, r.ID)
		require.NoError(t, err)
		require.Len(t, canceled, 2)
		require.Equal(t, domain.RolloutCanceled, rolloutStatus(t, st, r.ID))
	})

	t.Run("a canceled rollout is CANCELED at once, its RUNNING task still being stopped", func(t *testing.T) {
		r, runs := newRollout(t, st, 10, task("y1", "DML", "1"))
		promote(t, st)
		finishAs(t, st, r, nil)
		_, _, err := st.CancelRollout(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, domain.TaskRunRunning, statusOf(t, st, runs[0].ID).Status)
		require.Equal(t, domain.RolloutCanceled, rolloutStatus(t, st, r.ID))
	})

	t.Run("done with a task canceled is CANCELED", func(t *testing.T) {
		r, runs := newRollout(t, st, 10, task("z1", "DML", "1"), task("z2", "DML", "1"))
		_, err := st.CancelTaskRun(ctx, runs[1].ID)
		require.NoError(t, err)
		promote(t, st)
		finishAs(t, st, r, map[int64]domain.TaskRunStatus{runs[0].ID: domain.TaskRunDone})
		require.Equal(t, domain.RolloutCanceled, rolloutStatus(t, st, r.ID))
	})

	t.Run("PAUSED while work remains, then how it ended", func(t *testing.T) {
		r, runs := newRollout(t, st, 10, task("p1", "DML", "1"), task("p2", "DML", "1"))
		promote(t, st)
		claimed, err := st.ClaimTaskRuns(ctx, r.ID, 1)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutPaused, domain.RolloutRunning)
		require.NoError(t, err)
		require.Equal(t, domain.RolloutPaused, rolloutStatus(t, st, r.ID))
		// The RUNNING task finishes while paused; the other one is still AVAILABLE.
		_, ok, err := st.FinishTaskRun(ctx, claimed[0].ID, claimed[0].Attempt, domain.TaskRunDone, "", nil)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, domain.RolloutPaused, rolloutStatus(t, st, r.ID))
		// Skipped while paused, nothing is left to hold back: the rollout reports how it
		// ended, and its operator status stays PAUSED.
		other := runs[0].ID
		if other == claimed[0].ID {
			other = runs[1].ID
		}
		_, err = st.SkipTaskRun(ctx, other)
		require.NoError(t, err)
		require.Equal(t, domain.RolloutDone, rolloutStatus(t, st, r.ID))
		sum, err := st.GetRolloutSummary(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, domain.RolloutPaused, sum.OperatorStatus)
		require.Equal(t, map[string]int64{"PENDING": 0, "AVAILABLE": 0, "RUNNING": 0, "DONE": 1, "FAILED": 0, "CANCELED": 0, "SKIPPED": 1}, sum.Counts)
	})
}

// TestTaskRunStatusesAreTheEngines: the schema takes exactly the task statuses the store
// names (each one set by an engine path), so NOT_STARTED, which nothing ever set, is refused.
func TestTaskRunStatusesAreTheEngines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	_, runs := newRollout(t, st, 10, task("n1", "DML", "1"))
	require.NotContains(t, domain.TaskRunStatuses, domain.TaskRunStatus("NOT_STARTED"))

	// finished_at set, so only the status constraint can refuse it.
	_, err := st.Pool.Exec(ctx, `UPDATE task_runs SET status = 'NOT_STARTED', finished_at = now(),
		waiting_cause = NULL, waiting_key = NULL WHERE id = $1`, runs[0].ID)
	require.ErrorContains(t, err, "task_runs_status_check")
	require.Equal(t, domain.TaskRunPending, statusOf(t, st, runs[0].ID).Status)

	// Every status the store names is one the schema takes (finished_at set for the
	// terminal ones, as the engine writes them).
	for _, status := range domain.TaskRunStatuses {
		_, err := st.Pool.Exec(ctx, `UPDATE task_runs SET status = $2,
			finished_at = CASE WHEN $2 IN ('PENDING', 'AVAILABLE', 'RUNNING') THEN NULL ELSE now() END,
			started_at = now(), waiting_cause = NULL, waiting_key = NULL WHERE id = $1`, runs[0].ID, status)
		require.NoError(t, err, status)
	}
}

// taskIn makes a one-task rollout on database db and drives its task to status through
// the engine's own paths: create, promote, claim, finish, cancel, skip.
func taskIn(t *testing.T, st *store.Store, db string, status domain.TaskRunStatus) store.TaskRun {
	t.Helper()
	ctx := context.Background()
	r, runs := newRollout(t, st, 1, task(db, "DDL", "1"))
	id := runs[0].ID
	switch status {
	case domain.TaskRunPending:
	case domain.TaskRunCanceled:
		_, err := st.CancelTaskRun(ctx, id)
		require.NoError(t, err)
	case domain.TaskRunSkipped:
		_, err := st.SkipTaskRun(ctx, id)
		require.NoError(t, err)
	default:
		require.Contains(t, ids(promote(t, st)), id)
		if status == domain.TaskRunAvailable {
			break
		}
		claimed, err := st.ClaimTaskRuns(ctx, r.ID, 1)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		if status == domain.TaskRunRunning {
			break
		}
		_, ok, err := st.FinishTaskRun(ctx, id, claimed[0].Attempt, status, "", nil)
		require.NoError(t, err)
		require.True(t, ok)
	}
	got := statusOf(t, st, id)
	require.Equal(t, status, got.Status)
	return got
}

// TestTaskRunOperatorTransitions proves each operator transition of a task run from every
// status: skip, cancel (not started / running) and retry either move it to the one status
// the operation sets, or refuse with ErrTaskState and leave it as it was.
func TestTaskRunOperatorTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	ops := []struct {
		name string
		do   func(context.Context, int64) (store.TaskRun, error)
		to   domain.TaskRunStatus
		from []domain.TaskRunStatus
	}{
		{"skip", st.SkipTaskRun, domain.TaskRunSkipped, []domain.TaskRunStatus{domain.TaskRunPending, domain.TaskRunAvailable, domain.TaskRunFailed, domain.TaskRunCanceled}},
		{"cancel", st.CancelTaskRun, domain.TaskRunCanceled, []domain.TaskRunStatus{domain.TaskRunPending, domain.TaskRunAvailable}},
		{"cancel running", st.CancelRunningTaskRun, domain.TaskRunCanceled, []domain.TaskRunStatus{domain.TaskRunRunning}},
		{"retry", st.RetryTaskRun, domain.TaskRunPending, []domain.TaskRunStatus{domain.TaskRunFailed, domain.TaskRunCanceled}},
	}
	for _, op := range ops {
		for _, from := range domain.TaskRunStatuses {
			allowed := false
			for _, f := range op.from {
				allowed = allowed || f == from
			}
			tr := taskIn(t, st, op.name+"/"+string(from), from)
			got, err := op.do(ctx, tr.ID)
			if !allowed {
				require.ErrorIs(t, err, store.ErrTaskState, "%s from %s", op.name, from)
				require.Equal(t, from, statusOf(t, st, tr.ID).Status, "%s from %s changed the task", op.name, from)
				continue
			}
			require.NoError(t, err, "%s from %s", op.name, from)
			require.Equal(t, op.to, got.Status, "%s from %s", op.name, from)
			require.Equal(t, op.to, statusOf(t, st, tr.ID).Status)
			require.Equal(t, op.to == domain.TaskRunPending, got.FinishedAt == nil, "finished_at of a %s task", op.to)
		}
	}
}

// TestRolloutOperatorTransitions proves each operator transition of a rollout from every
// status an operator can set: pause, resume and cancel move it, or refuse with ErrTaskState
// and leave it as it was.
func TestRolloutOperatorTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	rolloutIn := func(status domain.RolloutStatus) store.Rollout {
		r, _ := newRollout(t, st, 1, task("ro-"+string(status), "DML", "1"))
		switch status {
		case domain.RolloutPaused:
			_, err := st.SetRolloutStatus(ctx, r.ID, domain.RolloutPaused, domain.RolloutRunning)
			require.NoError(t, err)
		case domain.RolloutCanceled:
			_, _, err := st.CancelRollout(ctx, r.ID)
			require.NoError(t, err)
		}
		return r
	}
	cancel := func(ctx context.Context, id int64) (store.Rollout, error) {
		r, _, err := st.CancelRollout(ctx, id)
		return r, err
	}
	ops := []struct {
		name string
		do   func(context.Context, int64) (store.Rollout, error)
		to   domain.RolloutStatus
		from []domain.RolloutStatus
	}{
		{"pause", func(ctx context.Context, id int64) (store.Rollout, error) {
			return st.SetRolloutStatus(ctx, id, domain.RolloutPaused, domain.RolloutRunning)
		}, domain.RolloutPaused, []domain.RolloutStatus{domain.RolloutRunning}},
		{"resume", func(ctx context.Context, id int64) (store.Rollout, error) {
			return st.SetRolloutStatus(ctx, id, domain.RolloutRunning, domain.RolloutPaused)
		}, domain.RolloutRunning, []domain.RolloutStatus{domain.RolloutPaused}},
		{"cancel", cancel, domain.RolloutCanceled, []domain.RolloutStatus{domain.RolloutRunning, domain.RolloutPaused}},
	}
	for _, op := range ops {
		for _, from := range []domain.RolloutStatus{domain.RolloutRunning, domain.RolloutPaused, domain.RolloutCanceled} {
			r := rolloutIn(from)
			allowed := false
			for _, f := range op.from {
				allowed = allowed || f == from
			}
			got, err := op.do(ctx, r.ID)
			cur, gerr := st.GetRolloutSummary(ctx, r.ID)
			require.NoError(t, gerr)
			if !allowed {
				require.ErrorIs(t, err, store.ErrTaskState, "%s from %s", op.name, from)
				require.Equal(t, from, cur.OperatorStatus, "%s from %s changed the rollout", op.name, from)
				continue
			}
			require.NoError(t, err, "%s from %s", op.name, from)
			require.Equal(t, op.to, got.Status, "%s from %s", op.name, from)
			require.Equal(t, op.to, cur.OperatorStatus)
			require.Equal(t, op.to, cur.Status, "its one task is still PENDING or was canceled with it")
		}
	}
}
