package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// Each gate is one SQL function (store/schema.sql): NULL when a task passes it, else its
// reason, its compact key and, asked for detail, the cause the API shows. Every gate is
// called here on its own, passing and holding, with and without detail, and the
// composition (rollout_wait_for) is asked for the first that holds.
func TestEachGateFunctionSaysWhetherItHoldsAndWhy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	// A rollout's row, a freeze's and an open wave's, to hand the gates that read them.
	r, err := st.CreateRolloutWith(ctx, store.NewRollout{Name: "gates", ParallelLimit: 3,
		Strategy: &domain.Strategy{Waves: []domain.Wave{{Databases: []string{"a"}}, {Percent: intp(100)}}},
		Tasks:    []store.NewTaskRun{task("a", "DML", "1"), task("b", "DML", "1")}})
	require.NoError(t, err)
	f, err := st.SetFreeze(ctx, &r.ID, "audit", store.Actor{Label: "token 3 (carol)"})
	require.NoError(t, err)

	type wait struct {
		Reason, Key string
		Cause       map[string]any
	}
	gate := func(expr string, args ...any) *wait {
		t.Helper()
		var reason, key *string
		var cause []byte
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT (w).reason, (w).key, (w).cause FROM (SELECT `+expr+` AS w) x`, args...).Scan(&reason, &key, &cause), expr)
		if reason == nil {
			return nil
		}
		w := &wait{Reason: *reason, Key: *key}
		if cause != nil {
			require.NoError(t, json.Unmarshal(cause, &w.Cause))
		}
		return w
	}
	rollout := `(SELECT r FROM rollouts r WHERE r.id = $1)`
	wave := `(SELECT w FROM rollout_waves w WHERE w.rollout_id = $1 AND w.wave = 1)`
	now := time.Now().UTC().Truncate(time.Second)

	// freeze
	require.Nil(t, gate(`rollout_gate_freeze(NULL::freezes, true)`))
	w := gate(`rollout_gate_freeze((SELECT f FROM freezes f WHERE f.id = $1), true)`, f.ID)
	require.Equal(t, "frozen", w.Reason)
	require.Equal(t, fmt.Sprintf("frozen:%d", f.ID), w.Key)
	require.Equal(t, "rollout frozen by token 3 (carol): audit", w.Cause["message"])
	require.Nil(t, gate(`rollout_gate_freeze((SELECT f FROM freezes f WHERE f.id = $1), false)`, f.ID).Cause, "no detail asked: no cause built")

	// wave: wave 2 waits while wave 1 runs; wave 1 passes.
	require.Nil(t, gate(`rollout_gate_wave(1, `+rollout+`, `+wave+`, true)`, r.ID))
	w = gate(`rollout_gate_wave(2, `+rollout+`, `+wave+`, true)`, r.ID)
	require.Equal(t, "wave", w.Reason)
	require.Equal(t, "wave:2:1:wave_running", w.Key)
	require.Equal(t, "wave 2 waits: wave 1 is running", w.Cause["message"])
	w = gate(`rollout_gate_wave(3, `+rollout+`, `+wave+`, true)`, r.ID)
	require.Equal(t, "wave 3 waits: wave 2 has not started", w.Cause["message"])

	// paused
	require.Nil(t, gate(`rollout_gate_paused(`+rollout+`, true)`, r.ID))
	_, err = st.SetRolloutStatusFor(ctx, r.ID, domain.RolloutPaused, "paused by token 3 (carol)", domain.RolloutRunning)
	require.NoError(t, err)
	w = gate(`rollout_gate_paused(`+rollout+`, true)`, r.ID)
	require.Equal(t, "rollout_paused", w.Reason)
	require.Equal(t, "rollout paused: paused by token 3 (carol)", w.Cause["message"])

	// window: none set passes; outside a span holds, naming the opening.
	require.Nil(t, gate(`rollout_gate_window(`+rollout+`, now(), true)`, r.ID))
	opens := now.Add(time.Hour)
	_, err = st.Pool.Exec(ctx, `UPDATE rollouts SET window_start = $2, window_end = $3 WHERE id = $1`, r.ID, opens, opens.Add(time.Hour))
	require.NoError(t, err)
	w = gate(`rollout_gate_window(`+rollout+`, $2, true)`, r.ID, now)
	require.Equal(t, "window", w.Reason)
	require.Equal(t, fmt.Sprintf("window:%d", opens.Unix()), w.Key)
	require.Equal(t, opens.Format(time.RFC3339), w.Cause["opens_at"])
	require.Nil(t, gate(`rollout_gate_window(`+rollout+`, $2, true)`, r.ID, opens), "the clock in the span")

	// time
	require.Nil(t, gate(`rollout_gate_time(NULL, $1, true)`, now))
	require.Nil(t, gate(`rollout_gate_time($1, $1, true)`, now), "run_at reached")
	w = gate(`rollout_gate_time($1, $2, true)`, now.Add(time.Second), now)
	require.Equal(t, "run_at", w.Key)
	require.Equal(t, now.Add(time.Second).Format("2006-01-02T15:04:05.000000Z"), w.Cause["run_at"])

	// version: no task before it passes.
	require.Nil(t, gate(`rollout_gate_version(NULL, NULL, true)`))
	w = gate(`rollout_gate_version(41, '1.9', true)`)
	require.Equal(t, "version:41", w.Key)
	require.EqualValues(t, 41, w.Cause["blocked_by_task"])
	require.Equal(t, "1.9", w.Cause["blocked_by_version"])

	// DDL (R1): a DML task passes a DML busy one; DDL on either side holds.
	require.Nil(t, gate(`rollout_gate_ddl(true, NULL, NULL, true)`))
	require.Nil(t, gate(`rollout_gate_ddl(false, 7, false, true)`))
	require.Equal(t, "database_busy:7", gate(`rollout_gate_ddl(true, 7, false, true)`).Key)
	w = gate(`rollout_gate_ddl(false, 7, true, true)`)
	require.Equal(t, "database_busy", w.Reason)
	require.EqualValues(t, 7, w.Cause["busy_task"])

	// parallel (R3): active below the limit passes.
	require.Nil(t, gate(`rollout_gate_parallel(`+rollout+`, 2, true)`, r.ID))
	require.Nil(t, gate(`rollout_gate_parallel(`+rollout+`, NULL, true)`, r.ID), "not asked")
	w = gate(`rollout_gate_parallel(`+rollout+`, 3, true)`, r.ID)
	require.Equal(t, "parallel_limit:3", w.Key)
	require.EqualValues(t, 3, w.Cause["limit"])

	// rate: none, or room left, passes.
	require.Nil(t, gate(`rollout_gate_rate(NULL, 5, true)`))
	require.Nil(t, gate(`rollout_gate_rate(6, 5, true)`))
	w = gate(`rollout_gate_rate(5, 5, true)`)
	require.Equal(t, "rate:5", w.Key)
	require.Equal(t, "rate: 5 tasks started in the last minute", w.Cause["message"])

	// The composition: the first gate that holds wins; one that passes all is queued.
	compose := func(freeze string, wv int, runAt *time.Time, before *int64, busy *int64, active int64) *wait {
		t.Helper()
		return gate(`rollout_wait_for($2, `+rollout+`, `+freeze+`, `+wave+`, $3, $4, false, $5, '1', $6, false, $7, 3, NULL, true)`,
			r.ID, opens, wv, runAt, before, busy, active)
	}
	frozen := `(SELECT f FROM freezes f WHERE f.id = freeze_in_force($1))`
	later := opens.Add(time.Minute)
	before, busy := int64(41), int64(7)
	require.Equal(t, "frozen", compose(frozen, 2, &later, &before, &busy, 3).Reason, "the freeze comes first")
	require.Equal(t, "wave", compose("NULL::freezes", 2, &later, &before, &busy, 3).Reason)
	require.Equal(t, "rollout_paused", compose("NULL::freezes", 1, &later, &before, &busy, 3).Reason)
	_, err = st.SetRolloutStatus(ctx, r.ID, domain.RolloutRunning, domain.RolloutPaused)
	require.NoError(t, err)
	require.Equal(t, "run_at", compose("NULL::freezes", 1, &later, &before, &busy, 3).Reason, "the clock is in the window")
	require.Equal(t, "version", compose("NULL::freezes", 1, nil, &before, &busy, 3).Reason)
	require.Equal(t, "parallel_limit", compose("NULL::freezes", 1, nil, nil, &busy, 3).Reason, "a DML task passes a DML busy task")
	require.Equal(t, "queued", compose("NULL::freezes", 1, nil, nil, nil, 2).Reason)
}

// The gates hold with several promoters and claimers at once on rollouts that use every
// gate: waves (W1), a rate, windows (one open, one not), freezes set and lifted meanwhile, a
// pause, run_at, R1–R3 across rollouts sharing databases. After every round R1–R3 and W1 hold
// (the independent check), every task is claimed once (R4), nothing is claimed while
// frozen, no window-bound task of the closed window is promoted, and the rated rollout
// never promotes more in a minute than its rate.
func TestEveryGateHoldsUnderConcurrentPromotersAndClaimers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testenv.Store(t)
	rng := rand.New(rand.NewPCG(11, 13))
	types := []string{"DDL", "SDL", "DML", "OTHER"}
	now := time.Now().UTC()
	soon := now.Add(300 * time.Millisecond)
	// Rollouts that are held back (the rate, the closed window) have databases of their own,
	// so they do not hold the others behind them by version order (R2).
	tasksFor := func(n int, dbs string) []store.NewTaskRun {
		var ts []store.NewTaskRun
		for i := 0; i < n; i++ {
			tk := task(fmt.Sprintf("%s%d", dbs, rng.IntN(6)), types[rng.IntN(4)], fmt.Sprintf("1.%d", rng.IntN(8)))
			if rng.IntN(8) == 0 {
				tk.RunAt = &soon
			}
			ts = append(ts, tk)
		}
		return ts
	}
	// The window every day at an hour at least two ahead: never open during the test.
	closed := now.Truncate(time.Hour).Add(2 * time.Hour)
	open := now.Add(-time.Minute)
	strategies := []*domain.Strategy{
		nil,
		{Rate: &domain.Rate{PerMinute: intp(7)}},
		{Windows: []domain.Window{{Cron: fmt.Sprintf("%d %d * * *", open.Minute(), open.Hour()), Duration: "2h"}}},
		{Windows: []domain.Window{{Cron: fmt.Sprintf("0 %d * * *", closed.Hour()), Duration: "30m"}}},
		nil,
	}
	var rollouts []store.Rollout
	total := 0
	for i, s := range strategies {
		ts := tasksFor(30, map[int]string{1: "rated", 3: "closed"}[i]+"db")
		r, err := st.CreateRolloutWith(ctx, store.NewRollout{Name: fmt.Sprint(i), ParallelLimit: int32(2 + i), Strategy: s, Tasks: ts})
		require.NoError(t, err)
		rollouts = append(rollouts, r)
		total += len(ts)
	}
	// A rollout in two waves whose first wave never passes: its wave 2 never starts.
	waves := &domain.Strategy{Waves: []domain.Wave{{Databases: []string{"w1"}}, {Databases: []string{"w2"}}}}
	wr, err := st.CreateRolloutWith(ctx, store.NewRollout{Name: "waves", ParallelLimit: 5, Strategy: waves,
		Tasks: []store.NewTaskRun{task("w1", "DML", "1"), task("w1", "DML", "2"), task("w2", "DML", "1")}})
	require.NoError(t, err)
	rated, closedRollout := rollouts[1], rollouts[3]

	var (
		mu      sync.Mutex
		claimed = map[int64]int{}
		errs    = make(chan error, 16)
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		frozen  sync.RWMutex // held for writing while a freeze is being set or in force
	)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for p := 0; p < 3; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if p == 0 {
					_, err = st.PromoteHeadsRound(ctx)
				} else {
					_, err = st.PromoteRound(ctx)
				}
				if err != nil {
					fail(err)
					return
				}
				b, err := invariants.RolloutBreaches(ctx, st.Pool)
				if err != nil || len(b) > 0 {
					fail(fmt.Errorf("after a round: %v %v", b, err))
					return
				}
			}
		}()
	}
	all := append(append([]store.Rollout(nil), rollouts...), wr)
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				frozen.RLock()
				for _, r := range all {
					got, err := st.ClaimTaskRuns(ctx, r.ID, 2)
					if err != nil {
						frozen.RUnlock()
						fail(err)
						return
					}
					var rs []store.FinishedTaskRun
					mu.Lock()
					for _, g := range got {
						if claimed[g.ID]++; claimed[g.ID] > 1 {
							fail(fmt.Errorf("R4: task %d claimed twice", g.ID))
						}
						rs = append(rs, store.FinishedTaskRun{ID: g.ID, Attempt: g.Attempt, TaskRunResult: domain.TaskRunResult{Status: domain.TaskRunDone}})
					}
					mu.Unlock()
					if len(rs) > 0 {
						if _, err := st.FinishTaskRuns(ctx, rs); err != nil {
							frozen.RUnlock()
							fail(err)
							return
						}
					}
				}
				frozen.RUnlock()
			}
		}()
	}
	// The freezer: now and then everything is frozen; no claim may take a task meanwhile.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
			frozen.Lock()
			if _, err := st.SetFreeze(ctx, nil, "drill", store.Actor{Label: "test"}); err != nil {
				frozen.Unlock()
				fail(err)
				return
			}
			frozen.Unlock()
			for _, r := range all {
				if got, err := st.ClaimTaskRuns(ctx, r.ID, 5); err != nil || len(got) > 0 {
					fail(fmt.Errorf("claimed %d tasks of rollout %d while frozen (%v)", len(got), r.ID, err))
				}
			}
			if _, err := st.LiftFreeze(ctx, nil, store.Actor{Label: "test"}); err != nil {
				fail(err)
				return
			}
			if i == 3 {
				if _, err := st.SetRolloutStatus(ctx, rollouts[4].ID, domain.RolloutPaused, domain.RolloutRunning); err != nil {
					fail(err)
				}
			}
			if i == 6 {
				if _, err := st.SetRolloutStatus(ctx, rollouts[4].ID, domain.RolloutRunning, domain.RolloutPaused); err != nil {
					fail(err)
				}
			}
		}
	}()

	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var maxPerMinute, closedPromoted, wave2Promoted, done int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT coalesce(max(n), 0) FROM (
		SELECT count(*) OVER (ORDER BY promoted_at RANGE BETWEEN '1 minute'::interval PRECEDING AND CURRENT ROW) AS n
		FROM task_runs WHERE rollout_id = $1 AND promoted_at IS NOT NULL) x`, rated.ID).Scan(&maxPerMinute))
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_runs WHERE rollout_id = $1 AND promoted_at IS NOT NULL`, closedRollout.ID).Scan(&closedPromoted))
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_runs WHERE rollout_id = $1 AND wave = 2 AND promoted_at IS NOT NULL`, wr.ID).Scan(&wave2Promoted))
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_runs WHERE status = 'DONE'`).Scan(&done))
	require.LessOrEqual(t, maxPerMinute, 7, "the rate: at most 7 promoted in any minute")
	require.Positive(t, maxPerMinute, "the rated rollout ran")
	require.Zero(t, closedPromoted, "nothing promoted outside every window")
	require.Zero(t, wave2Promoted, "wave 2 waits for wave 1 to pass")
	require.Greater(t, done, total/3, "the rounds promoted plenty: %d of %d done", done, total)
}
