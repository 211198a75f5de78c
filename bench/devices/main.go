// Command devices benchmarks the device dispatch engine (`make bench-devices`): 50 PCs × 200
// devices (capacity 20), simulated agents (one per PC, up to 20 device answerers each: 1,000
// answering at once) answering after 50 ms, 50 tasks × 10,000 devices = 500,000 device
// executions, end to end through the HTTP API, one worker and Temporal with make dev's
// settings (-durable: PostgreSQL with fsync, synchronous_commit and full_page_writes on). The
// agents speak the documented protocol (docs/devices.md): long-poll claims, and results that
// ask for the slot's next execution. It measures, at the agents, a result from its request
// to its answer and a refill from the freed slot's result request to the answer that hands
// out the slot's next execution (that result's own answer, or a claim); executions per
// second; the run split into steady state (every PC's slots full with the active task) and
// task switches, each measured apart; utilisation both as slot time and as sampled running
// ÷ target; CPU per execution of each process; and, with pg_stat_statements, the statements
// sent per execution and their time. The same fleet then runs against a plain SQL queue on
// the same PostgreSQL. It prints Markdown tables and ends with a `RESULT …` line.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/deviceengine"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/agentsim"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

var (
	flagPCs        = flag.Int("pcs", 50, "PCs")
	flagDevices    = flag.Int("devices", 200, "devices per PC (well above -capacity, so each task keeps every slot busy for a while: see bench/README.md)")
	flagCapacity   = flag.Int("capacity", 20, "device_capacity of each PC")
	flagExecutions = flag.Int("executions", 500000, "device executions (rounded up to whole tasks)")
	flagDurable    = flag.Bool("durable", false, "run PostgreSQL with fsync, synchronous_commit and full_page_writes on (make dev runs them off), for both sides")
	flagMinSteady  = flag.Duration("min-steady", 60*time.Second, "the steady state a run should measure; a shorter one is flagged in the table (raise -executions)")
	flagLatency    = flag.Duration("latency", 50*time.Millisecond, "simulated agent answer latency")
	flagFailRate   = flag.Float64("fail-rate", 0, "fraction of attempts the agents report failed (retryable)")
	flagSample     = flag.Duration("sample", time.Second, "utilisation sampling interval (its query costs PostgreSQL; the end of the run is polled every 50ms)")
	flagTimeout    = flag.Duration("timeout", 15*time.Minute, "give up after this long")
	flagBaseline   = flag.Bool("baseline", true, "also run the same fleet against seed 003's plain SQL queue, in the same run")
	flagWarmup     = flag.Int("warmup-tasks", 0, "tasks run before the measured window (not measured): with 1, every PC's timer workflow is started before it, as in a deployment that has run before")
	flagLegacy     = flag.Bool("legacy-agents", false, "tickgate's agents speak the protocol as older agents do (claims that do not wait, results that do not ask for the next execution), to measure what the two shortcuts bring")
	flagCPUProfile = flag.String("cpuprofile", "", "write a CPU profile of this process (agents, API and worker) during tickgate's run to this file")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	// Ctrl-C still stops the PostgreSQL cluster and the Temporal dev server it started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	report, err := run(ctx)
	stop()
	if err != nil {
		log.Fatalf("bench-devices: %v", err)
	}
	// Printed once everything it started has stopped, so RESULT is the last line.
	fmt.Print(report)
}

type row struct{ name, value string }

func run(ctx context.Context) (string, error) {
	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "devices", PGPort: 55480, StatementStats: true, Durable: *flagDurable})
	if err != nil {
		return "", err
	}
	defer stack.Stop()

	dbURL, err := stack.FreshDatabase(ctx, "bench_devices")
	if err != nil {
		return "", err
	}
	st, err := store.Open(ctx, dbURL) // make dev's pool size
	if err != nil {
		return "", err
	}
	defer st.Close()
	// The statements tickgate sends, counted over the measured window; the bench's own
	// queries run as another role, so they are not counted.
	stmts, err := newStatementCounter(ctx, dbURL)
	if err != nil {
		return "", err
	}
	defer stmts.Close()
	observer := stmts.observer
	cfg, err := stack.Config(dbURL)
	if err != nil {
		return "", err
	}
	tc, err := cfg.DialTemporal(ctx)
	if err != nil {
		return "", err
	}
	defer tc.Close()
	w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: tc})
	if err != nil {
		return "", err
	}
	if err := w.Start(); err != nil {
		return "", err
	}
	defer w.Stop()
	if err := worker.StartSingletons(ctx, worker.Deps{Config: cfg, Store: st, Temporal: tc}); err != nil {
		return "", err
	}
	// A result request's time inside the API handler, for comparison with the agent's view.
	var mu sync.Mutex
	var handled []time.Duration
	// Wired as `tickgate serve` wires it: the task advancer activates the next task in the
	// API process, and nudges the dispatcher after.
	starter := &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue}
	advancer, err := deviceengine.NewTaskAdvancer(st, deviceengine.TaskAdvancerOptions{Settings: cfg.DeviceSettings(), Notify: starter.CheckDispatcher})
	if err != nil {
		return "", err
	}
	advancer.Start()
	// Wired as `tickgate api` wires it: the listening connection keeps the token cache and
	// wakes the agents' long-polls; the device engine takes the agents' steps.
	listener := st.StartListener(store.ListenerOptions{Logf: log.Printf})
	defer listener.Close()
	logf := func(f string, a ...any) { log.Printf("api: "+f, a...) }
	engine := deviceengine.New(deviceengine.Options{Store: st, Starter: starter, Listener: listener, Advancer: advancer, Logf: logf})
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = engine.Close(closeCtx)
	}()
	app := api.New(&api.Server{Store: st, Temporal: tc, Starter: starter, Devices: engine, Listener: listener, Logf: logf})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/result") {
			app.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		t0 := time.Now()
		app.ServeHTTP(rec, r)
		d := time.Since(t0)
		if rec.status == http.StatusOK {
			mu.Lock()
			handled = append(handled, d)
			mu.Unlock()
		}
	}))
	defer srv.Close()
	base := srv.URL + "/api/v1"
	_, admin, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "bench-devices"})
	if err != nil {
		return "", err
	}
	post := func(url, body string) error { return postJSON(admin, url, body) }

	// The farm, through the API: PCs one after another, each PC's devices 8 at a time.
	var pcs []string
	for p := 0; p < *flagPCs; p++ {
		name := fmt.Sprintf("pc-%02d", p)
		pcs = append(pcs, name)
		if err := post(base+"/pcs", fmt.Sprintf(`{"name":%q,"device_capacity":%d}`, name, *flagCapacity)); err != nil {
			return "", err
		}
		if err := eachAtOnce(*flagDevices, 8, func(d int) error {
			return post(base+"/devices", fmt.Sprintf(`{"pc":%q,"serial":"%s-dev-%02d"}`, name, name, d))
		}); err != nil {
			return "", err
		}
	}
	// Each PC's agent holds its own agent token, bound to its PC.
	agentTokens := map[string]string{}
	for _, pc := range pcs {
		_, tok, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAgent, PC: pc, Note: "bench agent"})
		if err != nil {
			return "", err
		}
		agentTokens[pc] = tok
	}
	perTask := *flagPCs * *flagDevices
	tasks := (*flagExecutions + perTask - 1) / perTask
	log.Printf("farm: %d PCs × %d devices (capacity %d); %d tasks × %d devices", *flagPCs, *flagDevices, *flagCapacity, tasks, perTask)

	// What the agents saw: each command's claim, its result request and the answer, and
	// how long each claim request took; paired into result and refill latencies afterwards.
	obs := newObserver()
	runCtx, cancel := context.WithTimeout(ctx, *flagTimeout)
	defer cancel()
	fleet := agentsim.Start(runCtx, agentsim.Options{
		BaseURL: base, PCs: pcs, Max: *flagCapacity, Latency: *flagLatency, FailRate: *flagFailRate, Legacy: *flagLegacy,
		OnClaimed:   obs.claimed,
		OnAnswering: obs.answering,
		OnAnswered:  obs.answered,
		HTTPClient:  obs.httpClient(),
		Logf:        log.Printf,
		PCTokens:    agentTokens,
	})

	// Warm-up tasks: run to the end before the window opens, then forgotten by the observer;
	// the measured executions are those of the tasks created after them.
	var firstMeasured int64
	for i := 0; i < *flagWarmup; i++ {
		if err := post(base+"/tasks", fmt.Sprintf(`{"payload":{"warmup":%d}}`, i)); err != nil {
			return "", err
		}
	}
	for *flagWarmup > 0 {
		s, err := sample(ctx, observer, false)
		if err != nil {
			return "", err
		}
		if s.open == 0 {
			if err := observer.QueryRow(ctx, `SELECT coalesce(max(id), 0) + 1 FROM tasks`).Scan(&firstMeasured); err != nil {
				return "", err
			}
			obs.forget()
			mu.Lock()
			handled = nil
			mu.Unlock()
			log.Printf("warm-up: %d tasks done", *flagWarmup)
			break
		}
		select {
		case <-runCtx.Done():
			return "", fmt.Errorf("warm-up timed out: %s", fleet.Stats.String())
		case <-time.After(endPoll):
		}
	}

	if *flagCPUProfile != "" {
		f, err := os.Create(*flagCPUProfile)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return "", err
		}
	}
	if err := stmts.reset(ctx); err != nil {
		return "", err
	}
	stopCPU := sampleCPU(stack, cpuEvery)
	start := time.Now()
	for i := 0; i < tasks; i++ {
		if err := post(base+"/tasks", fmt.Sprintf(`{"payload":{"bench":%d}}`, i)); err != nil {
			return "", err
		}
	}

	// Sample the slots until every task is final.
	var samples, overTarget int
	var sumRunning, sumTarget, sumDemand float64
	var done bool
	lastSample := time.Now()
	for !done {
		select {
		case <-runCtx.Done():
			_, _ = stopCPU()
			return "", fmt.Errorf("timed out after %s: %s", *flagTimeout, fleet.Stats.String())
		case <-time.After(endPoll):
		}
		// The end is polled often (the wall time is exact to endPoll); the slots, whose
		// query is the costly one, every -sample.
		withSlots := time.Since(lastSample) >= *flagSample
		s, err := sample(ctx, observer, withSlots)
		if err != nil {
			_, _ = stopCPU()
			return "", err
		}
		if s.open == 0 {
			done = true
			break
		}
		if !withSlots {
			continue
		}
		lastSample = time.Now()
		if os.Getenv("BENCH_DEBUG") != "" {
			log.Printf("sample: open=%d running=%d target=%d demand=%d", s.open, s.running, s.target, s.demand)
		}
		samples++
		overTarget += s.over
		sumRunning += float64(s.running)
		sumTarget += float64(s.target)
		sumDemand += float64(s.demand)
	}
	end := time.Now()
	elapsed := end.Sub(start)
	pprof.StopCPUProfile() // a no-op without -cpuprofile
	cpuSamples, err := stopCPU()
	if err != nil {
		return "", err
	}
	cpu := cpuSamples[len(cpuSamples)-1].cpu.Sub(cpuSamples[0].cpu)
	counted, err := stmts.counts(ctx)
	if err != nil {
		return "", err
	}
	cancel()
	fleet.Wait()

	var executions, succeeded, attempts int64
	if err := observer.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'SUCCEEDED'), coalesce(sum(attempt), 0) FROM task_devices WHERE task_id >= $1`, firstMeasured).
		Scan(&executions, &succeeded, &attempts); err != nil {
		return "", err
	}
	var finalTasks int64
	if err := observer.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE status IN ('success', 'failed') AND id >= $1`, firstMeasured).Scan(&finalTasks); err != nil {
		return "", err
	}
	mu.Lock()
	slices.Sort(handled)
	h50, h99 := pct(handled, 50), pct(handled, 99)
	nHandled := len(handled)
	mu.Unlock()
	result := obs.resultLatencies()
	refill, unpaired := obs.refillLatencies(*flagCapacity)
	claimRTT := obs.claimRoundTrips()
	slotBusy := obs.busySlotTime()
	ph := obs.phases(start, end, *flagCapacity)
	steady, switching := obs.within(ph.steady, *flagCapacity), obs.within(ph.switches, *flagCapacity)
	steadyCPU := cpuWithin(cpuSamples, ph.steady)

	var alt baselineResult
	if *flagBaseline {
		log.Printf("baseline: the same fleet against seed 003's plain SQL queue")
		if alt, err = runBaseline(ctx, stack, st.Pool, stmts, pcs, tasks); err != nil {
			return "", err
		}
	}
	baseEPS := float64(alt.executions) / max(alt.elapsed.Seconds(), 1e-9)

	utilSampled := sumRunning / max(sumDemand, 1)
	utilSampledRaw := sumRunning / max(sumTarget, 1)
	// Slot time: every PC's capacity × the wall time, against the time its slots held a
	// command (claim answered → result answered, at the agent).
	utilSlotTime := slotBusy.Seconds() / (float64(*flagPCs**flagCapacity) * elapsed.Seconds())
	eps := float64(executions) / elapsed.Seconds()
	spe := perExecution(totalCalls(counted), executions)
	rows := []row{
		{"Temporal", stack.Temporal.Describe()},
		{"PostgreSQL", durabilityNote(stack.Durability)},
		{"farm", fmt.Sprintf("%d PCs × %d devices, capacity %d", *flagPCs, *flagDevices, *flagCapacity)},
		{"agents", fmt.Sprintf("%d PC agents claiming up to %d each: %d device answerers in flight at once at full slots; %s", *flagPCs, *flagCapacity, *flagPCs**flagCapacity, agentProtocol())},
		{"workload", fmt.Sprintf("%d tasks × %d devices (after %d warm-up tasks); devices answer after %s, fail rate %.2f", tasks, perTask, *flagWarmup, *flagLatency, *flagFailRate)},
		{"device executions", fmt.Sprintf("%d (%d succeeded, %d attempts), %d tasks final", executions, succeeded, attempts, finalTasks)},
	}
	rows = append(rows, phaseRows("", ph, steady, switching, steadyCPU)...)
	rows = append(rows,
		row{"over the whole run: wall time", elapsed.Round(time.Millisecond).String()},
		row{"over the whole run: executions per second", fmt.Sprintf("%.1f", eps)},
		row{"over the whole run: result p50 / p99 (agent side: the result request sent → its answer received, resends included)", fmt.Sprintf("%.1f ms / %.1f ms (%d results)", ms(pct(result, 50)), ms(pct(result, 99)), len(result))},
		row{"over the whole run: refill end to end p50 / p99 (agent side: the freed slot's result request sent → the answer handing out the slot's next execution: that result's own answer, or a claim's)", fmt.Sprintf("%.1f ms / %.1f ms (%d refills; %d freed slots had no later execution of their task on that PC)", ms(pct(refill, 50)), ms(pct(refill, 99)), len(refill), unpaired)},
		row{"claim round trip p50 / p99 (agent side)", fmt.Sprintf("%.1f ms / %.1f ms (%d claims)", ms(pct(claimRTT, 50)), ms(pct(claimRTT, 99)), len(claimRTT))},
		row{"result request handled p50 / p99 (server side, in the API handler)", fmt.Sprintf("%.1f ms / %.1f ms (%d results)", ms(h50), ms(h99), nHandled)},
		row{"utilisation, slot time (Σ claim → result answered at the agents ÷ (PCs × capacity × wall time))", fmt.Sprintf("%.3f", utilSlotTime)},
		row{"utilisation, sampled (running ÷ target, target capped by the active task's devices left), every " + flagSample.String(), fmt.Sprintf("%.3f over %d samples", utilSampled, samples)},
		row{"utilisation, sampled raw (running ÷ min(capacity, eligible), incl. task drain and switch)", fmt.Sprintf("%.3f", utilSampledRaw)},
		row{"samples with running > target (D2)", fmt.Sprintf("%d", overTarget)},
		row{"CPU per execution over the whole run: this process (agents, API, worker) / PostgreSQL / Temporal (ms)", cpuRow(cpu, executions)},
		row{"statements per execution (pg_stat_statements over the measured window, every statement tickgate sent, BEGIN and COMMIT included)", fmt.Sprintf("%.3f (%d statements)", spe, totalCalls(counted))},
		row{"agent fleet", fleet.Stats.String()},
	)
	if *flagBaseline {
		rows = append(rows,
			row{"alternative: seed 003's plain SQL queue (one claim statement capped per PC, one UPDATE per result; no workflow, timeout or retry), same fleet, same database", fmt.Sprintf("%d executions in %s", alt.executions, alt.elapsed.Round(time.Millisecond))},
		)
		rows = append(rows, phaseRows("alternative: ", alt.phases, alt.steady, alt.switching, alt.steadyCPU)...)
		rows = append(rows,
			row{"alternative: over the whole run: executions per second", fmt.Sprintf("%.1f", baseEPS)},
			row{"alternative: over the whole run: result p50 / p99 (agent side)", fmt.Sprintf("%.1f ms / %.1f ms (%d results)", ms(pct(alt.result, 50)), ms(pct(alt.result, 99)), len(alt.result))},
			row{"alternative: over the whole run: refill end to end p50 / p99 (agent side)", fmt.Sprintf("%.1f ms / %.1f ms (%d refills)", ms(pct(alt.refill, 50)), ms(pct(alt.refill, 99)), len(alt.refill))},
			row{"alternative: CPU per execution over the whole run: this process (agents, its HTTP server and tickgate's idle worker) / PostgreSQL / Temporal (ms)", cpuRow(alt.cpu, alt.executions)},
			row{"alternative: statements per execution", fmt.Sprintf("%.3f (%d statements)", perExecution(totalCalls(alt.statements), alt.executions), totalCalls(alt.statements))},
		)
	}
	var b strings.Builder
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| figure | value |")
	fmt.Fprintln(&b, "| --- | --- |")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", r.name, r.value)
	}
	fmt.Fprint(&b, statementTable("tickgate's statements", counted, executions))
	if *flagBaseline {
		fmt.Fprint(&b, statementTable("the plain queue's statements", alt.statements, alt.executions))
	}
	fmt.Fprintln(&b)
	baselineKeys := "baseline_steady_executions_per_s=na baseline_steady_result_p50_ms=na baseline_steady_result_p99_ms=na baseline_steady_refill_e2e_p99_ms=na baseline_steady_s=na baseline_switch_p50_ms=na baseline_steady_cpu_ms_per_execution=na " +
		"baseline_result_p99_ms=na baseline_refill_e2e_p99_ms=na baseline_executions_per_s=na baseline_statements_per_execution=na"
	if *flagBaseline {
		baselineKeys = fmt.Sprintf("baseline_steady_executions_per_s=%.1f baseline_steady_result_p50_ms=%.1f baseline_steady_result_p99_ms=%.1f baseline_steady_refill_e2e_p99_ms=%.1f baseline_steady_s=%.1f baseline_switch_p50_ms=%.1f baseline_steady_cpu_ms_per_execution=%.3f "+
			"baseline_result_p99_ms=%.1f baseline_refill_e2e_p99_ms=%.1f baseline_executions_per_s=%.1f baseline_statements_per_execution=%.3f",
			alt.steady.perSecond(), ms(pct(alt.steady.results, 50)), ms(pct(alt.steady.results, 99)), ms(pct(alt.steady.refills, 99)), alt.steady.dur.Seconds(), ms(pct(switchLengths(alt.phases), 50)), cpuTotalPer(alt.steadyCPU, alt.steady.executions),
			ms(pct(alt.result, 99)), ms(pct(alt.refill, 99)), baseEPS, perExecution(totalCalls(alt.statements), alt.executions))
	}
	fmt.Fprintf(&b, "RESULT durable=%t steady_executions_per_s=%.1f steady_result_p50_ms=%.1f steady_result_p99_ms=%.1f steady_refill_e2e_p99_ms=%.1f steady_s=%.1f switches=%d switch_p50_ms=%.1f switch_max_ms=%.1f handover_p50_ms=%.1f steady_cpu_ms_per_execution=%.3f "+
		"result_p50_ms=%.1f result_p99_ms=%.1f refill_e2e_p50_ms=%.1f refill_e2e_p99_ms=%.1f executions_per_s=%.1f utilisation_slot_time=%.3f utilisation_sampled=%.3f utilisation_sampled_raw=%.3f d2_violations=%d statements_per_execution=%.3f %s\n",
		*flagDurable, steady.perSecond(), ms(pct(steady.results, 50)), ms(pct(steady.results, 99)), ms(pct(steady.refills, 99)), steady.dur.Seconds(), len(ph.switches), ms(pct(switchLengths(ph), 50)), ms(pct(switchLengths(ph), 100)), ms(pct(sorted(ph.handovers), 50)), cpuTotalPer(steadyCPU, steady.executions),
		ms(pct(result, 50)), ms(pct(result, 99)), ms(pct(refill, 50)), ms(pct(refill, 99)), eps, utilSlotTime, utilSampled, utilSampledRaw, overTarget, spe, baselineKeys)
	return b.String(), nil
}

func agentProtocol() string {
	if *flagLegacy {
		return "older protocol (-legacy-agents: claims answer at once, results without the next execution)"
	}
	return "docs/devices.md's protocol (long-poll claims, the next execution in the result's answer)"
}

type slotSample struct {
	open, running, target, demand, over int
}

// sample reads every PC's slots: running, target = min(capacity, eligible), and the
// demand-limited target min(target, running + eligible devices the active task has not
// run on yet) — what the engine can fill at that moment.
// endPoll is how often the run's end is polled.
const endPoll = 50 * time.Millisecond

// sample counts the open tasks and, withSlots, reads every PC's slots.
func sample(ctx context.Context, observer *pgxpool.Pool, withSlots bool) (slotSample, error) {
	var s slotSample
	if err := observer.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE status IN ('pending', 'running')`).Scan(&s.open); err != nil {
		return s, err
	}
	if !withSlots || s.open == 0 {
		return s, nil
	}
	rows, err := observer.Query(ctx, `
		WITH t AS (SELECT id FROM tasks WHERE status = 'running')
		SELECT s.running, s.target,
		       (SELECT count(*) FROM t CROSS JOIN LATERAL devices_unrun_by(t.id) d WHERE d.pc_id = s.pc_id) AS unrun
		FROM pc_device_summary s`)
	if err != nil {
		return s, err
	}
	defer rows.Close()
	for rows.Next() {
		var running, target, unrun int
		if err := rows.Scan(&running, &target, &unrun); err != nil {
			return s, err
		}
		s.running += running
		s.target += target
		s.demand += min(target, running+unrun)
		if running > target {
			s.over++
		}
	}
	return s, rows.Err()
}

var setupClient = &http.Client{Timeout: 30 * time.Second}

// eachAtOnce calls f(0) … f(n-1), up to limit at once, and returns the first error.
func eachAtOnce(n, limit int, f func(int) error) error {
	sem := make(chan struct{}, limit)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- f(i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func postJSON(token, url, body string) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := setupClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s answered %d", url, resp.StatusCode)
	}
	return nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func cpuPer(c benchstack.CPU, executions int64) float64 { return c.Ms() / float64(max(executions, 1)) }

// cpuEvery is how often the processes' CPU time is sampled, to tell steady state's share.
const cpuEvery = 100 * time.Millisecond

func cpuRow(c benchstack.CPUSnapshot, executions int64) string {
	return fmt.Sprintf("%.3f / %.3f / %.3f", cpuPer(c.Worker, executions), cpuPer(c.Postgres, executions), cpuPer(c.Temporal, executions))
}

func cpuTotalPer(c benchstack.CPUSnapshot, executions int) float64 {
	return (c.Worker + c.Postgres + c.Temporal).Ms() / float64(max(executions, 1))
}

// phaseRows are one side's steady-state and task-switch figures (phases.go).
func phaseRows(prefix string, ph phases, steady, switching phaseFigures, steadyCPU benchstack.CPUSnapshot) []row {
	lengths := switchLengths(ph)
	rows := []row{
		{prefix + "steady state (every PC's slots full with the active task): executions per second (results answered in it ÷ its length)",
			fmt.Sprintf("%.1f (%d executions in %s, over %d tasks' windows)", steady.perSecond(), steady.executions, steady.dur.Round(time.Millisecond), len(ph.steady))},
		{prefix + "steady state: result p50 / p99 (agent side, results sent in it)", fmt.Sprintf("%.1f ms / %.1f ms (%d results)", ms(pct(steady.results, 50)), ms(pct(steady.results, 99)), len(steady.results))},
		{prefix + "steady state: refill end to end p50 / p99 (agent side, slots freed in it: the result request sent → the answer handing out the slot's next execution)", fmt.Sprintf("%.1f ms / %.1f ms (%d refills)", ms(pct(steady.refills, 50)), ms(pct(steady.refills, 99)), len(steady.refills))},
		{prefix + "steady state: CPU per execution: this process / PostgreSQL / Temporal (ms)", cpuRow(steadyCPU, int64(steady.executions)) + fmt.Sprintf(" = %.3f", cpuTotalPer(steadyCPU, steady.executions))},
		{prefix + "task switches (from the first PC draining a task to every PC full with the next; start-up and end included): count, total, p50 / max",
			fmt.Sprintf("%d, %s, %.1f ms / %.1f ms", len(ph.switches), switching.dur.Round(time.Millisecond), ms(pct(lengths, 50)), ms(pct(lengths, 100)))},
		{prefix + "task switches: executions per second; result p50 / p99 (results sent in them)",
			fmt.Sprintf("%.1f; %.1f ms / %.1f ms (%d results)", switching.perSecond(), ms(pct(switching.results, 50)), ms(pct(switching.results, 99)), len(switching.results))},
		{prefix + "task handover p50 / max (a task's last result answered → the next task's first execution handed out)",
			fmt.Sprintf("%.1f ms / %.1f ms (%d handovers)", ms(pct(sorted(ph.handovers), 50)), ms(pct(sorted(ph.handovers), 100)), len(ph.handovers))},
	}
	if steady.dur < *flagMinSteady {
		rows = append(rows, row{prefix + "NOTE", fmt.Sprintf("steady state lasted %s, less than -min-steady %s: raise -executions", steady.dur.Round(time.Millisecond), *flagMinSteady)})
	}
	return rows
}

func switchLengths(ph phases) []time.Duration {
	out := make([]time.Duration, len(ph.switches))
	for i, w := range ph.switches {
		out[i] = w.dur()
	}
	return sorted(out)
}

func sorted(ds []time.Duration) []time.Duration {
	out := slices.Clone(ds)
	slices.Sort(out)
	return out
}

func durabilityNote(settings string) string {
	if *flagDurable {
		return settings + " (-durable: a commit returns once its WAL is on disk)"
	}
	return settings + " (make dev's settings)"
}
