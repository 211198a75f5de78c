package main

import (
	"context"
	"encoding/json"
	"log"
	"time"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/domain"
)

// burstResult is what one engine did with the burst.
type burstResult struct {
	schedules int
	created   time.Duration // creating every schedule (row + workflow, or native schedule)
	ticks     []time.Time   // the measured ticks
	late      lateness      // every measured fire; never-fired ones are +Inf
	// taskStarted (native only): each measured fire's first WorkflowTaskStarted − its
	// scheduled time, the measure of a workflow action (+Inf: the user's code never began).
	taskStarted lateness
	perBurst    []burstStat
	// window is from the warm-up's last fire to the last measured fire: the work of exactly
	// the measured bursts (their arming included, whenever the engine does it).
	window time.Duration
	cpu    benchstack.CPUSnapshot
	events int64 // history events of the schedule workflows inside window (tickgate only)
	// overlapped: the warm-up burst was still firing at the first measured tick, so the
	// window misses part of the measured bursts' work and per-fire costs are not attributable.
	overlapped bool
}

// burstStat is one tick's fires.
type burstStat struct {
	tick            time.Time
	fired, expected int
	lastMs          float64 // the tick's latest fire (+Inf if one never came)
}

func (b burstResult) fires() int { return b.late.fired() }

// runTickgateBurst creates the schedules through the store and the starter (as the API
// does), waits through the bursts and reads each fire's commit time.
func runTickgateBurst(ctx context.Context, e *env) (burstResult, error) {
	n := *flagSchedules
	res := burstResult{schedules: n}
	spec, compiled, err := burstSpec()
	if err != nil {
		return res, err
	}
	c, err := tickgateSchedules{prefix: "burst", spec: spec, action: eventAction, overlap: domain.DefaultOverlap,
		catchup: time.Minute, summary: "bench burst", parallel: 8}.create(ctx, e, 0, n)
	if err != nil {
		return res, err
	}
	res.created = c.took
	ticks := planBursts("tickgate", compiled, n, c.took, *flagWarmup+*flagBursts)

	from, to, err := res.waitBursts(ctx, e, "tickgate", "recorded", ticks, *flagWarmup, n, 250*time.Millisecond,
		func(ctx context.Context, tick time.Time) (int, error) { return e.runs.recorded(ctx, c.ids, tick) })
	if err != nil {
		return res, err
	}
	if *flagWarmup == 0 {
		// No warm-up: the window starts at the first burst's end and misses its work.
		log.Printf("tickgate: -warmup-bursts 0: CPU and events per fire cover bursts 2…%d only", len(ticks))
	}

	if res.late, err = commitLateness(ctx, e.st, c.ids, res.ticks); err != nil {
		return res, err
	}
	res.tallyBursts()
	if res.events, err = historyEvents(ctx, e.tc, from, to); err != nil {
		return res, err
	}
	return res, pauseAll(ctx, e, c.names, "bench: burst measured")
}

// eventAction is every event-action schedule's action.
var eventAction = json.RawMessage(`{"kind":"event","topic":"bench","type":"tick"}`)

// waitBursts waits through each tick's fires (count polled every poll), keeps the measured
// ticks (those after the first warmup), and reads the CPU over the window from the warm-up's last
// fire to the last measured fire, which it returns.
func (res *burstResult) waitBursts(ctx context.Context, e *env, who, verb string, ticks []time.Time, warmup, n int, poll time.Duration,
	count func(context.Context, time.Time) (int, error)) (from, to time.Time, err error) {
	var cpuFrom benchstack.CPUSnapshot
	for k, tick := range ticks {
		got, last, err := waitFires(ctx, func(ctx context.Context) (int, error) { return count(ctx, tick) }, n, tick, poll)
		if err != nil {
			return from, to, err
		}
		log.Printf("%s: burst %s: %d/%d %s after %s", who, tick.Format(time.TimeOnly), got, n, verb, last.Sub(tick).Round(time.Millisecond))
		if k == warmup-1 || (warmup == 0 && k == 0) {
			if cpuFrom, err = e.stack.CPU(); err != nil {
				return from, to, err
			}
			from = time.Now()
		}
		if k < warmup {
			continue
		}
		res.ticks = append(res.ticks, tick)
		res.perBurst = append(res.perBurst, burstStat{tick: tick, expected: n})
	}
	cpuTo, err := e.stack.CPU()
	if err != nil {
		return from, to, err
	}
	to = time.Now()
	res.cpu, res.window = cpuTo.Sub(cpuFrom), to.Sub(from)
	res.overlapped = len(res.ticks) > 0 && from.After(res.ticks[0])
	return from, to, nil
}

// tallyBursts fills each measured burst's fired count and latest fire from res.late.
func (res *burstResult) tallyBursts() {
	for i := range res.perBurst {
		res.perBurst[i].fired = res.late.firedAt(res.perBurst[i].tick)
		res.perBurst[i].lastMs = res.late.maxAt(res.perBurst[i].tick)
	}
}

// waitFires polls count every poll until it reaches want or -drain-timeout has passed since
// tick; it returns the last count and when it was reached. It only paces the run (the CPU
// window's ends); lateness is read afterwards from what was recorded.
func waitFires(ctx context.Context, count func(context.Context) (int, error), want int, tick time.Time, poll time.Duration) (int, time.Time, error) {
	deadline := tick.Add(*flagDrainTimeout)
	last, lastAt := -1, time.Now()
	for {
		select {
		case <-ctx.Done():
			return 0, time.Time{}, ctx.Err()
		case <-time.After(poll):
		}
		if time.Now().Before(tick) {
			continue
		}
		got, err := count(ctx)
		if err != nil && transient(err) && time.Now().Before(deadline) {
			continue // a busy server's "not now" only delays the next look
		}
		if err != nil {
			return 0, time.Time{}, err
		}
		if got != last {
			last, lastAt = got, time.Now()
		}
		if got >= want || time.Now().After(deadline) {
			return got, lastAt, nil
		}
	}
}
