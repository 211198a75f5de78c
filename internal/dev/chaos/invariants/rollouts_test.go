package invariants_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// TestRolloutBreachesFindsEachBreach writes task runs that break R1, R2 and R3 straight
// into the tables (the engine never would) and asserts that the checker names each breach,
// and nothing on a state that holds: a checker that stopped matching would let every test
// and chaos run that samples it pass.
func TestRolloutBreachesFindsEachBreach(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	exec := func(sql string) {
		t.Helper()
		_, err := st.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec(`INSERT INTO rollouts (name, parallel_limit) VALUES ('held', 2), ('broken', 1)`)
	// A state that holds: a DML and its successor waiting, one active task within the limit.
	exec(`INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status, started_at)
	      SELECT id, 'a', 'DML', '1', '1', 'noop', 'RUNNING', now() FROM rollouts WHERE name = 'held'`)
	exec(`INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status)
	      SELECT id, 'a', 'DDL', '2', '2', 'noop', 'PENDING' FROM rollouts WHERE name = 'held'`)
	breaches, err := invariants.RolloutBreaches(ctx, st.Pool)
	require.NoError(t, err)
	require.Empty(t, breaches, "a state that holds R1–R3")

	// R1 and R3: a DDL active beside a DML on database b, two active in a rollout of limit 1.
	// R2: version 5 active on database c while version 4 still waits.
	exec(`INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status, started_at)
	      SELECT id, 'b', 'DDL', '1', '1', 'noop', 'RUNNING', now() FROM rollouts WHERE name = 'broken'`)
	exec(`INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status)
	      SELECT id, 'b', 'DML', '1', '1', 'noop', 'AVAILABLE' FROM rollouts WHERE name = 'broken'`)
	exec(`INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status)
	      SELECT id, 'c', 'DML', '4', '4', 'noop', 'PENDING' FROM rollouts WHERE name = 'held'`)
	exec(`INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status)
	      SELECT id, 'c', 'DML', '5', '5', 'noop', 'AVAILABLE' FROM rollouts WHERE name = 'held'`)
	breaches, err = invariants.RolloutBreaches(ctx, st.Pool)
	require.NoError(t, err)
	var r1, r2, r3 int
	for _, b := range breaches {
		switch b[:2] {
		case "R1":
			r1++
			require.Contains(t, b, "database b")
		case "R2":
			r2++
			require.Contains(t, b, "(version 5)")
			require.Contains(t, b, "(version 4)")
		case "R3":
			r3++
			require.Contains(t, b, "limit 1")
		}
	}
	require.Equal(t, []int{1, 1, 1}, []int{r1, r2, r3}, "one breach of each: %q", breaches)
}

// TestRolloutBreachesFindsAWavePromotedEarly: W1 names a task of wave 2 promoted while wave
// 1 has not passed, and nothing once it has.
func TestRolloutBreachesFindsAWavePromotedEarly(t *testing.T) {
	ctx := context.Background()
	st := testenv.Store(t)
	exec := func(sql string) {
		t.Helper()
		_, err := st.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec(`INSERT INTO rollouts (name, parallel_limit, wave_count) VALUES ('waves', 5, 2)`)
	exec(`INSERT INTO rollout_waves (rollout_id, wave, databases, status, started_at, bake_until)
	      SELECT id, 1, '{a}'::text[], 'BAKING', now(), now() FROM rollouts UNION ALL SELECT id, 2, '{b}'::text[], 'WAITING', NULL, NULL FROM rollouts`)
	exec(`INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status, wave, promoted_at)
	      SELECT id, 'b', 'DML', '1', '1', 'noop', 'AVAILABLE', 2, now() FROM rollouts`)
	breaches, err := invariants.RolloutBreaches(ctx, st.Pool)
	require.NoError(t, err)
	require.Len(t, breaches, 1)
	require.Contains(t, breaches[0], "W1: task")
	require.Contains(t, breaches[0], "of wave 2")
	require.Contains(t, breaches[0], "while wave 1 is BAKING")
	exec(`UPDATE rollout_waves SET status = 'PASSED' WHERE wave = 1`)
	breaches, err = invariants.RolloutBreaches(ctx, st.Pool)
	require.NoError(t, err)
	require.Empty(t, breaches)
}
