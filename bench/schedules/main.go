// Command schedules measures the schedule engine on the local stack (`make bench-schedules`)
// the way a user feels it, and Temporal's native Schedules on the same server in the same run:
//
//   - the burst (default): -schedules schedules on one cron whose ticks all fall on the same
//     instant, over -bursts bursts after -warmup-bursts; lateness runs from the nominal tick
//     to the commit of the fire's transaction, read from PostgreSQL;
//   - the same specs as native Temporal Schedules starting a trivial workflow; lateness is the
//     started workflow's start time − its scheduled time;
//   - history events and CPU milliseconds (Temporal server + worker) per fire over the
//     measured bursts, from the workflows' histories and /proc;
//   - with -capacity, the most every-second schedules sustained with p99 lateness ≤ 1 s,
//     stepped up until it fails, as fires_per_s_capacity.
//
// It starts its own PostgreSQL cluster and Temporal (make dev's shape and settings), prints a
// Markdown table and ends with a `RESULT …` line.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

var (
	flagSchedules    = flag.Int("schedules", 1000, "schedules in the burst, all due at the same instants")
	flagCron         = flag.String("cron", "* * * * *", "the burst's spec, for tickgate and native alike (every tick of it is shared by all schedules)")
	flagBursts       = flag.Int("bursts", 3, "measured bursts")
	flagWarmup       = flag.Int("warmup-bursts", 1, "bursts before the measured ones (schedules just created; not measured)")
	flagWorkers      = flag.Int("workers", 1, "tickgate workers (make dev runs one)")
	flagNative       = flag.Bool("native", true, "also run the same specs as native Temporal Schedules")
	flagCapacity     = flag.Bool("capacity", false, "also find the most every-second schedules sustained with p99 ≤ 1 s")
	flagCapStart     = flag.Int("capacity-start", 100, "capacity mode: every-second schedules in the first step")
	flagCapGrowth    = flag.Float64("capacity-growth", 1.5, "capacity mode: each step multiplies the schedules by this")
	flagCapMax       = flag.Int("capacity-max", 5000, "capacity mode: stop stepping up here")
	flagCapMin       = flag.Int("capacity-min", 10, "capacity mode: stop stepping down (when the first step fails) here")
	flagCapWindow    = flag.Duration("capacity-window", 20*time.Second, "capacity mode: measured window of each step")
	flagCapBound     = flag.Duration("capacity-p99", time.Second, "capacity mode: the p99 lateness a step must keep")
	flagDrainTimeout = flag.Duration("drain-timeout", 2*time.Minute, "how long after a tick its fires may still commit before they count as never fired")
)

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	// Ctrl-C still stops the PostgreSQL cluster and Temporal it started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	report, err := run(ctx)
	stop()
	if err != nil {
		log.Fatalf("bench-schedules: %v", err)
	}
	// Printed once everything it started has stopped, so RESULT is the last line.
	fmt.Print(report)
}

// env is what every phase runs on.
type env struct {
	stack *benchstack.Stack
	st    *store.Store
	tc    client.Client
	cfg   config.Config
}

func run(ctx context.Context) (string, error) {
	stack, err := benchstack.Start(ctx, benchstack.Options{Name: "schedules", PGPort: 55470, CommitTimestamps: true})
	if err != nil {
		return "", err
	}
	defer stack.Stop()
	url, err := stack.FreshDatabase(ctx, "bench_schedules")
	if err != nil {
		return "", err
	}
	cfg, err := stack.Config(url)
	if err != nil {
		return "", err
	}
	cfg.TaskQueue = "bench-schedules"
	st, err := store.Open(ctx, url)
	if err != nil {
		return "", err
	}
	defer st.Close()
	tc, err := cfg.DialTemporal(ctx)
	if err != nil {
		return "", err
	}
	defer tc.Close()
	e := &env{stack: stack, st: st, tc: tc, cfg: cfg}
	for i := 0; i < *flagWorkers; i++ {
		w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: tc})
		if err != nil {
			return "", err
		}
		if err := w.Start(); err != nil {
			return "", fmt.Errorf("start worker: %w", err)
		}
		defer w.Stop()
	}
	if err := worker.StartSingletons(ctx, worker.Deps{Config: cfg, Store: st, Temporal: tc}); err != nil {
		return "", err
	}

	rep := &report{temporal: stack.Temporal.Describe(), workers: *flagWorkers}
	burst, err := runTickgateBurst(ctx, e)
	if err != nil {
		return "", fmt.Errorf("tickgate burst: %w", err)
	}
	rep.burst = burst
	if *flagNative {
		nw := sdkworker.New(tc, nativeTaskQueue, sdkworker.Options{})
		registerNative(nw)
		if err := nw.Start(); err != nil {
			return "", fmt.Errorf("start native worker: %w", err)
		}
		defer nw.Stop()
		native, err := runNativeBurst(ctx, e)
		if err != nil {
			return "", fmt.Errorf("native burst: %w", err)
		}
		rep.native = &native
	}
	if *flagCapacity {
		c, err := runCapacity(ctx, e)
		if err != nil {
			return "", fmt.Errorf("capacity: %w", err)
		}
		rep.capacity = &c
	}
	rep.duplicates, rep.eventDuplicates, err = countDuplicates(ctx, st)
	if err != nil {
		return "", err
	}
	return rep.String(), nil
}
