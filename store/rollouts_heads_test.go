package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/store/dbgen"
)

// A heads-only round (PromoteHeads) promotes exactly the tasks a full round (PromoteTasks)
// would, from the same state: rollouts sharing databases, every task type, run_at in the
// past and future, a paused rollout, tight parallel limits, tasks finishing at random
// between rounds. Each state is tried both ways (the heads round rolled back).
func TestPromoteHeadsPromotesWhatAFullRoundWould(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	rng := rand.New(rand.NewPCG(5, 9))
	types := []string{"DDL", "SDL", "DML", "OTHER"}
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	var rollouts []store.Rollout
	for ri := 0; ri < 5; ri++ {
		var tasks []store.NewTaskRun
		for i := 0; i < 50; i++ {
			tk := task(fmt.Sprintf("db%d", rng.IntN(10)), types[rng.IntN(4)], fmt.Sprintf("1.%d", rng.IntN(8)))
			switch rng.IntN(10) {
			case 0:
				tk.RunAt = &past
			case 1:
				tk.RunAt = &future
			}
			tasks = append(tasks, tk)
		}
		r, err := st.CreateRollout(ctx, fmt.Sprintf("r%d", ri), int32(1+ri*2), tasks)
		require.NoError(t, err)
		rollouts = append(rollouts, r)
	}
	_, err := st.SetRolloutStatus(ctx, rollouts[4].ID, domain.RolloutPaused, domain.RolloutRunning)
	require.NoError(t, err)

	heads := func() []int64 {
		tx, err := st.Pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		rows, err := dbgen.New(tx).PromoteHeads(ctx, nil)
		require.NoError(t, err)
		var ids []int64
		for _, r := range rows {
			require.Equal(t, domain.TaskRunAvailable, r.Status)
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		return ids
	}
	rounds, promoted := 0, 0
	for ; rounds < 60; rounds++ {
		want := heads()
		p, err := st.PromoteRound(ctx)
		require.NoError(t, err)
		var got []int64
		for _, r := range p.Promoted {
			got = append(got, r.ID)
		}
		slices.Sort(got)
		require.Equal(t, got, want, "round %d", rounds)
		promoted += len(got)
		breaches, err := invariants.RolloutBreaches(ctx, st.Pool)
		require.NoError(t, err)
		require.Empty(t, breaches)
		// Claim some, finish some of the RUNNING ones.
		for _, r := range rollouts {
			_, err := st.ClaimTaskRuns(ctx, r.ID, 1+rng.IntN(3))
			require.NoError(t, err)
			running, err := st.RunningTaskRuns(ctx, r.ID)
			require.NoError(t, err)
			var rs []store.FinishedTaskRun
			for _, tr := range running {
				if rng.IntN(2) == 0 {
					rs = append(rs, store.FinishedTaskRun{ID: tr.ID, Attempt: tr.Attempt, TaskRunResult: domain.TaskRunResult{Status: domain.TaskRunDone}})
				}
			}
			if len(rs) > 0 {
				_, err = st.FinishTaskRuns(ctx, rs)
				require.NoError(t, err)
			}
		}
		if rounds == 30 {
			_, err := st.SetRolloutStatus(ctx, rollouts[4].ID, domain.RolloutRunning, domain.RolloutPaused)
			require.NoError(t, err)
		}
	}
	require.Greater(t, promoted, 40, "the rounds promoted plenty")
}
