package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/workflows"
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

// create makes n schedules, numbered from first, the way POST /schedules does — the row at
// rest, with the planner's first look at it (api.NewScheduleRow) — p.parallel at a time.
func (p tickgateSchedules) create(ctx context.Context, e *env, first, n int) (created, error) {
	c := created{names: make([]string, n), ids: make([]int64, n)}
	compiled, err := schedulespec.Normalize(p.spec, time.Now())
	if err != nil {
		return c, fmt.Errorf("spec %+v: %w", p.spec, err)
	}
	var act domain.Action
	if err := json.Unmarshal(p.action, &act); err != nil {
		return c, fmt.Errorf("action %s: %w", p.action, err)
	}
	pol := api.SchedulePolicies{Overlap: p.overlap, CatchupWindow: schedulespec.Duration(p.catchup)}
	start := time.Now()
	err = parallel(ctx, n, p.parallel, func(i int) error {
		// Schedule names spread over 50 tenants' prefixes, as a multi-tenant user would have.
		c.names[i] = fmt.Sprintf("t%02d-%s-%05d", (first+i)%50, p.prefix, first+i)
		req := api.CreateScheduleRequest{Name: c.names[i], Spec: compiled.Spec, Action: act}
		row, err := e.st.CreateSchedule(ctx, api.NewScheduleRow(req, compiled, pol, time.Now().UTC()))
		if err != nil {
			return err
		}
		c.ids[i] = row.ID
		return nil
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
			row, err := e.st.GetSchedule(ctx, names[i])
			if err != nil {
				return err
			}
			_, err = s.PauseSchedule(ctx, row.ID, names[i], workflows.PauseRequest{Note: note, Identity: "bench"})
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
