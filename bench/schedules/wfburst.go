package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// wfBurstResult is what tickgate did with the workflow-action burst: burstResult's late is
// the target's first WorkflowTaskStarted − the nominal tick.
type wfBurstResult struct {
	burstResult
	// statuses counts the measured ticks' runs by status (a tick with no row at all is in
	// none of them, and +Inf in late).
	statuses map[domain.RunStatus]int
	// warmupMissed counts the warm-up ticks' runs recorded MISSED (not in wf_missed).
	warmupMissed int
}

func (r wfBurstResult) missed() int { return r.statuses[domain.RunMissed] }

// runWorkflowBurst creates -wf-schedules schedules on -cron whose action starts the trivial
// target workflow (overlap allow_all, catch-up window -catchup-window), waits through the
// bursts until every run of a tick is final, and reads from Temporal when each target's code
// began. The schedules are paused after.
func runWorkflowBurst(ctx context.Context, e *env) (wfBurstResult, error) {
	n := *flagWfSchedules
	res := wfBurstResult{burstResult: burstResult{schedules: n}}
	spec, compiled, err := burstSpec()
	if err != nil {
		return res, err
	}
	action, err := json.Marshal(domain.Action{Kind: domain.ActionWorkflow, WorkflowType: targetWorkflow, TaskQueue: targetTaskQueue})
	if err != nil {
		return res, err
	}
	c, err := tickgateSchedules{prefix: "wf", spec: spec, action: action, overlap: domain.OverlapAllowAll,
		catchup: *flagCatchup, summary: "bench workflow burst", parallel: 8}.create(ctx, e, 0, n)
	if err != nil {
		return res, err
	}
	res.created = c.took
	ticks := planBursts("tickgate wf", compiled, n, c.took, *flagWfWarmup+*flagWfBursts)

	// Paced by the runs' rows becoming final (the target closed and tickgate recorded it, or
	// the tick was recorded SKIPPED or MISSED); lateness is read from Temporal afterwards.
	if _, _, err := res.waitBursts(ctx, e, "tickgate wf", "final", ticks, *flagWfWarmup, n, 250*time.Millisecond,
		func(ctx context.Context, tick time.Time) (int, error) { return countFinalRuns(ctx, e.st, c.ids, tick) }); err != nil {
		return res, err
	}
	runs, err := tickgateTargets(ctx, e.st, c.ids, res.ticks)
	if err != nil {
		return res, err
	}
	began, err := taskStartedLateness(ctx, e.tc, runs)
	if err != nil {
		return res, err
	}
	res.late = collect(c.ids, res.ticks, began)
	res.tallyBursts()
	if res.statuses, err = runStatuses(ctx, e.st, c.ids, res.ticks); err != nil {
		return res, err
	}
	warmup, err := runStatuses(ctx, e.st, c.ids, ticks[:len(ticks)-len(res.ticks)])
	if err != nil {
		return res, err
	}
	res.warmupMissed = warmup[domain.RunMissed]
	return res, pauseAll(ctx, e, c.names, "bench: workflow burst measured")
}

// countFinalRuns counts the runs of tick recorded for the schedules ids with a final status.
func countFinalRuns(ctx context.Context, st *store.Store, ids []int64, tick time.Time) (int, error) {
	var n int
	err := st.Pool.QueryRow(ctx, `SELECT count(*) FROM schedule_runs WHERE schedule_id = ANY($1) AND scheduled_at = $2 AND status <> 'RUNNING'`,
		ids, tick).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count final runs of %s: %w", tick, err)
	}
	return n, nil
}

// tickgateTargets lists the target workflows the runs of ticks recorded for the schedules ids.
func tickgateTargets(ctx context.Context, st *store.Store, ids []int64, ticks []time.Time) ([]targetRun[int64], error) {
	rows, err := st.Pool.Query(ctx, `SELECT schedule_id, scheduled_at, workflow_id FROM schedule_runs
		WHERE schedule_id = ANY($1) AND scheduled_at = ANY($2) AND workflow_id <> ''`, ids, ticks)
	if err != nil {
		return nil, fmt.Errorf("read target workflows: %w", err)
	}
	defer rows.Close()
	var runs []targetRun[int64]
	for rows.Next() {
		var r targetRun[int64]
		if err := rows.Scan(&r.fire.id, &r.scheduledAt, &r.workflowID); err != nil {
			return nil, err
		}
		r.fire.tick = r.scheduledAt.UnixNano()
		runs = append(runs, r)
	}
	return runs, rows.Err()
}

// runStatuses counts the runs of ticks recorded for the schedules ids by status.
func runStatuses(ctx context.Context, st *store.Store, ids []int64, ticks []time.Time) (map[domain.RunStatus]int, error) {
	rows, err := st.Pool.Query(ctx, `SELECT status, count(*) FROM schedule_runs
		WHERE schedule_id = ANY($1) AND scheduled_at = ANY($2) GROUP BY status`, ids, ticks)
	if err != nil {
		return nil, fmt.Errorf("count runs by status: %w", err)
	}
	defer rows.Close()
	out := map[domain.RunStatus]int{}
	for rows.Next() {
		var s domain.RunStatus
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}
