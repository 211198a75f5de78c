// Command schedules measures the schedule engine on the local stack (`make bench-schedules`):
// many every-second schedules fired by two workers; it reports fire lateness and throughput
// from what was committed in PostgreSQL, and checks that no tick fired twice.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

var (
	flagSchedules = flag.Int("schedules", 200, "every-second schedules")
	flagDuration  = flag.Duration("duration", 30*time.Second, "measured window")
	flagWorkers   = flag.Int("workers", 2, "worker instances polling the task queue")
)

func main() {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Printf("bench-schedules: %v", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "schedules", PGPort: 55470, CommitTimestamps: true})
	if err != nil {
		return err
	}
	defer stack.Stop()
	dbURL, err := stack.FreshDatabase(ctx, "bench_schedules")
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, dbURL+"&pool_max_conns=32")
	if err != nil {
		return err
	}
	defer st.Close()
	cfg := config.Config{DatabaseURL: dbURL, TemporalAddress: stack.Temporal.Address(), TemporalNamespace: "default", TaskQueue: "bench-schedules"}
	tc, err := cfg.DialTemporal(ctx)
	if err != nil {
		return err
	}
	defer tc.Close()
	for i := 0; i < *flagWorkers; i++ {
		w := sdkworker.New(tc, cfg.TaskQueue, sdkworker.Options{MaxConcurrentActivityExecutionSize: 200})
		if err := worker.Register(w, worker.Deps{Config: cfg, Store: st, Temporal: tc}); err != nil {
			return err
		}
		if err := w.Start(); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		defer w.Stop()
	}

	s := &starter.Starter{Client: tc, TaskQueue: cfg.TaskQueue}
	anchor := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
	spec, _ := json.Marshal(map[string]any{"interval": map[string]any{"every": 1, "unit": "SECONDS"}, "start_at": anchor, "timezone": "UTC"})
	startCreate := time.Now()
	for i := 0; i < *flagSchedules; i++ {
		name := fmt.Sprintf("bench-%04d", i)
		row, err := st.CreateSchedule(ctx, store.NewSchedule{Name: name, Spec: spec, Overlap: domain.DefaultOverlap,
			Action: json.RawMessage(`{"kind":"event","topic":"bench","type":"tick"}`), CatchupWindowMs: time.Minute.Milliseconds()})
		if err != nil {
			return err
		}
		if err := s.StartSchedule(ctx, row.ID, name, "bench"); err != nil {
			return err
		}
	}
	created := time.Since(startCreate)
	log.Printf("created %d schedules in %s; measuring %s", *flagSchedules, created.Round(time.Millisecond), *flagDuration)
	// Warm up for 5 s, then measure ticks whose nominal time falls in the window.
	from := time.Now().UTC().Truncate(time.Second).Add(5 * time.Second)
	to := from.Add(*flagDuration)
	time.Sleep(time.Until(to.Add(5 * time.Second)))

	rows, err := st.Pool.Query(ctx, `SELECT extract(epoch FROM fired_at - scheduled_at) FROM schedule_runs
		WHERE scheduled_at >= $1 AND scheduled_at < $2 AND fired_at IS NOT NULL`, from, to)
	if err != nil {
		return fmt.Errorf("read lateness: %w", err)
	}
	var late []float64
	for rows.Next() {
		var v float64
		if err := rows.Scan(&v); err != nil {
			return err
		}
		late = append(late, v*1000)
	}
	rows.Close()
	var notFired, skipped, missed int
	dup, err := st.CountDuplicateTicks(ctx)
	if err != nil {
		return err
	}
	if err := st.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM schedule_runs WHERE scheduled_at >= $1 AND scheduled_at < $2 AND status = 'SKIPPED'),
		(SELECT count(*) FROM schedule_runs WHERE scheduled_at >= $1 AND scheduled_at < $2 AND status = 'MISSED')`, from, to).Scan(&skipped, &missed); err != nil {
		return fmt.Errorf("read checks: %w", err)
	}
	expected := *flagSchedules * int(flagDuration.Seconds())
	notFired = expected - len(late) - skipped - missed
	sort.Float64s(late)
	pct := func(p float64) float64 {
		if len(late) == 0 {
			return 0
		}
		return late[min(len(late)-1, int(p*float64(len(late))))]
	}
	firesPerS := float64(len(late)) / flagDuration.Seconds()

	fmt.Printf("\n## bench-schedules\n\n")
	fmt.Printf("| figure | value |\n| --- | --- |\n")
	fmt.Printf("| workload | %d schedules × 1 fire/s (event action), %d workers, %s window |\n", *flagSchedules, *flagWorkers, *flagDuration)
	fmt.Printf("| schedules created (row + workflow start) | %s |\n", created.Round(time.Millisecond))
	fmt.Printf("| ticks due in window | %d |\n", expected)
	fmt.Printf("| fired | %d |\n", len(late))
	fmt.Printf("| skipped / missed / not recorded | %d / %d / %d |\n", skipped, missed, notFired)
	fmt.Printf("| duplicate ticks | %d |\n", dup)
	fmt.Printf("| fires per second | %.0f |\n", firesPerS)
	fmt.Printf("| lateness p50 / p95 / p99 / max | %.0f / %.0f / %.0f / %.0f ms |\n", pct(.50), pct(.95), pct(.99), pct(1))
	fmt.Printf("\nRESULT p50_lateness_ms=%.0f p99_lateness_ms=%.0f fires_per_s=%.0f duplicates=%d unrecorded=%d\n",
		pct(.50), pct(.99), firesPerS, dup, notFired)
	return nil
}
