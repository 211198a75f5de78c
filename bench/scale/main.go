// Command scale measures tickgate with many schedules on this machine (`make bench-scale`),
// the way a user feels it, and native Temporal Schedules' creation in the same run:
//
//   - creation: -schedules schedules through the HTTP API's bulk create (1,000 a request,
//     -parallel requests at once), then -single more through POST /schedules one at a time
//     (-parallel at once); create_per_s and single_create_per_s;
//   - idle: the CPU of tickgate (worker and API, this process), PostgreSQL and Temporal over
//     -idle once they are created, and the bytes each schedule costs in PostgreSQL (its row
//     and indexes) and in Temporal's persistence (the growth over the creation);
//   - the burst: every schedule shares one tick (a daily cron at a minute after creation
//     and the idle window); lateness runs from the tick to the commit that made its fire
//     visible to a consumer of /events (track_commit_timestamp), p50 / p99 / max; MISSED
//     and early fires are counted, and the CPU per fire of each process; a consumer of
//     /events long-polling at the end of the feed from before the tick reads the burst in
//     pages of 5,000: consumer_p99_lateness_ms runs from the tick to each event's page read;
//   - native: as many native Temporal Schedules of the same spec as -native-budget allows,
//     created one by one (-parallel at once): their creation rate;
//   - one-time: -one-time one-time schedules (spec {at}, per-user reminders a day after the
//     burst, each at a second of its own) through the same bulk API and -one-time-single
//     through POST /schedules, in the same run: the passes of both kinds alternate, a
//     quarter of each in turn, so that neither creates into a table the other has grown
//     alone; one_time_create_per_s against create_per_s.
//   - resident (-resident): the same with TICKGATE_SCHEDULES_RESIDENT=true, every schedule's
//     workflow open between fires (docs/schedules.md "Resident workflows"): how fast the
//     workflows open after their creation (resident_open_per_s, from the first create until
//     every workflow is open and has rested its schedule in place) and the CPU that costs, the bytes in Temporal once they are all open and again after the
//     burst (each run looks at its row once after its fire), and the burst with them open.
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
)

var (
	flagSchedules    = flag.Int("schedules", 100000, "schedules created and burst at one tick")
	flagMillion      = flag.Bool("million", false, "a million schedules (sets -schedules 1000000)")
	flagBulk         = flag.Int("bulk", 1000, "schedules per bulk create request (at most 1,000)")
	flagParallel     = flag.Int("parallel", 4, "create requests in flight at once")
	flagSingle       = flag.Int("single", 2000, "schedules created one request each, after the bulk ones")
	flagOneTime      = flag.Int("one-time", -1, "one-time schedules (spec.at) created through the bulk API beside the cron ones (-1: as many as -schedules)")
	flagOneSingle    = flag.Int("one-time-single", -1, "one-time schedules created one request each (-1: as many as -single)")
	flagIdle         = flag.Duration("idle", 30*time.Second, "idle window measured after creation")
	flagNativeBudget = flag.Duration("native-budget", time.Minute, "time given to creating native Temporal Schedules (0: none)")
	flagDrain        = flag.Duration("drain-timeout", 5*time.Minute, "how long after the tick its fires may still become visible")
	flagRateEstimate = flag.Int("rate-estimate", 5000, "creates a second assumed when placing the burst's tick after the creation (the run stops if creation overruns it)")
	flagResident     = flag.Bool("resident", false, "TICKGATE_SCHEDULES_RESIDENT=true: every schedule's workflow stays open between fires")
	flagOpenEstimate = flag.Int("open-estimate", 150, "with -resident, resident workflows opened a second assumed when placing the burst's tick")
)

func main() {
	flag.Parse()
	if *flagMillion {
		*flagSchedules = 1000000
	}
	if *flagOneTime < 0 {
		*flagOneTime = *flagSchedules
	}
	if *flagOneSingle < 0 {
		*flagOneSingle = *flagSingle
	}
	if *flagBulk < 1 || *flagBulk > 1000 || *flagParallel < 1 || *flagSchedules < 1 {
		fmt.Fprintln(os.Stderr, "bench-scale: -bulk 1..1000, -parallel ≥ 1, -schedules ≥ 1")
		os.Exit(2)
	}
	log.SetFlags(log.Ltime)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rep, err := run(ctx)
	stop()
	if err != nil {
		log.Fatalf("bench-scale: %v", err)
	}
	fmt.Print(rep)
}
