package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// bigBurstResult is what tickgate did with the big burst (burstResult's late: commit
// lateness, as in the event burst).
type bigBurstResult struct {
	burstResult
	statuses map[domain.RunStatus]int // the measured ticks' runs by status
	// warmups are the ticks after creation that were not measured, each with its fires and
	// its latest one; recorded[i] counts warmups[i]'s runs of any status (MISSED too).
	warmups   []burstStat
	recorded  []int
	firstTick time.Time // the schedules' first tick (their spec's start_at bounds it)
	// settled is false when even the last warm-up tick was not fully recorded before the
	// next tick: the measured tick then ran on a stack still loading.
	settled bool
}

func (r bigBurstResult) missed() int { return r.statuses[domain.RunMissed] }

// runBigBurst creates -big-schedules event-action schedules on -cron, their first tick
// -big-start-after ahead, -big-parallel at a time. Ticks during creation are not measured. After it, each tick is a warm-up until one
// has a run of every schedule recorded before the next tick (every schedule's workflow has
// then loaded and fired, or recorded the tick MISSED), at most -big-warmup-max of them; the -big-bursts ticks after that are
// measured by commit lateness, as the event burst is.
func runBigBurst(ctx context.Context, e *env, pauseAfter bool) (bigBurstResult, error) {
	n := *flagBigSchedules
	res := bigBurstResult{burstResult: burstResult{schedules: n}}
	spec, _, err := burstSpec()
	if err != nil {
		return res, err
	}
	// The schedules' first tick is the first of -cron at or after -big-start-after from now.
	// Created before it, they load and sleep while the rest are created, instead of firing
	// every tick meanwhile: a growing warm-up load that made creating 10,000 take 7 min (23
	// a second) on the dev server. A creation that overruns it fires those ticks, unmeasured.
	start := time.Now().Add(*flagBigStartAfter).UTC()
	spec.StartAt = &start
	compiled, err := schedulespec.Normalize(spec, time.Now())
	if err != nil {
		return res, fmt.Errorf("spec %+v: %w", spec, err)
	}
	res.firstTick = compiled.Next(time.Now())
	c, err := tickgateSchedules{prefix: "big", spec: spec, action: eventAction, overlap: domain.DefaultOverlap,
		catchup: *flagCatchup, summary: "bench big burst", parallel: *flagBigParallel}.create(ctx, e, 0, n)
	if err != nil {
		return res, err
	}
	res.created = c.took
	ticks := planBursts("tickgate big", compiled, n, c.took, *flagBigWarmupMax+*flagBigBursts)
	if ticks[0].After(res.firstTick) {
		log.Printf("tickgate big: creation overran the first tick %s (-big-start-after %s): the ticks since were not measured",
			res.firstTick.Format(time.TimeOnly), *flagBigStartAfter)
	}

	wait := func(tick time.Time) (int, time.Time, error) {
		// Polled once a second: each count looks up every schedule's runs.
		got, last, err := waitFires(ctx, func(ctx context.Context) (int, error) { return e.runs.recorded(ctx, c.ids, tick) }, n, tick, time.Second)
		if err == nil {
			log.Printf("tickgate big: burst %s: %d/%d recorded after %s", tick.Format(time.TimeOnly), got, n, last.Sub(tick).Round(time.Millisecond))
		}
		return got, last, err
	}
	k := 0
	for ; ; k++ {
		got, last, err := wait(ticks[k])
		if err != nil {
			return res, err
		}
		res.warmups = append(res.warmups, burstStat{tick: ticks[k], expected: n})
		res.recorded = append(res.recorded, got)
		res.settled = got == n && last.Before(ticks[k+1])
		if res.settled || len(res.warmups) == *flagBigWarmupMax {
			break
		}
	}
	res.ticks = ticks[k+1 : k+1+*flagBigBursts]
	// The CPU window, as the first burst's: from the last warm-up's fires recorded to the
	// last measured tick's.
	cpuFrom, err := e.stack.CPU()
	if err != nil {
		return res, err
	}
	from := time.Now()
	for _, tick := range res.ticks {
		if _, _, err := wait(tick); err != nil {
			return res, err
		}
		res.perBurst = append(res.perBurst, burstStat{tick: tick, expected: n})
	}
	cpuTo, err := e.stack.CPU()
	if err != nil {
		return res, err
	}
	res.cpu, res.window = cpuTo.Sub(cpuFrom), time.Since(from)
	res.overlapped = from.After(res.ticks[0])
	if res.late, err = commitLateness(ctx, e.st, c.ids, res.ticks); err != nil {
		return res, err
	}
	res.tallyBursts()
	if res.statuses, err = e.runs.statuses(ctx, c.ids, res.ticks); err != nil {
		return res, err
	}
	for i, w := range res.warmups {
		warm, err := commitLateness(ctx, e.st, c.ids, []time.Time{w.tick})
		if err != nil {
			return res, err
		}
		res.warmups[i].fired, res.warmups[i].lastMs = warm.firedAt(w.tick), warm.maxAt(w.tick)
	}
	if !pauseAfter {
		return res, nil
	}
	return res, pauseAll(ctx, e, c.names, "bench: big burst measured")
}
