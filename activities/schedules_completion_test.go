package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/scheduleplan"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// createOneTime makes a one-time schedule as POST /schedules does.
func (e *plannerEnv) createOneTime(name string, at time.Time, action domain.Action, after string, createdAt time.Time) store.Schedule {
	e.t.Helper()
	spec := schedulespec.Spec{At: &at}
	compiled, err := schedulespec.Normalize(spec, createdAt)
	require.NoError(e.t, err)
	req := api.CreateScheduleRequest{Name: name, Spec: compiled.Spec, Action: action, AfterCompletion: after}
	row, err := e.st.CreateSchedule(context.Background(), api.NewScheduleRow(req, compiled, api.SchedulePolicies{Overlap: domain.OverlapSkip}, createdAt))
	require.NoError(e.t, err)
	return row
}

func (e *plannerEnv) gone(name string) bool {
	_, err := e.st.GetSchedule(context.Background(), name)
	return err != nil
}

// A one-time schedule is a schedule like any: at rest from its creation, its one fire armed
// by the planner, released at its time — and then, its run ended, the planner marks it
// completed: state completed, nothing planned, listed among the completed schedules.
func TestOneTimeEventScheduleFiresOnceAndCompletes(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	at := t0.Add(3 * time.Minute) // beyond what a round at t0 arms (ArmLead + ArmSpan ahead)
	e.createOneTime("remind-ada", at, event, "", t0)
	row := e.row("remind-ada")
	require.Equal(t, at.Add(-scheduleplan.ArmLead), row.PlanAt.UTC(), "planned like a cron schedule: armed a minute ahead")
	require.Equal(t, at, row.NextRunAt.UTC())
	require.Nil(t, row.CompletedAt)

	require.Zero(t, e.at(t0).Armed)
	require.Equal(t, 1, e.at(at.Add(-scheduleplan.ArmLead)).Armed)
	row = e.row("remind-ada")
	require.Equal(t, scheduleplan.Complete, *row.PlanAction, "no tick left: its completion is looked at from its fire on")
	require.Equal(t, at, row.PlanAt.UTC())
	require.Nil(t, row.CompletedAt, "not before its run ends")

	e.at(at) // released, not settled yet when the round looked: it looks again
	e.at(at.Add(time.Second))
	row = e.row("remind-ada")
	require.NotNil(t, row.CompletedAt, "completed once its run ended")
	require.Nil(t, row.PlanAt)
	require.Nil(t, row.NextRunAt)
	runs := e.runs("remind-ada")
	require.Len(t, runs, 1, "fired once")
	require.Equal(t, at, runs[0].ScheduledAt.UTC())
	require.Equal(t, domain.RunSucceeded, runs[0].Status)

	completed, err := e.st.ListSchedulesFiltered(context.Background(), store.ScheduleFilter{State: "completed"}, "", 10)
	require.NoError(t, err)
	require.Len(t, completed, 1)
	active, err := e.st.ListSchedulesFiltered(context.Background(), store.ScheduleFilter{State: "active"}, "", 10)
	require.NoError(t, err)
	require.Empty(t, active)
	e.at(at.Add(time.Hour))
	require.Len(t, e.runs("remind-ada"), 1, "and never again")
}

// after_completion "delete": once its run ended the schedule is deleted, with its runs; the
// event its fire appended stays in the feed.
func TestOneTimeScheduleDeletedAfterCompletionLeavesItsEventInTheFeed(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	at := t0.Add(10 * time.Second)
	e.createOneTime("remind-bo", at, event, store.AfterCompletionDelete, t0)
	e.at(t0)
	require.False(t, e.gone("remind-bo"), "not before its run")
	e.at(at) // the round looks before the release: its run is not over yet
	require.False(t, e.gone("remind-bo"), "not before its run ended")
	res := e.at(at.Add(time.Second))
	require.Equal(t, 1, res.Deleted)
	require.True(t, e.gone("remind-bo"))
	require.Eventually(t, func() bool { // (once every older transaction of the cluster has ended)
		feed, err := e.st.EventFeed(context.Background(), 0, "billing", 10)
		return err == nil && len(feed) == 1 && feed[0].AggregateID == "remind-bo"
	}, 10*time.Second, 20*time.Millisecond, "the feed keeps the event")
	var runs int
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM schedule_runs`).Scan(&runs))
	require.Zero(t, runs, "its runs went with it")
}

// A one-time workflow action's run ends when its target ends: until the watcher records the
// outcome the schedule is not completed; the record brings its completion forward, and the
// next round completes it (or deletes it).
func TestOneTimeWorkflowScheduleCompletesWhenItsTargetEnds(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	at := t0.Add(10 * time.Second)
	// The targets are started with a start delay an hour long, on a queue no worker polls:
	// the test records their outcome itself, as a run watcher would.
	wf := domain.Action{Kind: domain.ActionWorkflow, WorkflowType: "Remind", TaskQueue: "reminders-" + t.Name()}
	e.acts.Temporal = testenv.TemporalClient(t)
	keep, drop := "one-time-keep-"+t0.Format("150405"), "one-time-drop-"+t0.Format("150405")
	e.createOneTime(keep, at, wf, "", t0)
	e.createOneTime(drop, at, wf, store.AfterCompletionDelete, t0)
	e.at(t0)
	later := at.Add(5 * time.Minute)
	e.at(later)
	for _, name := range []string{keep, drop} {
		require.Nil(t, e.row(name).CompletedAt, "%s: its target still runs", name)
		require.Equal(t, scheduleplan.Complete, *e.row(name).PlanAction)
		require.True(t, e.row(name).PlanAt.After(later), "%s: looked at again later", name)
	}
	for _, name := range []string{keep, drop} {
		runs := e.runs(name)
		require.Len(t, runs, 1)
		require.Equal(t, domain.RunRunning, runs[0].Status)
		require.NoError(t, e.st.FinishRun(context.Background(), runs[0].ID, domain.RunSucceeded, ""))
	}
	require.False(t, e.row(keep).PlanAt.After(time.Now()), "recording the outcome brings the look forward")
	res := e.at(later.Add(time.Second))
	require.Equal(t, 1, res.Completed)
	require.Equal(t, 1, res.Deleted)
	require.NotNil(t, e.row(keep).CompletedAt)
	require.True(t, e.gone(drop))
}

// A one-time schedule paused through its at never fires (a paused schedule records
// nothing): it has no tick left, and it is not completed — it did not run.
func TestOneTimeSchedulePausedThroughItsAtIsNotCompleted(t *testing.T) {
	t.Parallel()
	e := newPlannerEnv(t)
	t0 := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	at := t0.Add(10 * time.Second)
	row := e.createOneTime("paused", at, event, "", t0)
	s, err := activities.PlanOf(row)
	require.NoError(t, err)
	s.Watermark = at.Add(time.Minute) // resumed after its at: ticks count from the resume
	complete, next := s.Completion(at.Add(time.Minute), scheduleplan.CompletionFacts{})
	require.False(t, complete)
	require.Nil(t, next.At, "nothing more to do until a command")
}
