package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/chaos/histories"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

// Options are a run's inputs besides its profile.
type Options struct {
	// Binary is the tickgate binary the workers, API and agent simulator run from.
	Binary string
	// Dir holds the run's clusters and logs; it is created and left for inspection.
	Dir string
	// Seed makes the fault plan reproducible; 0 picks one.
	Seed uint64
	// Out receives the progress lines and the report.
	Out io.Writer
	// Temporal is the server the run attacks: TemporalDev (the CLI's dev server, SQLite,
	// one shard; the default) or TemporalServer (the real server on PostgreSQL, several
	// history shards: the production shape).
	Temporal string
}

// The Temporal shapes a run can use.
const (
	TemporalDev    = "dev"
	TemporalServer = "server"
)

// Report is a run's outcome.
type Report struct {
	Profile      Profile
	Temporal     string // the shape the run used
	Seed         uint64
	Faults       []Injected
	Checks       []CheckResult
	Unreachable  int // samples that could not reach PostgreSQL (during its restart)
	Final        FinalCounts
	Capped       CapCounts
	Breaches     int64
	SettleTime   time.Duration
	SettleReason string
	Elapsed      time.Duration
	// Triggers are the manual triggers of resting schedules the API answered during the
	// faults; TriggersFailed those it did not take within a minute of resends.
	Triggers, TriggersFailed int
	// Histories are the linearizability checks of the clients' histories.
	Histories []histories.Result
}

// Linearizable is true when every recorded history was checked and found linearizable.
func (r *Report) Linearizable() bool {
	for _, h := range r.Histories {
		if !h.Passed() {
			return false
		}
	}
	return len(r.Histories) > 0
}

// Passed is true when no invariant was broken, everything finished, no tick was MISSED (no
// outage of the run outlasts the catch-up window), every history is linearizable, and the
// waves rollout stopped at its failed wave.
func (r *Report) Passed() bool {
	return r.Breaches == 0 && r.Final.Duplicates == 0 && r.Final.LostTicks == 0 && r.Final.Missed == 0 && r.Final.FalseOutcomes == 0 && r.Final.HTTPBreaches == 0 && r.Unfinished() == 0 && r.faultErrors() == 0 &&
		r.Linearizable() &&
		(r.Profile.WaveDatabases == 0 || r.Final.Waves.Held(r.Profile)) && r.Capped.OverCap == 0 && r.Capped.Unread == 0
}

// Unfinished counts the work that did not reach a final state.
func (r *Report) Unfinished() int64 {
	return r.Final.UnfinishedTasks + r.Final.UnfinishedDeviceExecutions + r.Final.UnfinishedDeviceTasks + r.Final.UnfinishedScheduleRuns
}

func (r *Report) faultErrors() int {
	n := 0
	for _, f := range r.Faults {
		if f.Err != nil {
			n++
		}
	}
	return n
}

// Run brings up the stack, loads it, injects the profile's faults while sampling the
// invariants, lets the work settle and checks the end state.
func Run(ctx context.Context, p Profile, opts Options) (*Report, error) {
	start := time.Now()
	if opts.Seed == 0 {
		opts.Seed = rand.Uint64() // #nosec G404 -- a chaos run's seed, printed so that the run can be repeated
	}
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(out, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil { // #nosec G301 -- the chaos run's report directory, meant to be read
		return nil, fmt.Errorf("chaos: run dir: %w", err)
	}
	if opts.Temporal == "" {
		opts.Temporal = TemporalDev
	}
	if opts.Temporal != TemporalDev && opts.Temporal != TemporalServer {
		return nil, fmt.Errorf("chaos: temporal %q: want %q or %q", opts.Temporal, TemporalDev, TemporalServer)
	}
	logf("chaos: profile %s, temporal %s, seed %d, logs in %s", p.Name, opts.Temporal, opts.Seed, opts.Dir)
	s, err := startStack(ctx, opts.Dir, opts.Binary, opts.Temporal, logf)
	defer func() {
		if s != nil {
			if err := s.close(); err != nil {
				logf("chaos: stopping the stack: %v", err)
			}
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("chaos: start stack: %w", err)
	}
	taskQueue := "tickgate"
	if s.sqlTargets, err = s.createWaveTargets(ctx, p); err != nil {
		return nil, err
	}
	if err := s.startProcesses(ctx, p, taskQueue); err != nil {
		return nil, fmt.Errorf("chaos: start processes: %w", err)
	}
	logf("chaos: postgres %s, temporal %s %s (UI %s), APIs %s, %d workers", s.dbURL, opts.Temporal, s.temporal.Address(), s.temporal.UIAddress(),
		strings.Join(s.apiAddrs, " "), len(s.workers))

	stopTargets, err := startTargetWorker(ctx, s.temporal.Address(), "chaos-targets", filepath.Join(opts.Dir, "targets.log"))
	if err != nil {
		return nil, err
	}
	defer stopTargets()
	hooks, err := startHTTPLoad()
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer hooks.rcv.Close()

	st, err := store.Open(ctx, s.dbURL)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	defer st.Close()
	pool := st.Pool

	api := newAPIClient(s.adminToken, s.apiAddrs)
	l, err := createLoad(ctx, api, p, "chaos-targets", hooks)
	if err != nil {
		return nil, fmt.Errorf("chaos: create load: %w", err)
	}
	if err := s.startAgents(p, l.pcNames); err != nil {
		return nil, err
	}
	logf("chaos: load created: %d + %d + %d + %d capped schedules from %s, rollout %d with %d tasks, %d PCs × %d devices, %d device tasks, waves rollout %d over %d tenants (%s broken)",
		p.EventSchedules, p.WorkflowSchedules+p.RestingSchedules, p.HTTPSchedules, p.CappedSchedules, l.startAt.Format(time.RFC3339), l.rolloutID, p.RolloutTasks, p.PCs, p.DevicesPerPC, p.DeviceTasks,
		l.wavesRolloutID, p.WaveDatabases, brokenOrNone(p))

	// The recorded clients (their histories are checked at the end): the command schedules'
	// clients during the faults, the external executors until the work has settled.
	recorder := newRecordingClient(s.adminToken, s.apiAddrs)
	commands := &commandDriver{c: recorder, h: newHistory(), logf: logf}
	external := &externalExecutors{c: recorder, h: newHistory(), rolloutID: l.externalRolloutID}
	externalCtx, stopExternal := context.WithCancel(ctx)
	defer stopExternal()
	externalDone := make(chan struct{})
	go func() {
		defer close(externalDone)
		if l.externalRolloutID != 0 {
			external.run(externalCtx)
		}
	}()

	wavesID := l.wavesRolloutID
	chk := newChecker(st, wavesCheck(&wavesID), hooks.httpCheck(pool))
	checkCtx, stopChecks := context.WithCancel(ctx)
	defer stopChecks()
	checksDone := make(chan struct{})
	go func() { defer close(checksDone); chk.run(checkCtx, time.Second) }()

	// Faults start once the schedules have begun to fire.
	sleepCtx(ctx, time.Until(l.startAt.Add(5*time.Second)))
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed>>1|1)) // #nosec G404 -- the fault plan's generator, seeded so that a run repeats
	plan := planFaults(p, rng)
	wirePlan := planWire(p, rng)
	logf("chaos: fault phase: %d process faults and %d network faults over %s", len(plan), len(wirePlan), p.FaultPhase)
	faultStart := time.Now()
	driveCtx, stopDriving := context.WithDeadline(ctx, faultStart.Add(p.FaultPhase))
	defer stopDriving()
	var triggersSent, triggersFailed int
	triggersDone, driven := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(triggersDone)
		triggersSent, triggersFailed = triggerResting(driveCtx, api, p, l.resting, logf)
	}()
	go func() { defer close(driven); driveCapped(driveCtx, api, p, l, logf) }()
	commanded := make(chan struct{})
	go func() { defer close(commanded); commands.drive(driveCtx, p, opts.Seed) }()
	var wireFaults []Injected
	wireDone := make(chan struct{})
	go func() {
		defer close(wireDone)
		// A generator of its own: the worker picked for a split does not shift the process plan.
		wireRng := rand.New(rand.NewPCG(opts.Seed^0x77697265, opts.Seed>>2|1)) // #nosec G404 -- the network faults' generator, seeded so that a run repeats
		wireFaults = (&injector{p: p, s: s, pool: pool, rng: wireRng, logf: logf}).runWire(ctx, faultStart, wirePlan)
	}()
	faults := (&injector{p: p, s: s, pool: pool, rng: rng, logf: logf}).run(ctx, faultStart, plan)
	<-wireDone
	faults = append(faults, wireFaults...)
	slices.SortStableFunc(faults, func(a, b Injected) int { return a.At.Compare(b.At) })
	sleepCtx(ctx, time.Until(faultStart.Add(p.FaultPhase)))
	stopDriving()
	<-triggersDone
	<-driven
	<-commanded
	commands.finish(ctx, p)
	logf("chaos: %d manual triggers of resting schedules answered during the faults, %d failed", triggersSent, triggersFailed)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	// Settle: every tick up to the cutoff recorded, every task run and device execution final.
	cutoff := time.Now().UTC().Truncate(time.Second)
	logf("chaos: faults done; settling (ticks up to %s, all task runs and device executions final)", cutoff.Format(time.RFC3339))
	settleStart := time.Now()
	var why string
	lastLog := time.Now()
	for {
		ok, reason, err := settled(ctx, st.Pool, cutoff, l.wavesRolloutID)
		if err == nil {
			why = reason
			if ok {
				break
			}
		}
		if time.Since(settleStart) > p.Settle || ctx.Err() != nil {
			logf("chaos: not settled after %s: %s", p.Settle, why)
			break
		}
		if time.Since(lastLog) >= 10*time.Second {
			logf("chaos: settling: %s", why)
			lastLog = time.Now()
		}
		sleepCtx(ctx, 2*time.Second)
	}
	settleTime := time.Since(settleStart)
	stopExternal()
	<-externalDone
	external.read(ctx, "final read")
	logf("chaos: settled in %s; pausing the schedules and draining their runs", settleTime.Round(time.Millisecond))
	pauseStart := time.Now()
	reached, err := pauseBySelector(ctx, api)
	if err != nil {
		logf("chaos: pause by selector: %v", err)
	}
	logf("chaos: paused %d schedules by selector in %s", reached, time.Since(pauseStart).Round(time.Millisecond))
	if err := pauseAll(ctx, api, pool); err != nil {
		logf("chaos: pause: %v", err)
	}
	drainStart := time.Now()
	if left := drainRuns(ctx, pool, 2*time.Minute); left > 0 {
		logf("chaos: %d schedule runs still RUNNING after %s", left, time.Since(drainStart).Round(time.Second))
	} else {
		logf("chaos: runs drained in %s", time.Since(drainStart).Round(time.Millisecond))
	}

	stopChecks()
	<-checksDone
	s.stopAgents()
	hist, err := checkHistories(ctx, s, pool, commands.h, external.h, opts.Dir)
	if err != nil {
		return nil, err
	}
	for _, h := range hist {
		logf("chaos: history %s", h)
	}
	if err := chk.sample(ctx, true); err != nil {
		logf("chaos: last sample: %v", err)
	}
	final, err := finalCheck(ctx, st, l.startAt, cutoff, l.wavesRolloutID, l.externalRolloutID)
	if err != nil {
		return nil, err
	}
	httpEnd, err := hooks.check(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("chaos: final http check: %w", err)
	}
	final.HTTPBreaches = int64(httpEnd.Count())
	if final.FalseOutcomes, err = falseOutcomes(ctx, pool, logf); err != nil {
		return nil, err
	}
	if httpEnd.Count() > 0 {
		logf("chaos: http breaches at the end: %+v", httpEnd)
	}
	t := hooks.totals()
	final.HTTPKeys, final.HTTPRequests, final.HTTPExecuted, final.HTTPRedeliveries = t.keys, t.requests, t.executed, t.redeliveries
	capped, err := finalCapCheck(ctx, st, s.temporal.Address())
	if err != nil {
		return nil, err
	}
	r := &Report{Profile: p, Temporal: opts.Temporal, Seed: opts.Seed, Faults: faults, Final: final, Capped: capped, SettleTime: settleTime, SettleReason: why,
		Triggers: triggersSent, TriggersFailed: triggersFailed, Histories: hist}
	r.Checks, r.Unreachable = chk.snapshot()
	for _, c := range r.Checks {
		r.Breaches += c.Breaches
	}
	r.Elapsed = time.Since(start)
	return r, nil
}

// pauseAll pauses every schedule not paused yet through the API, one by one, so no new run
// starts while the last ones drain (after the bulk pause, pauseBySelector, it finds none).
func pauseAll(ctx context.Context, api *apiClient, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `SELECT name FROM schedules WHERE NOT paused ORDER BY name`)
	if err != nil {
		return fmt.Errorf("list schedules: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list schedules: %w", err)
	}
	// Eight at a time: each pause waits for its schedule's workflow to take the update, and
	// 220 of them one after another took minutes on a loaded machine.
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 8)
	)
	for _, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := api.do(ctx, http.MethodPost, "/api/v1/schedules/"+n+"/pause", map[string]any{"note": "chaos run ends"}, nil); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// drainRuns waits for the workflow-action runs still RUNNING to finish and returns how
// many are left.
func drainRuns(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	n := -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE status = 'RUNNING'`).Scan(&n); err == nil && n == 0 {
			return 0
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	return n
}

// startTargetWorker serves TargetWorkflow on queue, as the service a workflow-action
// schedule would start its runs in. The SDK worker reconnects by itself across the
// Temporal restart.
func startTargetWorker(ctx context.Context, address, queue, logPath string) (func(), error) {
	logFile, err := os.Create(logPath) // #nosec G304 -- the chaos run's own log path
	if err != nil {
		return nil, fmt.Errorf("chaos: target worker log: %w", err)
	}
	cfg := config.Config{TemporalAddress: address, TemporalNamespace: "default"}
	opts, err := cfg.ClientOptions()
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	// The SDK's poll errors while Temporal restarts go to the run's log, not the report.
	opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(logFile, nil)))
	dialCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tc, err := client.DialContext(dialCtx, opts)
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("chaos: target worker: dial %s: %w", address, err)
	}
	w := sdkworker.New(tc, queue, worker.PollerOptions(config.DefaultWorkerPollers))
	w.RegisterWorkflowWithOptions(TargetWorkflow, workflow.RegisterOptions{Name: TargetWorkflowName})
	if err := w.Start(); err != nil {
		tc.Close()
		return nil, fmt.Errorf("chaos: target worker: %w", err)
	}
	return func() { w.Stop(); tc.Close(); _ = logFile.Close() }, nil
}

// DefaultDir is where `tickgate chaos` keeps a run: under the checkout's .dev.
func DefaultDir(root string) string {
	return filepath.Join(root, ".dev", "chaos", time.Now().UTC().Format("20060102-150405"))
}

// Print writes the report's tables and its RESULT line.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n## Chaos run — profile %s, Temporal %s, seed %d, %s\n\n", r.Profile.Name, r.Temporal, r.Seed, r.Elapsed.Round(time.Second))
	fmt.Fprintln(w, "| fault | injected | failed | down or held | recovery p50 | recovery max |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, kind := range faultKinds {
		var rec []time.Duration
		var down time.Duration
		failed := 0
		for _, f := range r.Faults {
			if f.Kind != kind {
				continue
			}
			rec = append(rec, f.Recovery)
			down += f.Down
			if f.Err != nil {
				failed++
			}
		}
		if len(rec) == 0 {
			continue
		}
		slices.Sort(rec)
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s |\n", kind, len(rec), failed, (down / time.Duration(len(rec))).Round(100*time.Millisecond),
			rec[len(rec)/2].Round(10*time.Millisecond), rec[len(rec)-1].Round(10*time.Millisecond))
	}
	fmt.Fprintf(w, "\nRecovery: from the fault until the component serves again (worker or API /readyz 200; after a server restart, all /readyz 200 and a new schedule fire committed). Down: how long it was left dead. A network fault's recovery is from its lift to the start of the steady state: every worker and API ready again and, from then on, every every-second event schedule's ticks of a %s window fired as scheduled ticks with lateness p99 ≤ %s (read %s after the window, once armed fires are settled).\n",
		steadyWindow, steadyLateness, steadyLag)
	fmt.Fprintln(w, "\n| network fault | on | at | held | steady again after the lift |\n| --- | --- | --- | ---: | ---: |")
	for _, f := range r.Faults {
		if !slices.Contains(faultKinds[4:], f.Kind) {
			continue
		}
		rec := f.Recovery.Round(10 * time.Millisecond).String()
		if f.Err != nil {
			rec = "not steady: " + f.Err.Error()
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", f.Kind, f.Target, f.At.UTC().Format("15:04:05"), f.Down.Round(time.Second), rec)
	}
	fmt.Fprintf(w, "\n| invariant | samples | breaches |\n| --- | ---: | ---: |\n")
	for _, c := range r.Checks {
		fmt.Fprintf(w, "| %s | %d | %d |\n", c.Name, c.Samples, c.Breaches)
	}
	fmt.Fprintf(w, "| (samples that could not reach PostgreSQL) | %d | – |\n", r.Unreachable)
	f := r.Final
	fmt.Fprintf(w, "\n| end state | count |\n| --- | ---: |\n")
	n := func(v int64) string { return fmt.Sprint(v) }
	rows := [][2]string{
		{"ticks expected up to the cutoff", n(f.ExpectedTicks)},
		{"ticks without a row (S2: lost)", n(f.LostTicks)},
		{"duplicate ticks (S1)", n(f.Duplicates)},
		{"fires", n(f.Fires)},
		{"  of which catch-up fires", n(f.CatchupFires)},
		{"manual and backfill runs", n(f.ManualFires)},
		{"manual triggers of resting schedules answered / not taken", fmt.Sprintf("%d / %d", r.Triggers, r.TriggersFailed)},
		{"ticks skipped by overlap policy (recorded with reason)", n(f.Skipped)},
		{"ticks missed outside the window (recorded with reason)", n(f.Missed)},
		{"runs succeeded / failed / canceled+terminated (an event fire succeeds at once)", fmt.Sprintf("%d / %d / %d", f.RunsSucceeded, f.RunsFailed, f.RunsCanceled)},
		{"schedule runs still RUNNING", n(f.UnfinishedScheduleRuns)},
		{"workflow runs ended otherwise than their target (a false FAILED or SUCCEEDED)", n(f.FalseOutcomes)},
		{"http: keys delivered / requests / executed / re-deliveries of an executed key", fmt.Sprintf("%d / %d / %d / %d", f.HTTPKeys, f.HTTPRequests, f.HTTPExecuted, f.HTTPRedeliveries)},
		{"http: breaches at the end (a key no run has, a run SUCCEEDED not executed or FAILED executed, a bad signature)", n(f.HTTPBreaches)},
		{"task runs DONE", n(f.TasksDone)},
		{"external rollout: task runs DONE (results reported through the API)", n(f.ExternalDone)},
		{"task runs FAILED/CANCELED/SKIPPED", n(f.TasksOther)},
		{"task runs unfinished", n(f.UnfinishedTasks)},
		{"device executions", n(f.DeviceExecutions)},
		{"  succeeded", n(f.DeviceSucceeded)},
		{"  failed finally (device → error)", n(f.DeviceFailed)},
		{"  timeouts / retries scheduled", fmt.Sprintf("%d / %d", f.DeviceTimeouts, f.DeviceRetries)},
		{"  late results refused", n(f.LateResults)},
		{"devices in error", n(f.DevicesInError)},
		{"device executions unfinished", n(f.UnfinishedDeviceExecutions)},
		{"device tasks unfinished", n(f.UnfinishedDeviceTasks)},
		{"capped schedules: runs started (manual / backfill)", fmt.Sprintf("%d (%d / %d)", r.Capped.Runs, r.Capped.Manual, r.Capped.Backfill)},
		{"  ticks skipped with the cap full / still waiting for it at the end", fmt.Sprintf("%d / %d", r.Capped.Skipped, r.Capped.Waiting)},
		{"  most targets running at once (Temporal's times) / schedules over their cap", fmt.Sprintf("%d / %d", r.Capped.MostAtOnce, r.Capped.OverCap)},
		{"  targets whose times could not be read", n(int64(r.Capped.Unread))},
	}
	if r.Profile.WaveDatabases > 0 {
		wv := f.Waves
		rows = append(rows,
			[2]string{"waves rollout: status (reason)", fmt.Sprintf("%s (%s)", wv.Status, wv.Reason)},
			[2]string{"  waves (health checked at)", wavesLine(wv)},
			[2]string{"  tasks of waves 1–2 DONE", fmt.Sprintf("%d of %d", wv.DoneBeforeFailure, wv.TasksBeforeFailure)},
			[2]string{"  tasks of wave 3 started (must be 0) / waiting on the wave", fmt.Sprintf("%d / %d of %d", wv.LaterWaveStarted, wv.LaterWaveWaiting, wv.LaterWaveTasks)},
			[2]string{"  paused at the failed wave as it must", fmt.Sprint(wv.Held(r.Profile))},
		)
	}
	for _, row := range rows {
		fmt.Fprintf(w, "| %s | %s |\n", row[0], row[1])
	}
	fmt.Fprintf(w, "\nHistories (porcupine; a failure is drawn as HTML beside the logs):\n\n")
	for _, h := range r.Histories {
		fmt.Fprintf(w, "- %s\n", h)
	}
	fmt.Fprintf(w, "\nsettled %s after the faults (%s)\n", r.SettleTime.Round(time.Second), r.SettleReason)
	fmt.Fprintf(w, "RESULT faults=%d fires=%d duplicates=%d breaches=%d unfinished=%d lost_ticks=%d task_runs_done=%d device_executions=%d fault_errors=%d waves_held=%t later_wave_started=%d http_executed=%d http_breaches=%d capped_over_cap=%d capped_most_at_once=%d missed=%d false_outcomes=%d linearizable=%t\n",
		len(r.Faults), f.Fires, f.Duplicates, r.Breaches, r.Unfinished(), f.LostTicks, f.TasksDone, f.DeviceExecutions, r.faultErrors(),
		r.Profile.WaveDatabases == 0 || f.Waves.Held(r.Profile), f.Waves.LaterWaveStarted, f.HTTPExecuted, f.HTTPBreaches, r.Capped.OverCap, r.Capped.MostAtOnce, f.Missed, f.FalseOutcomes, r.Linearizable())
}

// wavesLine is each wave's status and when its health checks last ran.
func wavesLine(w WavesOutcome) string {
	parts := make([]string, len(w.WaveStatuses))
	for i, s := range w.WaveStatuses {
		parts[i] = s
		if i < len(w.Checked) && !w.Checked[i].IsZero() {
			parts[i] += " (" + w.Checked[i].UTC().Format("15:04:05") + ")"
		}
	}
	return strings.Join(parts, ", ")
}
