package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

// The waves figure (docs/progressive.md): how soon a wave's tasks run once the wave before
// passed its health checks — from the check's pass (the wave's passed_at, recorded when the
// checks end) to each task of the next wave RUNNING (its started_at), p50 and p99 over the
// tasks of every wave but the first. The alternative a user would pick without waves, in
// the same run: a script that waits for one rollout per wave to finish, runs the same
// health check itself and then creates the next wave's rollout (as POST /rollouts does:
// rows, the rollout's workflow, a nudge of the promoter), timed from the script's pass.

var (
	flagWaveTasks = flag.Int("wave-tasks", 1000, "tasks of the waves run (one per database)")
	flagWaves     = flag.Int("waves", 5, "waves of the waves run (equal shares)")
)

// wavesResult is one engine's figures; cpu is each process's over elapsed (the first
// rollout's creation to the last task seen finished).
type wavesResult struct {
	p50, p99 time.Duration
	n        int
	elapsed  time.Duration
	cpu      benchstack.CPUSnapshot
}

func runWaves(ctx context.Context, stack *benchstack.Stack) (waves, script wavesResult, err error) {
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer health.Close()
	st, err := freshStore(ctx, stack, "bench_waves")
	if err != nil {
		return waves, script, err
	}
	defer st.Close()
	// Rollout workflow ids are rollout/<id>: ids of their own keep this run's workflows apart
	// from the end-to-end run's (whose last workflow may still be open on its task queue).
	if _, err := st.Pool.Exec(ctx, `ALTER TABLE rollouts ALTER COLUMN id RESTART WITH 1000000`); err != nil {
		return waves, script, err
	}
	cfg, err := stack.Config(stack.PG.URL("bench_waves"))
	if err != nil {
		return waves, script, err
	}
	cfg.TaskQueue = "tickgate-waves"
	if cfg.HTTPAllow, err = outbound.Parse("127.0.0.1"); err != nil { // the health server is local
		return waves, script, err
	}
	var tc client.Client
	for i := 0; i < *flagWorkers; i++ {
		c, err := cfg.DialTemporal(ctx)
		if err != nil {
			return waves, script, err
		}
		defer c.Close()
		tc = c
		w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: c})
		if err != nil {
			return waves, script, err
		}
		if err := w.Start(); err != nil {
			return waves, script, err
		}
		defer w.Stop()
	}
	s := &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue}
	dbs := make([]string, *flagWaveTasks)
	for i := range dbs {
		dbs[i] = fmt.Sprintf("tenant%04d", i)
	}
	per := (len(dbs) + *flagWaves - 1) / *flagWaves

	// 1. One rollout with waves and an HTTP health check between them.
	var ts []store.NewTaskRun
	for _, db := range dbs {
		ts = append(ts, waveBenchTask(db))
	}
	strategy := &domain.Strategy{Health: &domain.HealthCheck{HTTP: health.URL + "/health", Timeout: "10s"}}
	for w := 0; w < *flagWaves; w++ {
		strategy.Waves = append(strategy.Waves, domain.Wave{Databases: dbs[w*per : min((w+1)*per, len(dbs))]})
	}
	if err := strategy.Validate(dbs); err != nil {
		return waves, script, err
	}
	before, err := stack.CPU()
	if err != nil {
		return waves, script, err
	}
	start := time.Now()
	r, err := st.CreateRolloutWith(ctx, store.NewRollout{Name: "waves", ParallelLimit: int32(per), Strategy: strategy, Tasks: ts}) // #nosec G115 -- tasks per wave of a bench run, small
	if err != nil {
		return waves, script, err
	}
	if err := s.StartRollout(ctx, r.ID); err != nil {
		return waves, script, err
	}
	if err := s.NudgePromoter(ctx); err != nil {
		return waves, script, err
	}
	if err := waitFinished(ctx, st, []int64{r.ID}); err != nil {
		return waves, script, err
	}
	waves.elapsed = time.Since(start)
	after, err := stack.CPU()
	if err != nil {
		return waves, script, err
	}
	waves.cpu = after.Sub(before)
	var lat []time.Duration
	rows, err := st.Pool.Query(ctx, `SELECT t.started_at - w.passed_at FROM task_runs t
		JOIN rollout_waves w ON w.rollout_id = t.rollout_id AND w.wave = t.wave - 1
		WHERE t.rollout_id = $1 AND t.wave > 1`, r.ID)
	if err != nil {
		return waves, script, err
	}
	for rows.Next() {
		var d time.Duration
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return waves, script, err
		}
		lat = append(lat, d)
	}
	rows.Close()
	waves.p50, waves.p99, waves.n = percentiles(lat)

	// 2. The script: a rollout per wave, the next one created after the script's own check.
	lat = lat[:0]
	if before, err = stack.CPU(); err != nil {
		return waves, script, err
	}
	start = time.Now()
	hc := &http.Client{Timeout: 10 * time.Second}
	var prev int64
	for w := 0; w < *flagWaves; w++ {
		var passed time.Time
		if w > 0 {
			if err := waitFinished(ctx, st, []int64{prev}); err != nil {
				return waves, script, err
			}
			resp, err := hc.Get(health.URL + "/health")
			if err != nil {
				return waves, script, err
			}
			_ = resp.Body.Close()
			passed = time.Now()
		}
		var wave []store.NewTaskRun
		for _, db := range dbs[w*per : min((w+1)*per, len(dbs))] {
			wave = append(wave, waveBenchTask(db))
		}
		r, err := st.CreateRollout(ctx, fmt.Sprintf("script-wave-%d", w+1), int32(per), wave) // #nosec G115 -- tasks per wave of a bench run, small
		if err != nil {
			return waves, script, err
		}
		if err := s.StartRollout(ctx, r.ID); err != nil {
			return waves, script, err
		}
		if err := s.NudgePromoter(ctx); err != nil {
			return waves, script, err
		}
		if w > 0 {
			if err := waitStarted(ctx, st, r.ID); err != nil {
				return waves, script, err
			}
			rows, err := st.Pool.Query(ctx, `SELECT started_at FROM task_runs WHERE rollout_id = $1`, r.ID)
			if err != nil {
				return waves, script, err
			}
			for rows.Next() {
				var at time.Time
				if err := rows.Scan(&at); err != nil {
					rows.Close()
					return waves, script, err
				}
				lat = append(lat, at.Sub(passed))
			}
			rows.Close()
		}
		prev = r.ID
	}
	if err := waitFinished(ctx, st, []int64{prev}); err != nil {
		return waves, script, err
	}
	script.elapsed = time.Since(start)
	if after, err = stack.CPU(); err != nil {
		return waves, script, err
	}
	script.cpu = after.Sub(before)
	script.p50, script.p99, script.n = percentiles(lat)
	return waves, script, nil
}

func waveBenchTask(db string) store.NewTaskRun {
	return store.NewTaskRun{Database: db, Type: domain.TaskDDL, Version: "1", VersionKey: version.MustKey("1"),
		Executor: domain.ExecutorNoop, Payload: []byte(`{"sleep": "50ms"}`)}
}

// waitFinished waits until the rollouts have no unfinished task.
func waitFinished(ctx context.Context, st *store.Store, ids []int64) error {
	deadline := time.Now().Add(*flagTimeout)
	for _, id := range ids {
		for {
			n, err := st.CountUnfinished(ctx, id)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("rollout %d: %d tasks unfinished after %s", id, n, *flagTimeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// waitStarted waits until every task of the rollout has started.
func waitStarted(ctx context.Context, st *store.Store, id int64) error {
	deadline := time.Now().Add(*flagTimeout)
	for {
		var n int64
		if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_runs WHERE rollout_id = $1 AND started_at IS NULL`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			log.Printf("rollout %d: %d tasks not started", id, n)
			return fmt.Errorf("rollout %d: %d tasks not started after %s", id, n, *flagTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration, n int) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)], len(s)
}
