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
		func(ctx context.Context, tick time.Time) (int, error) { return e.runs.final(ctx, c.ids, tick) }); err != nil {
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
	if res.statuses, err = e.runs.statuses(ctx, c.ids, res.ticks); err != nil {
		return res, err
	}
	warmup, err := e.runs.statuses(ctx, c.ids, ticks[:len(ticks)-len(res.ticks)])
	if err != nil {
		return res, err
	}
	res.warmupMissed = warmup[domain.RunMissed]
	return res, pauseAll(ctx, e, c.names, "bench: workflow burst measured")
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
