// Command devices benchmarks the device dispatch engine (`make bench-devices`): 50 PCs × 25
// devices (capacity 20), simulated agents answering after 50 ms, 8 tasks × 1,250 devices =
// 10,000 device executions, end to end through the HTTP API, one worker and a Temporal dev
// server. It measures slot utilisation (running ÷ target, sampled), refill latency (slot
// freed → next command claimable) and executions per second. It starts its own PostgreSQL
// cluster and Temporal dev server, prints a Markdown table and ends with a `RESULT …` line.
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
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/agentsim"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

var (
	flagPCs        = flag.Int("pcs", 50, "PCs")
	flagDevices    = flag.Int("devices", 25, "devices per PC")
	flagCapacity   = flag.Int("capacity", 20, "device_capacity of each PC")
	flagExecutions = flag.Int("executions", 10000, "device executions (rounded up to whole tasks)")
	flagLatency    = flag.Duration("latency", 50*time.Millisecond, "simulated agent answer latency")
	flagFailRate   = flag.Float64("fail-rate", 0, "fraction of attempts the agents report failed (retryable)")
	flagSample     = flag.Duration("sample", 50*time.Millisecond, "utilisation sampling interval")
	flagTimeout    = flag.Duration("timeout", 15*time.Minute, "give up after this long")
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
	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "devices", PGPort: 55480})
	if err != nil {
		return "", err
	}
	defer stack.Stop()

	dbURL, err := stack.FreshDatabase(ctx, "bench_devices")
	if err != nil {
		return "", err
	}
	st, err := store.Open(ctx, dbURL+"&pool_max_conns=48")
	if err != nil {
		return "", err
	}
	defer st.Close()
	cfg := config.Config{DatabaseURL: dbURL, TemporalAddress: stack.Temporal.Address(), TemporalNamespace: "default",
		TaskQueue: "tickgate", DeviceTimeout: 20 * time.Minute, DeviceMaxAttempts: 3}
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
	// Server-side refill latency: a result's request handled (the slot is freed when the
	// result reaches the handler; its transaction refills the slot and commits before the
	// answer is written, the slot workflow is signalled after).
	var mu sync.Mutex
	var handled []time.Duration
	app := api.New(&api.Server{Store: st, Temporal: tc, Starter: &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue},
		Logf: func(f string, a ...any) { log.Printf("api: "+f, a...) }})
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
	_, admin, err := st.CreateToken(ctx, store.NewToken{Role: store.RoleAdmin, Note: "bench-devices"})
	if err != nil {
		return "", err
	}
	post := func(url, body string) error { return postJSON(admin, url, body) }

	// The farm, through the API.
	var pcs []string
	for p := 0; p < *flagPCs; p++ {
		name := fmt.Sprintf("pc-%02d", p)
		pcs = append(pcs, name)
		if err := post(base+"/pcs", fmt.Sprintf(`{"name":%q,"device_capacity":%d}`, name, *flagCapacity)); err != nil {
			return "", err
		}
		for d := 0; d < *flagDevices; d++ {
			if err := post(base+"/devices", fmt.Sprintf(`{"pc":%q,"serial":"%s-dev-%02d"}`, name, name, d)); err != nil {
				return "", err
			}
		}
	}
	// Each PC's agent holds its own agent token, bound to its PC.
	agentTokens := map[string]string{}
	for _, pc := range pcs {
		_, tok, err := st.CreateToken(ctx, store.NewToken{Role: store.RoleAgent, PC: pc, Note: "bench agent"})
		if err != nil {
			return "", err
		}
		agentTokens[pc] = tok
	}
	perTask := *flagPCs * *flagDevices
	tasks := (*flagExecutions + perTask - 1) / perTask
	log.Printf("farm: %d PCs × %d devices (capacity %d); %d tasks × %d devices", *flagPCs, *flagDevices, *flagCapacity, tasks, perTask)

	// Refill latency: the agent posts a result (the slot is freed when the server gets it)
	// and the next command of that slot is claimable once the result's transaction commits,
	// which happens before the answer: the result round trip bounds it from above.
	var refill []time.Duration
	sentAt := map[int64]time.Time{}
	runCtx, cancel := context.WithTimeout(ctx, *flagTimeout)
	defer cancel()
	fleet := agentsim.Start(runCtx, agentsim.Options{
		BaseURL: base, PCs: pcs, Max: *flagCapacity, Latency: *flagLatency, FailRate: *flagFailRate,
		OnAnswering: func(c agentsim.Command, _ agentsim.Outcome, at time.Time) {
			mu.Lock()
			sentAt[c.ID*8+int64(c.Attempt)] = at
			mu.Unlock()
		},
		OnAnswered: func(c agentsim.Command, _ agentsim.Outcome, code int, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if code == http.StatusOK {
				refill = append(refill, at.Sub(sentAt[c.ID*8+int64(c.Attempt)]))
			}
			delete(sentAt, c.ID*8+int64(c.Attempt))
		},
		Logf:     log.Printf,
		PCTokens: agentTokens,
	})

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
	for !done {
		select {
		case <-runCtx.Done():
			return "", fmt.Errorf("timed out after %s: %s", *flagTimeout, fleet.Stats.String())
		case <-time.After(*flagSample):
		}
		s, err := sample(ctx, st)
		if err != nil {
			return "", err
		}
		if s.open == 0 {
			done = true
			break
		}
		if os.Getenv("BENCH_DEBUG") != "" {
			log.Printf("sample: open=%d running=%d target=%d demand=%d", s.open, s.running, s.target, s.demand)
		}
		samples++
		overTarget += s.over
		sumRunning += float64(s.running)
		sumTarget += float64(s.target)
		sumDemand += float64(s.demand)
	}
	elapsed := time.Since(start)
	cancel()
	fleet.Wait()

	var executions, succeeded, attempts int64
	if err := st.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'SUCCEEDED'), coalesce(sum(attempt), 0) FROM task_devices`).
		Scan(&executions, &succeeded, &attempts); err != nil {
		return "", err
	}
	var finalTasks int64
	if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE status IN ('success', 'failed')`).Scan(&finalTasks); err != nil {
		return "", err
	}
	mu.Lock()
	slices.Sort(refill)
	slices.Sort(handled)
	rt50, rt99 := pct(refill, 50), pct(refill, 99)
	h50, h99 := pct(handled, 50), pct(handled, 99)
	nHandled := len(handled)
	mu.Unlock()
	sqlRefill, err := refillLatencies(ctx, st, *flagCapacity)
	if err != nil {
		return "", err
	}
	p50, p99 := pct(sqlRefill, 50), pct(sqlRefill, 99)

	util := sumRunning / max(sumDemand, 1)
	utilRaw := sumRunning / max(sumTarget, 1)
	eps := float64(executions) / elapsed.Seconds()
	rows := []row{
		{"farm", fmt.Sprintf("%d PCs × %d devices, capacity %d (target 20 per PC)", *flagPCs, *flagDevices, *flagCapacity)},
		{"workload", fmt.Sprintf("%d tasks × %d devices; agents answer after %s, fail rate %.2f", tasks, perTask, *flagLatency, *flagFailRate)},
		{"device executions", fmt.Sprintf("%d (%d succeeded, %d attempts), %d tasks final", executions, succeeded, attempts, finalTasks)},
		{"wall time", elapsed.Round(time.Millisecond).String()},
		{"executions per second", fmt.Sprintf("%.1f", eps)},
		{"slot utilisation (running ÷ target, target capped by the active task's devices left)", fmt.Sprintf("%.3f over %d samples", util, samples)},
		{"slot utilisation, raw (running ÷ min(capacity, eligible), incl. task drain and switch)", fmt.Sprintf("%.3f", utilRaw)},
		{"refill latency p50 / p99 (slot freed → next command claimable: the freed execution's completed_at → the new execution's created_at, clock_timestamp() in the result's transaction, which commits both at once)", fmt.Sprintf("%.2f ms / %.2f ms (%d refills)", ms(p50), ms(p99), len(sqlRefill))},
		{"result request handled p50 / p99 (server side, incl. queueing for the PC lock, the pool and CPU)", fmt.Sprintf("%.1f ms / %.1f ms (%d results)", ms(h50), ms(h99), nHandled)},
		{"result round trip p50 / p99 at the agent", fmt.Sprintf("%.1f ms / %.1f ms", ms(rt50), ms(rt99))},
		{"samples with running > target (D2)", fmt.Sprintf("%d", overTarget)},
		{"agent fleet", fleet.Stats.String()},
	}
	var b strings.Builder
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| figure | value |")
	fmt.Fprintln(&b, "| --- | --- |")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", r.name, r.value)
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "RESULT utilisation=%.3f utilisation_raw=%.3f refill_p50_ms=%.2f refill_p99_ms=%.2f result_p99_ms=%.1f executions_per_s=%.1f d2_violations=%d\n",
		util, utilRaw, ms(p50), ms(p99), ms(h99), eps, overTarget)
	return b.String(), nil
}

// refillLatencies pairs every execution created by a refill (beyond each PC's initial
// fill of capacity executions per task) with the latest execution of its PC that became
// final before it — the one whose result freed the slot, in the same transaction — and
// returns created_at − completed_at, sorted.
func refillLatencies(ctx context.Context, st *store.Store, capacity int) ([]time.Duration, error) {
	if _, err := st.Pool.Exec(ctx, `CREATE INDEX IF NOT EXISTS bench_td_pc_completed ON task_devices (pc_id, completed_at)`); err != nil {
		return nil, err
	}
	rows, err := st.Pool.Query(ctx, `
		WITH r AS (
			SELECT n.pc_id, n.created_at, row_number() OVER (PARTITION BY n.task_id, n.pc_id ORDER BY n.id) AS rn
			FROM task_devices n)
		SELECT (extract(epoch FROM r.created_at - f.completed_at) * 1e6)::bigint
		FROM r CROSS JOIN LATERAL (
			SELECT max(o.completed_at) AS completed_at FROM task_devices o
			WHERE o.pc_id = r.pc_id AND o.completed_at <= r.created_at) f
		WHERE r.rn > $1 AND f.completed_at IS NOT NULL`, capacity)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []time.Duration
	for rows.Next() {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return nil, err
		}
		out = append(out, time.Duration(us)*time.Microsecond)
	}
	slices.Sort(out)
	return out, rows.Err()
}

type slotSample struct {
	open, running, target, demand, over int
}

// sample reads every PC's slots: running, target = min(capacity, eligible), and the
// demand-limited target min(target, running + eligible devices the active task has not
// run on yet) — what the engine can fill at that moment.
func sample(ctx context.Context, st *store.Store) (slotSample, error) {
	var s slotSample
	if err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE status IN ('pending', 'running')`).Scan(&s.open); err != nil {
		return s, err
	}
	rows, err := st.Pool.Query(ctx, `
		WITH t AS (SELECT id FROM tasks WHERE status = 'running')
		SELECT s.running, s.target,
		       (SELECT count(*) FROM devices d
		        WHERE d.pc_id = s.pc_id AND d.status IN ('online', 'busy')
		          AND EXISTS (SELECT 1 FROM t)
		          AND NOT EXISTS (SELECT 1 FROM task_devices x JOIN t ON x.task_id = t.id
		                          WHERE x.device_id = d.id AND x.status <> 'CANCELLED')) AS unrun
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
