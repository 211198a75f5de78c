package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// runNativeBurst runs the same specs as native Temporal Schedules (client.ScheduleClient,
// default policies but overlap ALLOW_ALL) on the same server; a fire's lateness is the started workflow's start
// time − its scheduled time (TemporalScheduledStartTime). The schedules are deleted after.
func runNativeBurst(ctx context.Context, e *env) (burstResult, error) {
	n := *flagSchedules
	res := burstResult{schedules: n}
	if err := nativeCron(); err != nil {
		return res, err
	}
	_, compiled, err := burstSpec()
	if err != nil {
		return res, err
	}
	ids, took, remove, err := createNativeSchedules(ctx, e, "native", n, func(id string) *client.ScheduleWorkflowAction {
		return &client.ScheduleWorkflowAction{ID: id, Workflow: targetWorkflow, TaskQueue: targetTaskQueue}
	})
	defer remove()
	if err != nil {
		return res, err
	}
	res.created = took
	ticks := planBursts("native", compiled, n, res.created, *flagWarmup+*flagBursts)

	// Polled once a second: each count is a visibility query on the server being measured.
	if _, _, err := res.waitBursts(ctx, e, "native", "started", ticks, *flagWarmup, n, time.Second,
		func(ctx context.Context, tick time.Time) (int, error) {
			return countNative(ctx, e.tc, targetWorkflow, tick, false)
		}); err != nil {
		return res, err
	}
	// The user's code of a started run may begin later still: wait until every measured run
	// has closed (the trivial workflow closes in its first workflow task) or its tick's drain
	// time has passed, before reading when each began.
	for _, tick := range res.ticks {
		got, _, err := waitFires(ctx, func(ctx context.Context) (int, error) { return countNative(ctx, e.tc, targetWorkflow, tick, true) }, n, tick, time.Second)
		if err != nil {
			return res, err
		}
		if got < n {
			log.Printf("native: burst %s: %d/%d runs closed by -drain-timeout", tick.Format(time.TimeOnly), got, n)
		}
	}
	if res.late, res.taskStarted, err = nativeLateness(ctx, e.tc, ids, res.ticks); err != nil {
		return res, err
	}
	res.tallyBursts()
	return res, nil
}

// nativeCron refuses a -cron native Temporal Schedules would read otherwise than tickgate.
func nativeCron() error {
	if len(strings.Fields(*flagCron)) != 5 {
		// Temporal reads a sixth field as the year, not seconds first as tickgate does: the
		// two engines would not run the same spec.
		return fmt.Errorf("-cron %q: native Temporal Schedules read only a 5-field cron the way tickgate does; use one, or -native=false", *flagCron)
	}
	return nil
}

// createNativeSchedules creates n native Temporal Schedules on -cron, named
// t<tenant>-<prefix>-<i>, each starting action(its id) on every tick (overlap ALLOW_ALL), 8
// at a time. remove deletes those created; call it whatever the error.
func createNativeSchedules(ctx context.Context, e *env, prefix string, n int, action func(id string) *client.ScheduleWorkflowAction) (ids []string, took time.Duration, remove func(), err error) {
	sc := e.tc.ScheduleClient()
	ids = make([]string, n)
	remove = func() {
		// Cleaned up whatever happened; a schedule never created is not found, which is fine.
		for _, id := range ids {
			if id != "" {
				_ = sc.GetHandle(context.Background(), id).Delete(context.Background())
			}
		}
	}
	start := time.Now()
	err = parallel(ctx, n, 8, func(i int) error {
		ids[i] = fmt.Sprintf("t%02d-%s-%05d", i%50, prefix, i)
		first := true
		err := retryTransient(ctx, func() error {
			_, err := sc.Create(ctx, client.ScheduleOptions{
				ID:     ids[i],
				Spec:   client.ScheduleSpec{CronExpressions: []string{*flagCron}},
				Action: action(ids[i]),
				// Every tick starts its run, as every tick of a tickgate event action fires: the
				// default (skip while the last run is open) would drop ticks whenever the
				// workflow had not completed yet, which is not lateness.
				Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
			})
			// A retry after a create that did land finds the schedule there.
			if !first && errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
				return nil
			}
			first = false
			return err
		})
		if err != nil {
			return fmt.Errorf("create native schedule %s: %w", ids[i], err)
		}
		return nil
	})
	return ids, time.Since(start), remove, err
}

// countNative counts the workflows of workflowType the native schedules started for tick
// (closed: those that have closed).
func countNative(ctx context.Context, tc client.Client, workflowType string, tick time.Time, closed bool) (int, error) {
	// The dev server's visibility matches no datetime by equality: a one-second range holds
	// exactly the tick (native specs here are whole minutes apart).
	q := fmt.Sprintf("WorkflowType = '%s' AND TemporalScheduledStartTime >= '%s' AND TemporalScheduledStartTime < '%s'",
		workflowType, tick.UTC().Format(time.RFC3339Nano), tick.Add(time.Second).UTC().Format(time.RFC3339Nano))
	if closed {
		q += " AND ExecutionStatus != 'Running'"
	}
	resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: q})
	if err != nil {
		return 0, fmt.Errorf("count native runs: %w", err)
	}
	return int(resp.Count), nil
}

// nativeLateness lists the runs the native schedules started for ticks and pairs each with
// its schedule and scheduled time, for two measures: the run's start time, and its user
// code's start (first WorkflowTaskStarted, from its history). (schedule, tick) pairs with
// neither are +Inf.
func nativeLateness(ctx context.Context, tc client.Client, ids []string, ticks []time.Time) (started, taskStarted lateness, err error) {
	if len(ticks) == 0 {
		return nil, nil, nil
	}
	measured := map[int64]bool{}
	for _, t := range ticks {
		measured[t.UnixNano()] = true
	}
	got := map[fireKey[string]]float64{}
	var runs []targetRun[string]
	dc := converter.GetDefaultDataConverter()
	// Only a schedule's run has TemporalScheduledStartTime: tickgate's runs of the same
	// workflow type are not listed.
	query := fmt.Sprintf("WorkflowType = '%s' AND TemporalScheduledStartTime >= '%s'", targetWorkflow, slices.MinFunc(ticks, time.Time.Compare).UTC().Format(time.RFC3339Nano))
	var token []byte
	for {
		var resp *workflowservice.ListWorkflowExecutionsResponse
		err := retryTransient(ctx, func() (err error) {
			resp, err = tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1000, NextPageToken: token})
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("list native starts: %w", err)
		}
		for _, ex := range resp.Executions {
			fields := ex.GetSearchAttributes().GetIndexedFields()
			var scheduled time.Time
			var by string
			if p := fields["TemporalScheduledStartTime"]; p == nil || dc.FromPayload(p, &scheduled) != nil {
				return nil, nil, fmt.Errorf("workflow %s: no readable TemporalScheduledStartTime", ex.Execution.WorkflowId)
			}
			if p := fields["TemporalScheduledById"]; p == nil || dc.FromPayload(p, &by) != nil {
				return nil, nil, fmt.Errorf("workflow %s: no readable TemporalScheduledById", ex.Execution.WorkflowId)
			}
			k := fireKey[string]{by, scheduled.UnixNano()}
			if !measured[k.tick] {
				continue
			}
			ms := float64(ex.GetStartTime().AsTime().Sub(scheduled).Microseconds()) / 1000
			if old, ok := got[k]; !ok || ms < old {
				got[k] = ms
			}
			runs = append(runs, targetRun[string]{fire: k, scheduledAt: scheduled, workflowID: ex.Execution.WorkflowId, runID: ex.Execution.RunId})
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	began, err := taskStartedLateness(ctx, tc, runs)
	if err != nil {
		return nil, nil, err
	}
	return collect(ids, ticks, got), collect(ids, ticks, began), nil
}
