package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// capacityStep is one count of every-second schedules held for one window.
type capacityStep struct {
	schedules       int
	expected, fired int
	p50, p99        float64
	firesPerS       float64 // fires committed per second of the window (not the offered load)
	pass            bool
}

type capacityResult struct {
	steps []capacityStep
	best  *capacityStep // the largest step that kept p99 ≤ -capacity-p99; nil if none did
}

// capacitySettle is how long new schedules run before a step's window opens: their first
// ticks fire with the workflows' start-up.
const capacitySettle = 5 * time.Second

// runCapacity steps the number of every-second schedules up (×-capacity-growth) while a
// step's p99 lateness stays ≤ -capacity-p99, up to -capacity-max. If the first step already
// fails it steps down instead (pausing the surplus schedules) until one holds or
// -capacity-min is passed, so the figure says what this machine sustains rather than 0.
// Ticks still unrecorded -capacity-p99 after a window count as later than the bound.
func runCapacity(ctx context.Context, e *env) (capacityResult, error) {
	var res capacityResult
	c := &capacityRun{e: e}
	count := *flagCapStart
	first, err := c.measure(ctx, count)
	if err != nil {
		return res, err
	}
	res.steps = append(res.steps, first)
	up := first.pass
	for {
		if up {
			res.best = &res.steps[len(res.steps)-1]
			if count = max(count+1, int(float64(count)**flagCapGrowth)); count > *flagCapMax {
				return res, nil
			}
		} else if count = int(float64(count) / *flagCapGrowth); count < *flagCapMin {
			return res, nil
		}
		step, err := c.measure(ctx, count)
		if err != nil {
			return res, err
		}
		res.steps = append(res.steps, step)
		if step.pass != up { // up: the first failure ends it; down: the first hold does
			if step.pass {
				res.best = &res.steps[len(res.steps)-1]
			}
			return res, nil
		}
	}
}

// capacityRun holds the every-second schedules created so far; the first running of them
// fire, the rest are paused.
type capacityRun struct {
	e       *env
	names   []string
	ids     []int64
	running int
}

// measure makes exactly count schedules fire, lets them settle and measures one window.
func (c *capacityRun) measure(ctx context.Context, count int) (capacityStep, error) {
	if err := c.scale(ctx, count); err != nil {
		return capacityStep{}, err
	}
	from := time.Now().UTC().Truncate(time.Second).Add(capacitySettle)
	to := from.Add(*flagCapWindow)
	var ticks []time.Time
	for t := from; t.Before(to); t = t.Add(time.Second) {
		ticks = append(ticks, t)
	}
	select {
	case <-ctx.Done():
		return capacityStep{}, ctx.Err()
	case <-time.After(time.Until(to.Add(*flagCapBound))):
	}
	late, err := commitLateness(ctx, c.e.st, c.ids[:count], ticks)
	if err != nil {
		return capacityStep{}, err
	}
	step := capacityStep{schedules: count, expected: len(late), fired: late.fired(), p50: late.pct(50), p99: late.pct(99)}
	step.firesPerS = float64(step.fired) / to.Sub(from).Seconds()
	step.pass = step.p99 <= float64(flagCapBound.Milliseconds())
	log.Printf("capacity: %d every-second schedules: %d/%d fired, p50 %s p99 %s ms, %.0f fires/s → %s",
		count, step.fired, step.expected, fmtMs(step.p50), fmtMs(step.p99), step.firesPerS, map[bool]string{true: "holds", false: "fails"}[step.pass])
	return step, nil
}

// scale creates schedules up to count, or pauses those beyond it.
func (c *capacityRun) scale(ctx context.Context, count int) error {
	if count < c.running {
		err := pauseAll(ctx, c.e, c.names[count:c.running], "bench: capacity step down")
		c.running = count
		return err
	}
	anchor := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
	made, err := tickgateSchedules{prefix: "cap", spec: schedulespec.Spec{Interval: &schedulespec.Interval{Every: 1, Unit: "SECONDS"}, StartAt: &anchor, Timezone: "UTC"},
		action: eventAction, overlap: domain.DefaultOverlap, catchup: time.Minute, summary: "bench capacity", parallel: 8}.create(ctx, c.e, len(c.ids), count-len(c.ids))
	c.names, c.ids, c.running = append(c.names, made.names...), append(c.ids, made.ids...), count
	return err
}

func fmtMs(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsNaN(v):
		return "na"
	}
	return fmt.Sprintf("%.0f", v)
}
