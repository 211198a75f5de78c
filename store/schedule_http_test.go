package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

func newHTTPSchedule(t *testing.T, st *store.Store, name, secret string) store.Schedule {
	t.Helper()
	s, err := st.CreateSchedule(context.Background(), store.NewSchedule{
		Name: name, Spec: json.RawMessage(`{"cron":"* * * * *"}`),
		Action: json.RawMessage(`{"kind":"http","url":"https://example.com/hook","method":"POST","timeout":"10s"}`), Overlap: "skip",
		Retry: []byte(`{"max_attempts":3}`), SigningSecret: secret,
	})
	require.NoError(t, err)
	return s
}

// insertRun inserts a run of the schedule at tick with a status and a workflow id.
func insertRun(t *testing.T, st *store.Store, s store.Schedule, tick time.Time, status domain.RunStatus, workflowID, errText string) store.ScheduleRun {
	t.Helper()
	var finished *time.Time
	if status.Final() {
		finished = &tick
	}
	var id int64
	require.NoError(t, st.Pool.QueryRow(context.Background(), `INSERT INTO schedule_runs
		(schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, workflow_id, error, finished_at)
		VALUES ($1, $2, $2, 'scheduled', $3, $4, $5, $6, $7) RETURNING id`,
		s.ID, tick, status, domain.TickKey(s.ID, tick), workflowID, errText, finished).Scan(&id))
	run, err := st.GetRunByID(context.Background(), id)
	require.NoError(t, err)
	return run
}

// The signing secret goes in with the schedule, in the same statement, and lives apart
// from it: no read of the schedule carries it; a rotation replaces it; it goes with the
// schedule.
func TestSigningSecretIsStoredApartFromTheSchedule(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newHTTPSchedule(t, st, "hooked", "tgs_first")
	got, err := st.ScheduleSecret(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, "tgs_first", got)
	row, err := st.GetSchedule(ctx, "hooked")
	require.NoError(t, err)
	raw, _ := json.Marshal(row)
	require.NotContains(t, string(raw), "tgs_first", "the schedule's row does not carry its secret")

	require.NoError(t, st.SetScheduleSecret(ctx, "hooked", "tgs_second"))
	got, err = st.ScheduleSecret(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, "tgs_second", got)
	require.ErrorIs(t, st.SetScheduleSecret(ctx, "nobody", "tgs_x"), store.ErrNotFound)

	plain := newSchedule(t, st, "plain")
	_, err = st.ScheduleSecret(ctx, plain.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "an event schedule has no secret")

	_, _, err = st.DeleteSchedule(ctx, "hooked")
	require.NoError(t, err)
	_, err = st.ScheduleSecret(ctx, s.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	var n int
	require.NoError(t, st.Pool.QueryRow(ctx, "SELECT count(*) FROM schedule_secrets WHERE schedule_name = 'hooked'").Scan(&n))
	require.Zero(t, n, "the secret went with its schedule")
}

// A bulk create inserts the secrets of the schedules it creates; a name taken keeps its
// own secret.
func TestBulkCreateInsertsTheSecretsOfWhatItCreates(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	taken := newHTTPSchedule(t, st, "bulk-taken", "tgs_kept")
	row := func(name, secret string) store.NewSchedule {
		return store.NewSchedule{Name: name, Spec: json.RawMessage(`{"cron":"* * * * *"}`),
			Action: json.RawMessage(`{"kind":"http","url":"https://example.com/hook","method":"POST","timeout":"10s"}`), Overlap: "skip",
			Retry: []byte(`{"max_attempts":3}`), SigningSecret: secret}
	}
	res, err := st.CreateSchedules(ctx, []store.NewSchedule{row("bulk-new", "tgs_new"), row("bulk-taken", "tgs_other")},
		func(store.Schedule) error { return nil })
	require.NoError(t, err)
	require.Len(t, res.Created, 1)
	got, err := st.ScheduleSecret(ctx, res.Created[0].ID)
	require.NoError(t, err)
	require.Equal(t, "tgs_new", got)
	require.JSONEq(t, `{"max_attempts":3}`, string(res.Created[0].Retry))
	got, err = st.ScheduleSecret(ctx, taken.ID)
	require.NoError(t, err)
	require.Equal(t, "tgs_kept", got)
}

// Attempts are recorded once per (run, series, attempt), and read back in order.
func TestRunAttemptsAreRecordedOnce(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newHTTPSchedule(t, st, "attempts", "tgs_a")
	run := insertRun(t, st, s, time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC), domain.RunRunning, "wf-1", "")
	code := int32(503)
	a := store.RunAttempt{RunID: run.ID, WorkflowID: "wf-1", Attempt: 1, StartedAt: time.Now(), LatencyMs: 12, StatusCode: &code,
		Outcome: domain.AttemptRetryable, Error: "HTTP 503 Service Unavailable", ResponseStart: "busy"}
	require.NoError(t, st.RecordAttempt(ctx, a))
	again := a
	again.Error = "a retried record"
	require.NoError(t, st.RecordAttempt(ctx, again), "recorded again: no error, no change")
	ok := int32(200)
	require.NoError(t, st.RecordAttempt(ctx, store.RunAttempt{RunID: run.ID, WorkflowID: "wf-1", Attempt: 2, StartedAt: time.Now(),
		StatusCode: &ok, Outcome: domain.AttemptSucceeded}))
	got, err := st.RunAttempts(ctx, []int64{run.ID})
	require.NoError(t, err)
	require.Len(t, got[run.ID], 2)
	require.Equal(t, "HTTP 503 Service Unavailable", got[run.ID][0].Error)
	require.Equal(t, domain.AttemptSucceeded, got[run.ID][1].Outcome)

	err = st.RecordAttempt(ctx, store.RunAttempt{RunID: run.ID + 1000, WorkflowID: "wf-x", Attempt: 1, StartedAt: time.Now(), Outcome: domain.AttemptFinal})
	require.ErrorIs(t, err, store.ErrNotFound, "a run that is gone")
}

// A FAILED run of an http (or workflow) action is redriven: RUNNING again under a new
// workflow id, the failure it answers recorded; it leaves the dead letter, and returns to
// it if it fails again. Any other run is refused, saying why, and nothing changes.
func TestRedriveRunAndTheDeadLetter(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newHTTPSchedule(t, st, "redriven", "tgs_r")
	tick := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	failed := insertRun(t, st, s, tick, domain.RunFailed, "schedule/redriven/run/2026-05-01T09:00:00Z", "HTTP 500 (gave up)")
	ok := insertRun(t, st, s, tick.Add(time.Minute), domain.RunSucceeded, "schedule/redriven/run/2026-05-01T09:01:00Z", "")
	all := store.DeadLetterFilter{Until: time.Now().Add(time.Hour)}
	dead, err := st.ListDeadLetter(ctx, all, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, failed.ID, dead[0].ScheduleRun.ID)
	require.Equal(t, "redriven", dead[0].ScheduleName)

	res, err := st.RedriveRun(ctx, failed.ID)
	require.NoError(t, err)
	require.Equal(t, domain.RunRunning, res.Run.Status)
	require.Equal(t, "schedule/redriven/run/2026-05-01T09:00:00Z~redrive-1", res.Run.WorkflowID)
	require.Equal(t, failed.IdempotencyKey, res.Run.IdempotencyKey, "the same tick key")
	require.Nil(t, res.Run.FinishedAt)
	require.Empty(t, res.Run.Error)
	require.Equal(t, "redriven", res.ScheduleName)
	dead, err = st.ListDeadLetter(ctx, all, 0, 10)
	require.NoError(t, err)
	require.Empty(t, dead, "a redriven run has left the dead letter")

	var notRedrivable *store.NotRedrivable
	_, err = st.RedriveRun(ctx, failed.ID)
	require.True(t, errors.As(err, &notRedrivable), "a RUNNING run: %v", err)
	require.Equal(t, domain.RunRunning, notRedrivable.Status)
	_, err = st.RedriveRun(ctx, ok.ID)
	require.True(t, errors.As(err, &notRedrivable))
	require.Equal(t, domain.RunSucceeded, notRedrivable.Status)
	_, err = st.RedriveRun(ctx, ok.ID+1000)
	require.ErrorIs(t, err, store.ErrNotFound)

	// It fails again: back in the dead letter, and a second redrive gets id ~redrive-2.
	require.NoError(t, st.FinishRun(ctx, failed.ID, domain.RunFailed, "HTTP 500 again"))
	dead, err = st.ListDeadLetter(ctx, all, 0, 10)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	res, err = st.RedriveRun(ctx, failed.ID)
	require.NoError(t, err)
	require.Equal(t, "schedule/redriven/run/2026-05-01T09:00:00Z~redrive-2", res.Run.WorkflowID)
	redrives, err := st.RunRedrives(ctx, []int64{failed.ID})
	require.NoError(t, err)
	require.Len(t, redrives[failed.ID], 2)
	require.Equal(t, "HTTP 500 (gave up)", redrives[failed.ID][0].PreviousError)
	require.Equal(t, "schedule/redriven/run/2026-05-01T09:00:00Z~redrive-1", redrives[failed.ID][1].PreviousWorkflowID)
	require.Equal(t, "HTTP 500 again", redrives[failed.ID][1].PreviousError)

	// An event action's run is not redriven; nor is a run whose schedule became an event one.
	ev := newSchedule(t, st, "event-run")
	evRun := insertRun(t, st, ev, tick, domain.RunSucceeded, "", "")
	_, err = st.RedriveRun(ctx, evRun.ID)
	require.True(t, errors.As(err, &notRedrivable))
	require.True(t, notRedrivable.EventRun)
	wf, err := st.CreateSchedule(ctx, store.NewSchedule{Name: "became-event", Spec: json.RawMessage(`{"cron":"* * * * *"}`),
		Action: json.RawMessage(`{"kind":"event"}`), Overlap: "skip"})
	require.NoError(t, err)
	wfRun := insertRun(t, st, wf, tick, domain.RunFailed, "schedule/became-event/run/x", "boom")
	_, err = st.RedriveRun(ctx, wfRun.ID)
	require.True(t, errors.As(err, &notRedrivable))
	require.Equal(t, domain.ActionEvent, notRedrivable.ActionNow)
	after, err := st.GetRunByID(ctx, wfRun.ID)
	require.NoError(t, err)
	require.Equal(t, domain.RunFailed, after.Status, "a refused redrive changes nothing")
}

// A redriven run is the run watchers' whoever holds its schedule, and no overlap decision
// counts it: the planner's in-flight question leaves it out.
func TestARedriveIsWatchedAndOutsideTheOverlapPolicy(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s := newHTTPSchedule(t, st, "watched-redrive", "tgs_w")
	_, err := st.Pool.Exec(ctx, "UPDATE schedules SET owner = 'some-run' WHERE id = $1", s.ID)
	require.NoError(t, err)
	tick := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	plainRunning := insertRun(t, st, s, tick.Add(time.Minute), domain.RunRunning, "wf-running", "")
	failed := insertRun(t, st, s, tick, domain.RunFailed, "wf-failed", "boom")
	_, err = st.RedriveRun(ctx, failed.ID)
	require.NoError(t, err)

	leased, err := st.ClaimRunsToWatch(ctx, time.Now().Add(time.Minute), 0, 100)
	require.NoError(t, err)
	var ids []int64
	for _, r := range leased {
		if r.ScheduleID == s.ID {
			ids = append(ids, r.ID)
		}
	}
	require.Equal(t, []int64{failed.ID}, ids, "the redrive is leased although a workflow holds the schedule; its other run is the workflow's")
	require.NotEqual(t, plainRunning.ID, failed.ID)

	// At rest, with only the redrive running, the planner is told nothing is in flight.
	_, err = st.Pool.Exec(ctx, "UPDATE schedule_runs SET status = 'SUCCEEDED', finished_at = now() WHERE id = $1", plainRunning.ID)
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, "UPDATE schedules SET owner = NULL, plan_at = now() - interval '1 second', plan_action = 'arm' WHERE id = $1", s.ID)
	require.NoError(t, err)
	looked := false
	_, _, err = st.PlanRound(ctx, time.Now(), 10, func(rows []store.Schedule, inFlight map[int64]store.InFlight, _ []store.Calendar) []store.RoundDecision {
		for _, r := range rows {
			if r.ID == s.ID {
				looked = true
				require.Zero(t, inFlight[s.ID], "a redrive is not a run in flight for the overlap policy")
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, looked)
	running, err := st.RunningRuns(ctx, s.ID)
	require.NoError(t, err)
	require.Len(t, running, 1, "the schedule's view still shows the redrive running")
}

// A delivery reads everything it sends by the run's id: the run's key and series, the
// action, the retry policy, the header values stored apart and the secrets that sign — the
// previous one only while its grace lasts. A rotation is recorded in the history; one of a
// schedule with no secret is ErrNotFound and records nothing.
func TestHTTPDeliveryOfReadsTheRunsDeliveryAndSecrets(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	s, err := st.CreateSchedule(ctx, store.NewSchedule{
		Name: "delivered", Spec: json.RawMessage(`{"cron":"* * * * *"}`), Overlap: "skip", Retry: []byte(`{"max_attempts":4}`),
		Action:        json.RawMessage(`{"kind":"http","url":"https://example.com/hook","method":"POST","header_names":["Authorization"],"timeout":"10s"}`),
		SigningSecret: "whsec_Zmlyc3Q=", HeaderValues: []byte(`{"Authorization":"Bearer t"}`),
	})
	require.NoError(t, err)
	tick := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	run := insertRun(t, st, s, tick, domain.RunRunning, "wf-1", "")

	got, err := st.HTTPDeliveryOf(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, s.ID, got.ScheduleID)
	require.Equal(t, "delivered", got.Schedule)
	require.Equal(t, "wf-1", got.WorkflowID)
	require.Equal(t, domain.TickKey(s.ID, tick), got.Key)
	require.Equal(t, []string{"Authorization"}, got.Action.HeaderNames)
	require.Equal(t, map[string]string{"Authorization": "Bearer t"}, got.HeaderValues)
	require.Equal(t, 4, got.Retry.MaxAttempts)
	require.Equal(t, []string{"whsec_Zmlyc3Q="}, got.Secrets)

	until := time.Now().Add(time.Hour)
	_, err = st.RotateScheduleSecret(ctx, store.SecretRotation{Schedule: "delivered", Secret: "whsec_c2Vjb25k", GraceUntil: &until, Actor: "ops", Door: domain.DoorAPI})
	require.NoError(t, err)
	got, err = st.HTTPDeliveryOf(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_c2Vjb25k", "whsec_Zmlyc3Q="}, got.Secrets, "both sign while the grace lasts")

	_, err = st.Pool.Exec(ctx, `UPDATE schedule_secrets SET previous_valid_until = now() - interval '1 second' WHERE schedule_name = 'delivered'`)
	require.NoError(t, err)
	got, err = st.HTTPDeliveryOf(ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"whsec_c2Vjb25k"}, got.Secrets, "the grace is over")

	hist, err := st.ScheduleHistory(ctx, s.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	require.Equal(t, string(domain.HistoryRotateSecret), hist[0].Kind)
	require.NotContains(t, string(hist[0].Changes)+hist[0].Note, "whsec_")

	plain, err := st.CreateSchedule(ctx, store.NewSchedule{Name: "plain", Spec: json.RawMessage(`{"cron":"* * * * *"}`),
		Action: json.RawMessage(`{"kind":"event","topic":"t","type":"x"}`), Overlap: "skip"})
	require.NoError(t, err)
	_, err = st.RotateScheduleSecret(ctx, store.SecretRotation{Schedule: "plain", Secret: "whsec_eA==", Actor: "ops", Door: domain.DoorAPI})
	require.ErrorIs(t, err, store.ErrNotFound)
	hist, err = st.ScheduleHistory(ctx, plain.ID, 0, 10)
	require.NoError(t, err)
	require.Empty(t, hist, "a refused rotation records nothing")
	_, err = st.HTTPDeliveryOf(ctx, 999999999)
	require.ErrorIs(t, err, store.ErrNotFound)
}
