package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// tickgateSchedules is one phase's schedules: what they are and how to create them.
type tickgateSchedules struct {
	prefix   string // names are t<tenant>-<prefix>-<i>
	spec     schedulespec.Spec
	action   json.RawMessage
	overlap  domain.Overlap
	catchup  time.Duration
	summary  string // the workflow's static summary
	parallel int    // schedules created at once
}

// created is what create made: the names, the row ids and how long it took.
type created struct {
	names []string
	ids   []int64
	took  time.Duration
}

// create makes n schedules, numbered from first, the way POST /schedules does — the row
// (next_run_at set as the API sets it), then the schedule's workflow — p.parallel at a time.
func (p tickgateSchedules) create(ctx context.Context, e *env, first, n int) (created, error) {
	c := created{names: make([]string, n), ids: make([]int64, n)}
	compiled, err := schedulespec.Normalize(p.spec, time.Now())
	if err != nil {
		return c, fmt.Errorf("spec %+v: %w", p.spec, err)
	}
	specJSON, err := json.Marshal(compiled.Spec)
	if err != nil {
		return c, err
	}
	s := e.starter()
	start := time.Now()
	err = parallel(ctx, n, p.parallel, func(i int) error {
		// Schedule names spread over 50 tenants' prefixes, as a multi-tenant user would have.
		c.names[i] = fmt.Sprintf("t%02d-%s-%05d", (first+i)%50, p.prefix, first+i)
		var next *time.Time
		if t := compiled.Next(time.Now()); !t.IsZero() {
			next = &t
		}
		row, err := e.st.CreateSchedule(ctx, store.NewSchedule{Name: c.names[i], Spec: specJSON, Action: p.action,
			Overlap: p.overlap, CatchupWindowMs: p.catchup.Milliseconds(), NextRunAt: next})
		if err != nil {
			return err
		}
		c.ids[i] = row.ID
		// StartSchedule keeps a workflow already running under the id: a retry is safe.
		return retryTransient(ctx, func() error { return s.StartSchedule(ctx, row.ID, c.names[i], p.summary) })
	})
	c.took = time.Since(start)
	if err != nil {
		return c, fmt.Errorf("create %s schedules: %w", p.prefix, err)
	}
	return c, nil
}

// pauseAll pauses the schedules, so that they stop loading the stack before a later phase
// (they stay, and their runs count for duplicates).
func pauseAll(ctx context.Context, e *env, names []string, note string) error {
	s := e.starter()
	err := parallel(ctx, len(names), 8, func(i int) error {
		return retryTransient(ctx, func() error {
			_, err := s.PauseSchedule(ctx, names[i], note)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("pause schedules: %w", err)
	}
	return nil
}

func (e *env) starter() *starter.Starter {
	return &starter.Starter{Client: e.tc, TaskQueue: e.cfg.TaskQueue}
}

// burstSpec is the spec every burst's schedules share: -cron, in UTC.
func burstSpec() (schedulespec.Spec, *schedulespec.Compiled, error) {
	spec := schedulespec.Spec{Cron: *flagCron, Timezone: "UTC"}
	compiled, err := schedulespec.Normalize(spec, time.Now())
	if err != nil {
		return spec, nil, fmt.Errorf("spec %q: %w", *flagCron, err)
	}
	return spec, compiled, nil
}

// planBursts is the next k ticks of the burst's schedules, just created, and says so.
func planBursts(who string, compiled *schedulespec.Compiled, n int, took time.Duration, k int) []time.Time {
	ticks := compiled.NextN(time.Now(), k)
	log.Printf("%s: %d schedules created in %s (%.0f/s); bursts at %s … %s", who, n, took.Round(time.Millisecond),
		float64(n)/took.Seconds(), ticks[0].Format(time.TimeOnly), ticks[len(ticks)-1].Format(time.TimeOnly))
	return ticks
}
