// Command schedules measures the schedule engine on the local stack (`make bench-schedules`)
// the way a user feels it, and Temporal's native Schedules on the same server in the same run:
//
//   - the burst (default): -schedules schedules on one cron whose ticks all fall on the same
//     instant, an event action each, over -bursts bursts after -warmup-bursts; lateness runs
//     from the nominal tick to the commit of the fire's transaction, read from PostgreSQL;
//   - history events and CPU milliseconds (Temporal server + worker) per fire over the
//     measured bursts, from the workflows' histories and /proc;
//   - the workflow-action burst (-wf): -wf-schedules schedules on the same cron starting a
//     trivial workflow (overlap allow_all); lateness runs from the nominal tick to the
//     target's first WorkflowTaskStarted, read from Temporal's history: when the user's code
//     begins;
//   - the same specs as native Temporal Schedules starting the same workflow on the same
//     worker; lateness is the started workflow's start time − its scheduled time, and its
//     first WorkflowTaskStarted − its scheduled time;
//   - the http-action burst (-http): -http schedules on the same cron whose http action posts
//     to a receiver in this process; lateness runs from the nominal tick to the receiver's
//     handler entered for the tick's Idempotency-Key (each key counted once; duplicates and
//     keys that never came reported); and, with -native, as many native Temporal Schedules
//     starting a workflow that runs one HTTP activity posting to the same receiver, measured
//     the same way;
//   - CPU milliseconds per fire of each process (Temporal server, this process with the
//     tickgate workers, PostgreSQL) for every burst measured;
//   - the big burst (-big): -big-schedules event-action schedules sharing every tick,
//     measured as the first burst is, once every schedule has loaded and fired once;
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
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"

	"go.temporal.io/sdk/client"
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

	flagWf          = flag.Bool("wf", true, "also run the workflow-action burst")
	flagWfSchedules = flag.Int("wf-schedules", 1000, "workflow-action burst: schedules (native Temporal Schedules run -schedules of the same spec and target: give the same number)")
	flagWfBursts    = flag.Int("wf-bursts", 3, "workflow-action burst: measured bursts")
	flagWfWarmup    = flag.Int("wf-warmup-bursts", 1, "workflow-action burst: bursts before the measured ones")
	flagCatchup     = flag.Duration("catchup-window", 0, "catch-up window of the workflow-action, http-action and big bursts' schedules (0, the API's default)")

	flagBig           = flag.Bool("big", true, "also run the big burst")
	flagBigSchedules  = flag.Int("big-schedules", 10000, "big burst: event-action schedules sharing every tick")
	flagBigBursts     = flag.Int("big-bursts", 1, "big burst: measured bursts")
	flagBigWarmupMax  = flag.Int("big-warmup-max", 3, "big burst: at most this many warm-up ticks after creation (ticks are warm-ups until one is fully recorded before the next)")
	flagBigParallel   = flag.Int("big-parallel", 16, "big burst: schedules created at once")
	flagBigStartAfter = flag.Duration("big-start-after", 5*time.Minute, "big burst: the schedules' spec starts (start_at) this long after creation begins, so they do not fire while the rest are created; their first tick is -cron's first at or after it")
)

func main() {
	flag.Parse()
	if err := checkFlags(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-schedules:", err)
		os.Exit(2)
	}
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

func checkFlags() error {
	switch {
	case *flagWf && *flagNative && *flagWfSchedules != *flagSchedules:
		return fmt.Errorf("-wf-schedules %d ≠ -schedules %d: the native phase serves both comparisons with -schedules schedules; give the same number, or -native=false", *flagWfSchedules, *flagSchedules)
	case *flagBig && *flagBigWarmupMax < 1:
		return fmt.Errorf("-big-warmup-max %d: at least one tick after creation is a warm-up", *flagBigWarmupMax)
	case *flagHTTP < 0:
		return fmt.Errorf("-http %d: give a number of schedules, or 0 to skip the http burst", *flagHTTP)
	case *flagHTTPBig < 0:
		return fmt.Errorf("-http-big %d: give a number of schedules, or 0 to skip the big http burst", *flagHTTPBig)
	case *flagBig && *flagBigBursts < 1, *flagWf && *flagWfBursts < 1, (*flagHTTP > 0 || *flagHTTPBig > 0) && *flagHTTPBursts < 1, *flagBursts < 1:
		return fmt.Errorf("every phase run measures at least one burst")
	}
	return nil
}

// env is what every phase runs on.
type env struct {
	stack *benchstack.Stack
	st    *store.Store
	runs  runsTable
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
	var rcv *receiver
	if *flagHTTP > 0 || *flagHTTPBig > 0 {
		// The http bursts post to a receiver in this process, on a loopback address the
		// outbound rule refuses unless TICKGATE_HTTP_ALLOW lists it (internal/outbound).
		if cfg.HTTPAllow, err = outbound.Parse("127.0.0.1"); err != nil {
			return "", err
		}
		if rcv, err = startReceiver(); err != nil {
			return "", err
		}
		defer rcv.stop()
	}
	tel := telemetry.Off()
	var sink *traceSink
	if *flagTraces {
		if tel, sink, err = startTraces(ctx); err != nil {
			return "", err
		}
		defer sink.stop()
	}
	st, err := store.Open(ctx, url, store.WithQueryTracer(tel.QueryTracer()))
	if err != nil {
		return "", err
	}
	defer st.Close()
	copts, err := cfg.ClientOptions()
	if err != nil {
		return "", err
	}
	if ti, err := tel.TemporalInterceptor(); err != nil {
		return "", err
	} else if ti != nil {
		copts.Interceptors = append(copts.Interceptors, ti)
	}
	tc, err := client.DialContext(ctx, copts)
	if err != nil {
		return "", err
	}
	defer tc.Close()
	e := &env{stack: stack, st: st, runs: runsTable{st: st}, tc: tc, cfg: cfg}
	for i := 0; i < *flagWorkers; i++ {
		w, err := worker.New(worker.Deps{Config: cfg, Store: st, Temporal: tc, Telemetry: tel})
		if err != nil {
			return "", err
		}
		if err := w.Start(); err != nil {
			return "", fmt.Errorf("start worker: %w", err)
		}
		defer w.Stop()
	}
	if err := worker.StartSingletons(ctx, worker.Deps{Config: cfg, Store: st, Temporal: tc, Telemetry: tel}); err != nil {
		return "", err
	}

	rep := &report{temporal: stack.Temporal.Describe(), workers: *flagWorkers, traces: sink}
	burst, err := runTickgateBurst(ctx, e)
	if err != nil {
		return "", fmt.Errorf("tickgate burst: %w", err)
	}
	rep.burst = burst
	if *flagWf || *flagNative {
		// Both engines' workflow actions start the same target on the same worker (and native
		// Temporal Schedules' http burst its workflow and activity).
		tw, err := startTargetWorker(tc)
		if err != nil {
			return "", err
		}
		defer tw.Stop()
	}
	if *flagWf {
		wf, err := runWorkflowBurst(ctx, e)
		if err != nil {
			return "", fmt.Errorf("workflow burst: %w", err)
		}
		rep.wf = &wf
		if *flagFloor {
			floor, err := runFloor(ctx, e)
			if err != nil {
				return "", fmt.Errorf("floor: %w", err)
			}
			rep.floor = &floor
		}
	}
	if *flagNative {
		native, err := runNativeBurst(ctx, e)
		if err != nil {
			return "", fmt.Errorf("native burst: %w", err)
		}
		rep.native = &native
	}
	if *flagHTTP > 0 {
		h, err := runHTTPBurst(ctx, e, rcv, *flagHTTP, receiverPathTickgate, "http", true)
		if err != nil {
			return "", fmt.Errorf("http burst: %w", err)
		}
		rep.http = &h
		if *flagNative {
			nh, err := runNativeHTTPBurst(ctx, e, rcv)
			if err != nil {
				return "", fmt.Errorf("native http burst: %w", err)
			}
			rep.nativeHTTP = &nh
		}
	}
	if *flagBig {
		// Paused only when a later phase needs a quiet stack.
		big, err := runBigBurst(ctx, e, *flagCapacity || *flagHTTPBig > 0)
		if err != nil {
			return "", fmt.Errorf("big burst: %w", err)
		}
		rep.big = &big
	}
	if *flagCapacity {
		c, err := runCapacity(ctx, e)
		if err != nil {
			return "", fmt.Errorf("capacity: %w", err)
		}
		rep.capacity = &c
	}
	if *flagHTTPBig > 0 {
		// Last: its schedules are left firing (pausing ten thousand takes their workflows
		// longer than the phase itself).
		h, err := runHTTPBurst(ctx, e, rcv, *flagHTTPBig, receiverPathTickgateBig, "httpbig", false)
		if err != nil {
			return "", fmt.Errorf("big http burst: %w", err)
		}
		rep.httpBig = &h
	}
	rep.duplicates, rep.eventDuplicates, err = e.runs.duplicates(ctx)
	if err != nil {
		return "", err
	}
	return rep.String(), nil
}
