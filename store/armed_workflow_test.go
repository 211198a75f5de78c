package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// armedStart is an armed workflow fire of tick: its run RUNNING, visible at the tick.
func armedStart(s store.Schedule, tick time.Time) store.Fire {
	f := armedFire(s, tick)
	f.Status, f.WorkflowID = domain.RunRunning, "schedule/"+s.Name+"/run/"+tick.Format(time.RFC3339)
	return f
}

// targets is a store.TargetChecker that answers what each target did, and records what it
// was asked to terminate.
type targets struct {
	scheduledAt map[string]time.Time
	began       map[string]bool
	terminated  []string
}

func (t *targets) Started(_ context.Context, id string) (*time.Time, bool, error) {
	at, ok := t.scheduledAt[id]
	if !ok {
		return nil, false, nil
	}
	return &at, t.began[id], nil
}

func (t *targets) Terminate(_ context.Context, id, _ string) error {
	t.terminated = append(t.terminated, id)
	return nil
}

// An armed workflow fire released late obeys the same rule as every tick, judged from what
// its target did: started on time by Temporal, it fired on time; after an outage beyond the
// catch-up window, a target that has not begun is stopped and the fire is MISSED; one that
// began is recorded as the late catch-up run it is.
func TestALateWorkflowFireIsJudgedByWhatItsTargetDid(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tick := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	release := tick.Add(89 * time.Second)
	arm := func(name string) (store.Schedule, string) {
		s := newSchedule(t, st, name)
		_, err := st.Pool.Exec(ctx, "UPDATE schedules SET catchup_window_ms = 30000 WHERE id = $1", s.ID)
		require.NoError(t, err)
		run, created, err := st.RecordFire(ctx, armedStart(s, tick))
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, domain.RunRunning, run.Status)
		return s, run.WorkflowID
	}
	onTime, onTimeID := arm("started-on-time")
	stopped, stoppedID := arm("not-begun")
	ran, ranID := arm("began-late")
	recordAlive(t, st, "before", tick.Add(-time.Hour), tick.Add(-2*time.Second))
	recordAlive(t, st, "after", release, release)
	tg := &targets{
		scheduledAt: map[string]time.Time{onTimeID: tick.Add(20 * time.Millisecond), ranID: release.Add(-time.Second)},
		began:       map[string]bool{onTimeID: true, ranID: true},
	}

	fires, err := st.ReleaseDueAsOf(ctx, &release, tg)
	require.NoError(t, err)
	require.Len(t, fires, 3)
	require.Equal(t, []string{stoppedID}, tg.terminated, "only the target that had not begun is stopped")

	run := onlyRun(t, st, onTime.ID)
	require.Equal(t, domain.RunRunning, run.Status, "its watcher records the outcome")
	require.Equal(t, domain.TriggerScheduled, run.Trigger)
	require.Equal(t, tick.Add(20*time.Millisecond), run.FiredAt.UTC(), "fired when Temporal started it")
	require.Nil(t, run.FinishedAt)

	run = onlyRun(t, st, stopped.ID)
	require.Equal(t, domain.RunMissed, run.Status)
	require.Equal(t, "missed: no tickgate worker was running from 2026-03-01T12:00:13Z to 2026-03-01T12:01:29Z, "+
		"and the tick is older than the catch-up window (30s)", run.Reason)

	run = onlyRun(t, st, ran.ID)
	require.Equal(t, domain.RunRunning, run.Status)
	require.Equal(t, domain.TriggerCatchup, run.Trigger)
	require.Contains(t, run.Reason, "started late, after an outage")
	require.Equal(t, release.Add(-time.Second), run.FiredAt.UTC())
}

// A released armed workflow fire without a checker waits: whether its target started is
// not the database's to say.
func TestALateWorkflowFireWaitsForAReleaserThatCanAskTemporal(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tick := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newSchedule(t, st, "late-start")
	_, _, err := st.RecordFire(ctx, armedStart(s, tick))
	require.NoError(t, err)
	late := tick.Add(time.Minute)
	fires, err := st.ReleaseDueAsOf(ctx, &late, nil)
	require.NoError(t, err)
	require.Empty(t, fires)
	onTime := tick.Add(time.Second)
	_, err = st.Pool.Exec(ctx, "UPDATE schedule_runs SET visible_at = $1 WHERE schedule_id = $2", onTime, s.ID)
	require.NoError(t, err)
	fires, err = st.ReleaseDueAsOf(ctx, &onTime, nil)
	require.NoError(t, err)
	require.Len(t, fires, 1, "on time, it needs no checker")
}

// A retracted armed workflow fire stays as the record of its retraction — SKIPPED with the
// reason, retracted_at set, not a run — and frees its tick: fired again, the tick gets a
// workflow id of its own, since the stopped start cannot be started again.
func TestARetractedWorkflowFireStaysAsItsRecord(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tick := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	s := newSchedule(t, st, "retract-start")
	armed, _, err := st.RecordFire(ctx, armedStart(s, tick))
	require.NoError(t, err)

	_, _, r, err := st.SetPaused(ctx, store.PauseChange{ID: s.ID, Paused: true, Note: "hold", Actor: "test", Door: domain.DoorAPI})
	require.NoError(t, err)
	require.Equal(t, store.Retraction{Ticks: []time.Time{tick}, WorkflowIDs: []string{armed.WorkflowID}}, r)
	var status, reason, key string
	var retractedAt, firedAt *time.Time
	require.NoError(t, st.Pool.QueryRow(ctx, "SELECT status, reason, idempotency_key, retracted_at, fired_at FROM schedule_runs WHERE id = $1",
		armed.ID).Scan(&status, &reason, &key, &retractedAt, &firedAt))
	require.Equal(t, "SKIPPED", status)
	require.Equal(t, "retracted before its tick: the schedule was paused; its delayed start was stopped and never ran", reason)
	require.NotNil(t, retractedAt)
	require.Nil(t, firedAt)
	require.NotEqual(t, domain.TickKey(s.ID, tick), key, "the tick's key is free again")
	runs, err := st.ListRuns(ctx, s.ID, 0, 10)
	require.NoError(t, err)
	require.Empty(t, runs, "a retraction is not a run")
	var events int
	require.NoError(t, st.Pool.QueryRow(ctx, "SELECT count(*) FROM event_store WHERE schedule_run_id = $1", armed.ID).Scan(&events))
	require.Zero(t, events, "its schedule.fired event never happened")

	again, created, err := st.RecordFire(ctx, armedStart(s, tick))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, armed.WorkflowID+"~2", again.WorkflowID)
	dups, err := st.CountDuplicateTicks(ctx)
	require.NoError(t, err)
	require.Zero(t, dups, "a retraction does not count as a second fire of its tick")
}

// A retraction is idempotent: done again (a workflow task that retracted, then timed out
// before its history was written, retracts again on its retry), it returns the ticks the
// first one took back as long as nothing has decided them, so the workflow still learns they
// are its own to decide. Once the tick is decided (a live run of it), it is not returned.
// Found by the real-server chaos run: the retry's retraction returned nothing, the workflow
// waited on the stopped delayed start, and the tick had no run (S2).
func TestARetractionDoneAgainReturnsTheTicksItTookBack(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	tick := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	s := newSchedule(t, st, "retract-twice")
	armed, _, err := st.RecordFire(ctx, armedStart(s, tick))
	require.NoError(t, err)

	first, err := st.RetractArmed(ctx, s.ID, "a manual trigger started a run first; the tick is decided at its time")
	require.NoError(t, err)
	require.Equal(t, store.Retraction{Ticks: []time.Time{tick}, WorkflowIDs: []string{armed.WorkflowID}}, first)

	again, err := st.RetractArmed(ctx, s.ID, "a manual trigger started a run first; the tick is decided at its time")
	require.NoError(t, err)
	require.Equal(t, []time.Time{tick}, again.Ticks, "the tick taken back is still the caller's to decide")
	require.Empty(t, again.WorkflowIDs, "its delayed start was stopped the first time")

	// Decided: the workflow records the tick's run itself.
	f := armedStart(s, tick)
	f.VisibleAt = nil // recorded by the workflow at its tick, not armed
	_, created, err := st.RecordFire(ctx, f)
	require.NoError(t, err)
	require.True(t, created)
	after, err := st.RetractArmed(ctx, s.ID, "again")
	require.NoError(t, err)
	require.Empty(t, after.Ticks, "a decided tick is not returned")
}
