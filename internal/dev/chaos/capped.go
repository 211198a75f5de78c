package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/store"
)

// Capped schedules (docs/schedules.md "Policies", max_concurrent): workflow-action schedules
// under allow_all with a concurrency cap, whose runs often outlast their interval, so that
// ticks wait for the cap (or are skipped under overlap_when_full skip) under every trigger —
// their scheduled ticks, catch-up ticks after the outages, manual triggers and a backfill
// the run sends during the faults. Two checks hold them: sampled, no capped schedule ever
// has more runs RUNNING than its cap; at the end, what Temporal saw of their targets — when
// each really began and closed — never has more at one instant.

// chaosLabel labels every schedule of the run: the run pauses them all with one selector.
func chaosLabel() map[string]string { return map[string]string{"chaos": "run"} }

// cappedBackfillTicks is how many past ticks the run backfills on each capped schedule.
const cappedBackfillTicks = 10

// cappedName names the i-th capped schedule: the odd ones skip a tick when full.
func cappedName(i int) (name, whenFull string) {
	whenFull = "buffer"
	if i%2 == 1 {
		whenFull = "skip"
	}
	return fmt.Sprintf("chaos-capped-%02d-%s", i, whenFull), whenFull
}

// cappedAnchor is the capped schedules' start_at: a minute before the run's first tick, on
// the same grid, so that the run can backfill ticks from before their creation (the ticks
// the checker counts, from startAt on, are the same as every other schedule's).
func cappedAnchor(l *load) time.Time { return l.startAt.Add(-time.Minute) }

// createCapped creates the capped schedules.
func createCapped(ctx context.Context, c *apiClient, p Profile, l *load, targetQueue string) error {
	for i := 0; i < p.CappedSchedules; i++ {
		name, whenFull := cappedName(i)
		input := TargetInput{MinMs: p.CappedTargetMin.Milliseconds(), MaxMs: p.CappedTargetMax.Milliseconds(), FailPercent: 10}
		body := map[string]any{
			"name": name,
			"spec": map[string]any{"interval": p.CappedEvery.String(), "start_at": cappedAnchor(l).Format(time.RFC3339)},
			"action": map[string]any{"kind": "workflow", "workflow_type": TargetWorkflowName, "task_queue": targetQueue,
				"input": input},
			"policies": map[string]any{"overlap": "allow_all", "max_concurrent": p.CappedMax, "overlap_when_full": whenFull,
				"catchup_window": p.CatchupWindow.String()},
			"labels": map[string]string{"chaos": "run", "chaos-capped": whenFull},
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/schedules", body, nil); err != nil {
			return err
		}
	}
	return nil
}

// driveCapped sends the capped schedules what their ticks do not: a manual trigger each
// every 15 s, and, once, a backfill of their first cappedBackfillTicks ticks (before their
// creation, so each is a run of its own), for as long as ctx lasts. A call the faults make
// fail is logged and the next one goes on.
func driveCapped(ctx context.Context, c *apiClient, p Profile, l *load, logf func(string, ...any)) {
	backfilled := false
	for ctx.Err() == nil {
		for i := 0; i < p.CappedSchedules; i++ {
			name, _ := cappedName(i)
			if err := c.do(ctx, http.MethodPost, "/api/v1/schedules/"+name+"/trigger", map[string]any{}, nil); err != nil && ctx.Err() == nil {
				logf("chaos: trigger %s: %v", name, err)
			}
			if backfilled {
				continue
			}
			start := cappedAnchor(l)
			end := start.Add(time.Duration(cappedBackfillTicks-1) * p.CappedEvery)
			if err := c.do(ctx, http.MethodPost, "/api/v1/schedules/"+name+"/backfill",
				map[string]any{"start": start.Format(time.RFC3339), "end": end.Format(time.RFC3339)}, nil); err != nil && ctx.Err() == nil {
				logf("chaos: backfill %s: %v", name, err)
			}
		}
		backfilled = true
		sleepCtx(ctx, 15*time.Second)
	}
}

// cappedCheck holds at every instant: no schedule has more runs RUNNING (armed ones among
// them: they hold their place from their arming) than its max_concurrent.
var cappedCheck = check{name: "cap: runs RUNNING ≤ max_concurrent per schedule", count: sqlCount(`
	SELECT count(*) FROM (
	  SELECT r.schedule_id FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
	  WHERE s.max_concurrent IS NOT NULL AND r.status = 'RUNNING'
	  GROUP BY r.schedule_id, s.max_concurrent HAVING count(*) > s.max_concurrent) over_cap`)}

// CapCounts is what the end of the run saw of the capped schedules.
type CapCounts struct {
	Schedules int
	// Runs is how many of their runs started a target; Manual and Backfill how many of
	// them a trigger or the backfill asked for.
	Runs, Manual, Backfill int64
	// Waiting are the ticks still BUFFERED for the cap at the end (the schedules are paused:
	// they start after a resume); Skipped the ticks recorded SKIPPED because it was full. (A
	// tick that waited and then ran is a run like any other: its row no longer says it waited.)
	Waiting, Skipped int64
	// MostAtOnce is the most targets of one capped schedule Temporal had running at one
	// instant; OverCap counts the schedules where that was more than their cap.
	MostAtOnce, OverCap int
	// Unread counts targets whose times could not be read (none may be missing).
	Unread int
}

// finalCapCheck reads, for every capped schedule, when Temporal really began and closed
// each of its targets (a delayed start's execution time to its close), and finds the most
// that ran at one instant. (The run rows' times come from two clocks — a start from the
// workflow's, an outcome from PostgreSQL's — and an outcome is recorded after the target
// closed; Temporal's own times are the ones a breach would show in.)
func finalCapCheck(ctx context.Context, st *store.Store, address string) (CapCounts, error) {
	var out CapCounts
	cfg := config.Config{TemporalAddress: address, TemporalNamespace: "default"}
	opts, err := cfg.ClientOptions()
	if err != nil {
		return out, err
	}
	tc, err := client.DialContext(ctx, opts)
	if err != nil {
		return out, fmt.Errorf("final cap check: dial %s: %w", address, err)
	}
	defer tc.Close()
	rows, err := st.Pool.Query(ctx, `
		SELECT s.id, s.max_concurrent,
		       count(*) FILTER (WHERE r.reason LIKE 'max_concurrent %' AND r.status = 'SKIPPED'),
		       count(*) FILTER (WHERE r.reason LIKE 'max_concurrent %' AND r.status = 'BUFFERED'),
		       count(*) FILTER (WHERE r.fired_at IS NOT NULL AND r.trigger = 'manual'),
		       count(*) FILTER (WHERE r.fired_at IS NOT NULL AND r.trigger = 'backfill'),
		       array_remove(array_agg(CASE WHEN r.fired_at IS NOT NULL AND r.workflow_id <> '' THEN r.workflow_id END), NULL)
		FROM schedules s JOIN schedule_runs r ON r.schedule_id = s.id
		WHERE s.max_concurrent IS NOT NULL AND r.retracted_at IS NULL
		GROUP BY s.id, s.max_concurrent ORDER BY s.id`)
	if err != nil {
		return out, fmt.Errorf("final cap check: %w", err)
	}
	type capped struct {
		limit int
		ids   []string
	}
	var all []capped
	for rows.Next() {
		var c capped
		var limit int32
		var skipped, waiting, manual, backfill int64
		var id int64
		if err := rows.Scan(&id, &limit, &skipped, &waiting, &manual, &backfill, &c.ids); err != nil {
			rows.Close()
			return out, fmt.Errorf("final cap check: %w", err)
		}
		c.limit = int(limit)
		all = append(all, c)
		out.Schedules++
		out.Skipped += skipped
		out.Waiting += waiting
		out.Manual += manual
		out.Backfill += backfill
		out.Runs += int64(len(c.ids))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("final cap check: %w", err)
	}
	for _, c := range all {
		var spans [][2]time.Time
		for _, id := range c.ids {
			d, err := tc.DescribeWorkflowExecution(ctx, id, "")
			var notFound *serviceerror.NotFound
			if errors.As(err, &notFound) {
				out.Unread++
				continue
			}
			if err != nil {
				return out, fmt.Errorf("final cap check: describe %s: %w", id, err)
			}
			info := d.GetWorkflowExecutionInfo()
			if info.GetCloseTime() == nil {
				out.Unread++ // still running after the drain
				continue
			}
			from, to := info.GetExecutionTime().AsTime(), info.GetCloseTime().AsTime()
			if to.After(from) { // a delayed start terminated before it began never ran
				spans = append(spans, [2]time.Time{from, to})
			}
		}
		most := mostAtOnce(spans)
		out.MostAtOnce = max(out.MostAtOnce, most)
		if most > c.limit {
			out.OverCap++
		}
	}
	return out, nil
}

// mostAtOnce is the most spans covering one instant (one ending as another begins does not
// overlap it).
func mostAtOnce(spans [][2]time.Time) int {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(spans))
	for _, s := range spans {
		edges = append(edges, edge{s[0], 1}, edge{s[1], -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// pauseBySelector pauses every schedule of the run with one bulk pause (the API pauses each
// through its own command, 16 at a time), and answers how many it reached.
func pauseBySelector(ctx context.Context, api *apiClient) (int, error) {
	var answer struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	err := api.do(ctx, http.MethodPost, "/api/v1/schedules/pause", map[string]any{"selector": "chaos=run", "note": "chaos run ends"}, &answer)
	return len(answer.Items), err
}
