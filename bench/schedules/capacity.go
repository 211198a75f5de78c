package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
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

// runCapacity adds every-second schedules step by step (×-capacity-growth) until p99
// lateness over a step's window exceeds -capacity-p99 or -capacity-max is reached. Ticks
// still unrecorded -capacity-p99 after the window count as later than the bound.
func runCapacity(ctx context.Context, e *env) (capacityResult, error) {
	var res capacityResult
	s := &starter.Starter{Client: e.tc, TaskQueue: e.cfg.TaskQueue}
	var ids []int64
	for count := *flagCapStart; count <= *flagCapMax; count = max(count+1, int(float64(count)**flagCapGrowth)) {
		anchor := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
		spec, err := json.Marshal(schedulespec.Spec{Interval: &schedulespec.Interval{Every: 1, Unit: "SECONDS"}, StartAt: &anchor, Timezone: "UTC"})
		if err != nil {
			return res, err
		}
		have := len(ids)
		more := make([]int64, count-have)
		err = parallel(ctx, len(more), 8, func(i int) error {
			name := fmt.Sprintf("t%02d-cap-%05d", (have+i)%50, have+i)
			row, err := e.st.CreateSchedule(ctx, store.NewSchedule{Name: name, Spec: spec, Overlap: domain.DefaultOverlap,
				Action:          json.RawMessage(`{"kind":"event","topic":"bench","type":"tick"}`),
				CatchupWindowMs: time.Minute.Milliseconds()})
			if err != nil {
				return err
			}
			more[i] = row.ID
			return s.StartSchedule(ctx, row.ID, name, "bench capacity")
		})
		if err != nil {
			return res, err
		}
		ids = append(ids, more...)
		from := time.Now().UTC().Truncate(time.Second).Add(capacitySettle)
		to := from.Add(*flagCapWindow)
		var ticks []time.Time
		for t := from; t.Before(to); t = t.Add(time.Second) {
			ticks = append(ticks, t)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Until(to.Add(*flagCapBound))):
		}
		late, err := commitLateness(ctx, e.st, ids, ticks)
		if err != nil {
			return res, err
		}
		step := capacityStep{schedules: count, expected: len(late), fired: late.fired(), p50: late.pct(50), p99: late.pct(99)}
		step.firesPerS = float64(step.fired) / to.Sub(from).Seconds()
		step.pass = step.p99 <= float64(flagCapBound.Milliseconds())
		res.steps = append(res.steps, step)
		log.Printf("capacity: %d every-second schedules: %d/%d fired, p50 %s p99 %s ms, %.0f fires/s → %s",
			count, step.fired, step.expected, fmtMs(step.p50), fmtMs(step.p99), step.firesPerS, map[bool]string{true: "holds", false: "fails"}[step.pass])
		if !step.pass {
			break
		}
		res.best = &res.steps[len(res.steps)-1]
	}
	return res, nil
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
