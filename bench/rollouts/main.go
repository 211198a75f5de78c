// Command rollouts benchmarks the rollout engine (`make bench-rollouts`): 10,000 noop tasks
// over 1,000 databases (DDL and DML mixed, versions 1–10, parallel limit 200) run end to end
// by two workers, the time of one promotion round with 10,000 PENDING, a rollout in waves
// (how soon a wave runs once the one before passed its health check, against a script that
// creates a rollout per wave; waves.go), and the same workload through a seed-style
// baseline (per-task gate queries, woken by finishes as tickgate's promoter is); for each
// path, the CPU per task run of the Temporal server, this process and PostgreSQL over its
// window. It starts its own PostgreSQL cluster and Temporal with make dev's settings (no
// dynamic config of its own), prints a Markdown table and ends with a `RESULT …` line.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/chaos/invariants"
	"github.com/tickgate/tickgate/internal/version"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

var (
	flagTasks     = flag.Int("tasks", 10000, "tasks in the rollout")
	flagDatabases = flag.Int("databases", 1000, "target databases")
	flagLimit     = flag.Int("limit", 200, "parallel limit")
	flagWorkers   = flag.Int("workers", 2, "tickgate workers")
	flagBaseline  = flag.Duration("baseline-window", 60*time.Second, "how long the seed-style baseline runs (it is slow)")
	flagTimeout   = flag.Duration("timeout", 10*time.Minute, "give up on the end-to-end run after this long")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	ctx := context.Background()
	if err := run(ctx); err != nil {
		log.Fatalf("bench-rollouts: %v", err)
	}
}

type row struct{ name, value string }

func run(ctx context.Context) error {
	// make dev's server settings: no dynamic config of the bench's own.
	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "rollouts", PGPort: 55460})
	if err != nil {
		return err
	}
	defer stack.Stop()

	tasks := workload()
	var rows []row
	add := func(name, format string, args ...any) { rows = append(rows, row{name, fmt.Sprintf(format, args...)}) }
	add("Temporal", "%s", stack.Temporal.Describe())
	add("workload", "%d noop tasks, %d databases (DDL/DML mixed, versions 1–10), parallel limit %d", len(tasks), *flagDatabases, *flagLimit)

	// 1. One promotion round with every task PENDING.
	st, err := freshStore(ctx, stack, "bench_round")
	if err != nil {
		return err
	}
	if _, err := st.CreateRollout(ctx, "round", int32(*flagLimit), tasks); err != nil { // #nosec G115 -- the bench's -limit flag, a small parallel limit
		return err
	}
	var rounds []time.Duration
	var first store.Promotion
	var roundsCPU benchstack.CPUSnapshot // of the six steady rounds
	for i := 0; i < 7; i++ {
		if i == 1 {
			if roundsCPU, err = stack.CPU(); err != nil {
				return err
			}
		}
		start := time.Now()
		p, err := st.PromoteRound(ctx)
		if err != nil {
			return err
		}
		rounds = append(rounds, time.Since(start))
		if i == 0 {
			first = p
		}
	}
	after, err := stack.CPU()
	if err != nil {
		return err
	}
	roundCPU := perOp(after.Sub(roundsCPU), int64(len(rounds)-1))
	st.Close()
	steady := slices.Clone(rounds[1:])
	slices.Sort(steady)
	add(fmt.Sprintf("promotion round, %d PENDING (first: promotes + writes every waiting cause)", len(tasks)), "%.1f ms (%d promoted, %d causes written)",
		ms(rounds[0]), len(first.Promoted), first.CausesWritten)
	add("promotion round, steady state (median of 6)", "%.1f ms", ms(steady[len(steady)/2]))
	// Not Temporal's: a round does not use it (what it spends meanwhile is its own start-up).
	add("promotion round, steady state: CPU per round: this process (the store's call) / PostgreSQL (ms)", "%.3f / %.3f", roundCPU.tickgate, roundCPU.pg)
	add("queries per round", "5 (promotion lock with JIT off, window spans ended, abort thresholds crossed, promote with waiting causes, next gate change)")

	// 2. tickgate end to end on two workers.
	e2e, err := runTickgate(ctx, stack, tasks)
	if err != nil {
		return err
	}
	tps := float64(len(tasks)) / e2e.elapsed.Seconds()
	e2eCPU := perOp(e2e.cpu, int64(len(tasks)))
	add("tickgate end to end", "%.0f tasks/s (%d tasks in %s, %d workers)", tps, len(tasks), e2e.elapsed.Round(time.Millisecond), *flagWorkers)
	add("tickgate end to end: CPU per task run: this process (the workers, the bench's invariant sampler and end poll) / PostgreSQL / Temporal (ms)", "%s", e2eCPU)
	add("R1–R3 breaches while running", "%d in %d samples", e2e.breaches, e2e.samples)

	// 3. Waves: from a wave's health pass to the next wave's tasks RUNNING, and the script a
	// user would write instead.
	wv, script, err := runWaves(ctx, stack)
	if err != nil {
		return err
	}
	add(fmt.Sprintf("waves: %d tasks (one per database) in %d waves, an HTTP health check between them", *flagWaveTasks, *flagWaves),
		"%s end to end", wv.elapsed.Round(time.Millisecond))
	add("waves: a wave's health pass → the next wave's tasks RUNNING, p50 / p99", "%.1f / %.1f ms (%d tasks)", ms(wv.p50), ms(wv.p99), wv.n)
	waveCPU, scriptCPU := perOp(wv.cpu, int64(*flagWaveTasks)), perOp(script.cpu, int64(*flagWaveTasks))
	add("waves: CPU per task run, creation to the last finish: this process (the workers, the bench's end poll) / PostgreSQL / Temporal (ms)", "%s", waveCPU)
	add("script instead (a rollout per wave, created after the script's own check passed): pass → RUNNING, p50 / p99", "%.1f / %.1f ms (%d tasks; %s end to end)",
		ms(script.p50), ms(script.p99), script.n, script.elapsed.Round(time.Millisecond))
	add("script instead: CPU per task run, first creation to the last finish: this process (the workers, the script, its polls) / PostgreSQL / Temporal (ms)", "%s", scriptCPU)

	// 4. The seed-style baseline.
	btps, bdone, belapsed, bcpu, err := runBaseline(ctx, stack, tasks)
	if err != nil {
		return err
	}
	baselineCPU := perOp(bcpu, bdone)
	add("seed-style baseline (per-task gate queries; a round whenever tasks finish, coalesced like tickgate's promoter nudges, 5 s safety poll)", "%.1f tasks/s (%d of %d tasks in %s; window %s)", btps, bdone, len(tasks), belapsed.Round(time.Millisecond), *flagBaseline)
	add("seed-style baseline: CPU per task run: this process (its two schedulers) / PostgreSQL / Temporal (unused by it: what the idle server spent) (ms)", "%s", baselineCPU)

	fmt.Println()
	fmt.Println("| figure | value |")
	fmt.Println("| --- | --- |")
	for _, r := range rows {
		fmt.Printf("| %s | %s |\n", r.name, r.value)
	}
	fmt.Println()
	fmt.Printf("RESULT tasks_per_s=%.0f promote_round_ms=%.1f baseline_tasks_per_s=%.1f promote_round_steady_ms=%.1f invariant_breaches=%d wave_pass_to_running_p50_ms=%.1f wave_pass_to_running_p99_ms=%.1f script_pass_to_running_p99_ms=%.1f %s %s %s %s promote_round_steady_cpu_ms_per_round_tickgate=%.3f promote_round_steady_cpu_ms_per_round_pg=%.3f\n",
		tps, ms(rounds[0]), btps, ms(steady[len(steady)/2]), e2e.breaches, ms(wv.p50), ms(wv.p99), ms(script.p99),
		e2eCPU.keys(""), baselineCPU.keys("baseline_"), waveCPU.keys("wave_"), scriptCPU.keys("script_"), roundCPU.tickgate, roundCPU.pg)
	return nil
}

// lastFinish is the time from start to the rollout's last finished_at.
func lastFinish(ctx context.Context, st *store.Store, rolloutID int64, start time.Time) (time.Duration, error) {
	var last time.Time
	if err := st.Pool.QueryRow(ctx, `SELECT max(finished_at) FROM task_runs WHERE rollout_id = $1`, rolloutID).Scan(&last); err != nil {
		return 0, fmt.Errorf("last finish of rollout %d: %w", rolloutID, err)
	}
	return last.Sub(start), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// workload: each database gets versions 1..10, each task DDL or DML at random, in shuffled
// order (so insertion order says nothing about version order).
func workload() []store.NewTaskRun {
	rng := rand.New(rand.NewPCG(42, 7)) // #nosec G404 -- a fixed-seed workload, the same on every run
	perDB := max(*flagTasks / *flagDatabases, 1)
	var tasks []store.NewTaskRun
	for db := 0; db < *flagDatabases; db++ {
		for v := 1; v <= perDB; v++ {
			typ := domain.TaskDML
			if rng.IntN(2) == 0 {
				typ = domain.TaskDDL
			}
			vs := fmt.Sprint(v)
			tasks = append(tasks, store.NewTaskRun{Database: fmt.Sprintf("db%04d", db), Type: typ, Version: vs,
				VersionKey: version.MustKey(vs), Executor: domain.ExecutorNoop, Payload: []byte(`{}`)})
		}
	}
	rng.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	return tasks
}

func freshStore(ctx context.Context, stack *benchstack.Stack, name string) (*store.Store, error) {
	url, err := stack.FreshDatabase(ctx, name)
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, url) // make dev's pool size
}

// e2eResult is tickgate's end-to-end run: its length (rows in place → last finished_at),
// the invariant samples taken and breaches seen meanwhile, and each process's CPU from the
// rollout's start to its last task seen finished.
type e2eResult struct {
	elapsed           time.Duration
	breaches, samples int
	cpu               benchstack.CPUSnapshot
}

func runTickgate(ctx context.Context, pg *benchstack.Stack, tasks []store.NewTaskRun) (e2eResult, error) {
	var res e2eResult
	st, err := freshStore(ctx, pg, "bench_e2e")
	if err != nil {
		return res, err
	}
	defer st.Close()
	cfg, err := pg.Config(pg.PG.URL("bench_e2e"))
	if err != nil {
		return res, err
	}
	var clients []client.Client
	for i := 0; i < *flagWorkers; i++ {
		tc, err := cfg.DialTemporal(ctx)
		if err != nil {
			return res, err
		}
		defer tc.Close()
		clients = append(clients, tc)
		w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: tc})
		if err != nil {
			return res, err
		}
		if err := w.Start(); err != nil {
			return res, err
		}
		defer w.Stop()
	}
	s := &starter.Starter{Client: clients[0], TaskQueue: cfg.TaskQueue}

	var breaches, samples atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			b, err := invariants.RolloutBreaches(ctx, st.Pool)
			if err == nil {
				samples.Add(1)
				breaches.Add(int64(len(b)))
				for _, x := range b {
					log.Printf("BREACH %s", x)
				}
			}
		}
	}()

	// Both engines are timed from their rollout's rows being in place to its last finish
	// (finished_at, read from the database for both).
	r, err := st.CreateRollout(ctx, "bench", int32(*flagLimit), tasks) // #nosec G115 -- the bench's -limit flag, a small parallel limit
	if err != nil {
		return res, err
	}
	before, err := pg.CPU()
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := s.StartRollout(ctx, r.ID); err != nil {
		return res, err
	}
	if err := s.NudgePromoter(ctx); err != nil {
		return res, err
	}
	deadline := time.Now().Add(*flagTimeout)
	lastLog := time.Now()
	for {
		n, err := st.CountUnfinished(ctx, r.ID)
		if err != nil {
			return res, err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("end-to-end run: %d tasks unfinished after %s", n, *flagTimeout)
		}
		if time.Since(lastLog) > 5*time.Second {
			log.Printf("tickgate: %d tasks left", n)
			lastLog = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	after, err := pg.CPU()
	if err != nil {
		return res, err
	}
	res.cpu = after.Sub(before)
	if res.elapsed, err = lastFinish(ctx, st, r.ID, start); err != nil {
		return res, err
	}
	close(stop)
	wg.Wait()
	res.breaches, res.samples = int(breaches.Load()), int(samples.Load())
	return res, nil
}

// runBaseline is seed 000's design: a pending scheduler that reads the PENDING tasks and
// checks each one's gates with its own queries (run_at, smaller version, database busy,
// rollout count) plus in-memory tracking for the round, promoting one UPDATE at a time; and
// a running scheduler, tickled after each round, that claims AVAILABLE tasks one by one
// (`UPDATE … WHERE id = ? AND status = 'AVAILABLE'`) and runs them in goroutines.
//
// So that its loop is not capped by construction (a round every 5 s moves at most the
// parallel limit per 5 s), it gets tickgate's cadence: every finish wakes the pending
// scheduler, coalesced over activities.NudgeDelay as tickgate's finishes nudge its promoter,
// and 5 s stays only as the seed's safety poll. Each round promotes what the gates allow,
// as tickgate's does; each claim takes every AVAILABLE task, as many as tickgate's claim
// batch would.
func runBaseline(ctx context.Context, pg *benchstack.Stack, tasks []store.NewTaskRun) (float64, int64, time.Duration, benchstack.CPUSnapshot, error) {
	st, err := freshStore(ctx, pg, "bench_baseline")
	if err != nil {
		return 0, 0, 0, benchstack.CPUSnapshot{}, err
	}
	defer st.Close()
	r, err := st.CreateRollout(ctx, "baseline", int32(*flagLimit), tasks) // #nosec G115 -- the bench's -limit flag, a small parallel limit
	if err != nil {
		return 0, 0, 0, benchstack.CPUSnapshot{}, err
	}
	var done atomic.Int64
	before, err := pg.CPU()
	if err != nil {
		return 0, 0, 0, benchstack.CPUSnapshot{}, err
	}
	start := time.Now()
	deadline := start.Add(*flagBaseline)
	tickleRunning := make(chan struct{}, 1)
	ticklePending := make(chan struct{}, 1)
	tickle := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	wg.Add(1)
	go func() { // running scheduler
		defer wg.Done()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tickleRunning:
			case <-time.After(5 * time.Second):
			}
			rows, err := st.Pool.Query(runCtx, "SELECT id FROM task_runs WHERE status = 'AVAILABLE' ORDER BY id")
			if err != nil {
				continue
			}
			ids, _ := pgx.CollectRows(rows, pgx.RowTo[int64])
			for _, id := range ids {
				tag, err := st.Pool.Exec(runCtx, "UPDATE task_runs SET status = 'RUNNING', started_at = now(), attempt = attempt + 1 WHERE id = $1 AND status = 'AVAILABLE'", id)
				if err != nil || tag.RowsAffected() != 1 {
					continue
				}
				wg.Add(1)
				go func(id int64) {
					defer wg.Done()
					if _, err := st.Pool.Exec(runCtx, "UPDATE task_runs SET status = 'DONE', finished_at = now() WHERE id = $1 AND status = 'RUNNING'", id); err == nil {
						done.Add(1)
						tickle(ticklePending)
					}
				}(id)
			}
		}
	}()

	for time.Now().Before(deadline) && done.Load() < int64(len(tasks)) { // pending scheduler
		if err := baselineRound(runCtx, st, r.ParallelLimit); err != nil && runCtx.Err() == nil {
			return 0, 0, 0, benchstack.CPUSnapshot{}, err
		}
		tickle(tickleRunning)
		select {
		case <-runCtx.Done():
		case <-ticklePending:
			// Gather the finishes of a moment into one round, as tickgate's nudger does.
			time.Sleep(activities.NudgeDelay)
		case <-time.After(5 * time.Second):
		}
	}
	elapsed := min(time.Since(start), *flagBaseline)
	cancel()
	wg.Wait()
	after, err := pg.CPU()
	if err != nil {
		return 0, 0, 0, benchstack.CPUSnapshot{}, err
	}
	if done.Load() == int64(len(tasks)) { // all done: up to the last finish, as tickgate's run is timed
		if elapsed, err = lastFinish(ctx, st, r.ID, start); err != nil {
			return 0, 0, 0, benchstack.CPUSnapshot{}, err
		}
	}
	return float64(done.Load()) / elapsed.Seconds(), done.Load(), elapsed, after.Sub(before), nil
}

func baselineRound(ctx context.Context, st *store.Store, limit int32) error {
	rows, err := st.Pool.Query(ctx, "SELECT id, rollout_id, database, type, version_key, run_at FROM task_runs WHERE status = 'PENDING' ORDER BY id")
	if err != nil {
		return err
	}
	type pending struct {
		id, rollout  int64
		db, typ, key string
		runAt        *time.Time
	}
	var ps []pending
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.id, &p.rollout, &p.db, &p.typ, &p.key, &p.runAt); err != nil {
			rows.Close()
			return err
		}
		ps = append(ps, p)
	}
	rows.Close()
	availableDBs := map[string]bool{}
	for _, p := range ps {
		if p.runAt != nil && p.runAt.After(time.Now()) {
			continue
		}
		var blocked bool
		if err := st.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM task_runs WHERE database = $1 AND version_key < $2
			AND status IN ('PENDING', 'AVAILABLE', 'RUNNING'))`, p.db, p.key).Scan(&blocked); err != nil {
			return err
		}
		if blocked {
			continue
		}
		seq := p.typ == "DDL" || p.typ == "SDL"
		if seq {
			if availableDBs[p.db] {
				continue
			}
			var busy bool
			if err := st.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM task_runs WHERE database = $1
				AND status IN ('AVAILABLE', 'RUNNING'))`, p.db).Scan(&busy); err != nil {
				return err
			}
			if busy {
				continue
			}
		}
		var current int64
		if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM task_runs WHERE rollout_id = $1
			AND status IN ('AVAILABLE', 'RUNNING')`, p.rollout).Scan(&current); err != nil {
			return err
		}
		// The seed adds its in-memory count to this one; the UPDATEs below are already
		// committed and counted here, so the baseline counts them once (in its favour).
		if current >= int64(limit) {
			continue
		}
		if _, err := st.Pool.Exec(ctx, "UPDATE task_runs SET status = 'AVAILABLE' WHERE id = $1 AND status = 'PENDING'", p.id); err != nil {
			return err
		}
		availableDBs[p.db] = true
	}
	return nil
}
