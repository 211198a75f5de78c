package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// The HTTP action's records (store/queries/schedule_http.sql): signing secrets, delivery
// attempts, the dead letter and redrives.

// RunAttempt is one delivery attempt of an http action's run.
type RunAttempt = dbgen.ScheduleRunAttempt

// RunRedrive is one redrive of a run.
type RunRedrive = dbgen.ScheduleRunRedrive

// ScheduleSecret is the signing secret of the schedule's http action (ErrNotFound: none,
// or no such schedule).
func (s *Store) ScheduleSecret(ctx context.Context, scheduleID int64) (string, error) {
	secret, err := s.Q.ScheduleSecret(ctx, scheduleID)
	if err != nil {
		return "", fmt.Errorf("signing secret of schedule %d: %w", scheduleID, mapErr(err))
	}
	return secret, nil
}

// HTTPDeliveryTarget is what a delivery of a run sends, read by the run's id from the
// database (HTTPDeliveryOf), never from a workflow's input.
type HTTPDeliveryTarget struct {
	RunID, ScheduleID int64
	// WorkflowID is the run's current series' workflow (its first, or its last redrive's).
	WorkflowID  string
	Key         string // the tick's idempotency key
	ScheduledAt time.Time
	Redrive     int
	Schedule    string
	// Action is the schedule's action as stored: its headers by name only.
	Action domain.Action
	Retry  *domain.Retry
	// Secrets sign the request: the current one, then the previous one while its grace
	// period lasts (none: the schedule has no signing secret).
	Secrets []string
	// HeaderValues are the values of the action's own headers.
	HeaderValues map[string]string
	// Status is the run's.
	Status domain.RunStatus
	// Delivered: a 2xx was recorded for the run's key (in any series): nothing is sent
	// again.
	Delivered bool
	// Direct, when the run's current series began with first attempts sent by the worker
	// that released its fire (not by its delivery workflow), says what they were.
	Direct *DirectAttempts
	// Unreadable, set only on a first attempt a sender claimed, is why what it sends could
	// not be read (the rest of the target is then empty but its ids).
	Unreadable error
}

// DirectAttempts are the first attempts of a run's series that the worker which released
// its fire sent, before its delivery workflow: how many, when the first began, and the last
// one's outcome and answer.
type DirectAttempts struct {
	Made          int
	Began         time.Time
	Finished      time.Time // zero: not finished (being sent)
	Outcome       string
	StatusCode    int // 0: no answer
	Error         string
	ResponseStart string
	RetryAfter    time.Duration
}

// HTTPDeliveryOf reads what a delivery of run id sends; ErrNotFound when there is no such
// run (its schedule was deleted).
func (s *Store) HTTPDeliveryOf(ctx context.Context, runID int64) (HTTPDeliveryTarget, error) {
	row, err := s.Q.HTTPDeliveryOf(ctx, runID)
	if err != nil {
		return HTTPDeliveryTarget{}, fmt.Errorf("delivery of run %d: %w", runID, mapErr(err))
	}
	return deliveryTarget(row)
}

// ScheduleHeaderValues are the values of a schedule's http action's own headers (empty when
// none), for an update that keeps some of them.
func (s *Store) ScheduleHeaderValues(ctx context.Context, name string) (map[string]string, error) {
	raw, err := s.Q.ScheduleHeaderValues(ctx, name)
	values := map[string]string{}
	if errors.Is(err, pgx.ErrNoRows) {
		return values, nil
	}
	if err != nil {
		return nil, fmt.Errorf("header values of schedule %q: %w", name, mapErr(err))
	}
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, fmt.Errorf("header values of schedule %q: %w", name, err)
	}
	return values, nil
}

// setHeaderValues replaces the values of a schedule's headers (none: deleted), with q.
func setHeaderValues(ctx context.Context, q *dbgen.Queries, name string, values json.RawMessage) error {
	var m map[string]string
	if len(values) > 0 {
		if err := json.Unmarshal(values, &m); err != nil {
			return fmt.Errorf("header values of schedule %q: %w", name, err)
		}
	}
	if len(m) == 0 {
		return q.DeleteScheduleHeaderValues(ctx, name)
	}
	return q.SetScheduleHeaderValues(ctx, dbgen.SetScheduleHeaderValuesParams{ScheduleName: name, HeaderValues: values})
}

// SecretRotation is a new signing secret for a schedule, and who asked.
type SecretRotation struct {
	Schedule string
	Secret   string
	// GraceUntil, when set, keeps the old secret signing until then; nil ends it at once.
	GraceUntil *time.Time
	Actor      string
	Door       domain.Door
}

// RotateScheduleSecret replaces a schedule's signing secret and records the rotation in its
// history, in one transaction; ErrNotFound when the schedule has no secret (no such
// schedule, or not an http one). It answers when the rotation took effect.
func (s *Store) RotateScheduleSecret(ctx context.Context, r SecretRotation) (time.Time, error) {
	var at time.Time
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		row, err := q.GetScheduleByName(ctx, r.Schedule)
		if err != nil {
			return err
		}
		rotated, err := q.RotateScheduleSecret(ctx, dbgen.RotateScheduleSecretParams{
			PreviousValidUntil: r.GraceUntil, NewSecret: r.Secret, ScheduleName: r.Schedule,
		})
		if err != nil {
			return err
		}
		if rotated != nil {
			at = rotated.UTC()
		}
		note := "the old secret stopped signing at once"
		if r.GraceUntil != nil {
			note = "the old secret signs too until " + r.GraceUntil.UTC().Format(time.RFC3339)
		}
		return insertHistory(ctx, q, row.ID, HistoryEntry{Kind: domain.HistoryRotateSecret, Actor: r.Actor, Door: r.Door, Note: note})
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("rotate the signing secret of schedule %q: %w", r.Schedule, mapErr(err))
	}
	return at, nil
}

// SetScheduleSecret replaces (or sets) a schedule's signing secret; ErrNotFound when there
// is no such schedule.
func (s *Store) SetScheduleSecret(ctx context.Context, name, secret string) error {
	err := s.Q.SetScheduleSecret(ctx, dbgen.SetScheduleSecretParams{ScheduleName: name, Secret: secret})
	if isForeignKeyViolation(err) {
		return fmt.Errorf("signing secret of schedule %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("signing secret of schedule %q: %w", name, mapErr(err))
	}
	return nil
}

// isForeignKeyViolation reports a row that names a row that is gone (a deleted schedule's).
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// GetRunByID reads a run by its id alone.
func (s *Store) GetRunByID(ctx context.Context, id int64) (ScheduleRun, error) {
	row, err := s.Q.GetScheduleRunByID(ctx, id)
	if err != nil {
		return ScheduleRun{}, fmt.Errorf("get run %d: %w", id, mapErr(err))
	}
	return row, nil
}

// RecordAttempt records a delivery attempt's answer, completing its StartAttempt record; the
// same (run, workflow id, attempt) answered again changes nothing. A run that no longer
// exists (its schedule deleted) is ErrNotFound.
func (s *Store) RecordAttempt(ctx context.Context, a RunAttempt) error {
	finished := a.StartedAt.Add(time.Duration(a.LatencyMs) * time.Millisecond)
	if a.FinishedAt != nil {
		finished = *a.FinishedAt
	}
	_, err := s.Q.RecordRunAttempt(ctx, dbgen.RecordRunAttemptParams{
		RunID: a.RunID, WorkflowID: a.WorkflowID, Attempt: a.Attempt, Redrive: a.Redrive, StartedAt: a.StartedAt,
		LatencyMs: a.LatencyMs, StatusCode: a.StatusCode, Outcome: a.Outcome, Error: a.Error, ResponseStart: a.ResponseStart,
		RetryAfterMs: a.RetryAfterMs, FinishedAt: &finished,
	})
	if isForeignKeyViolation(err) {
		return fmt.Errorf("attempt %d of run %d: %w", a.Attempt, a.RunID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("attempt %d of run %d: %w", a.Attempt, a.RunID, mapErr(err))
	}
	return nil
}

// StartAttempt records a delivery attempt as being sent, before it is (an attempt recorded
// already changes nothing); earlier attempts of the series still recorded as being sent are
// recorded lost. A run that no longer exists is ErrNotFound.
func (s *Store) StartAttempt(ctx context.Context, a RunAttempt) error {
	err := s.Q.StartRunAttempt(ctx, dbgen.StartRunAttemptParams{
		RunID: a.RunID, WorkflowID: a.WorkflowID, Attempt: a.Attempt, Redrive: a.Redrive, StartedAt: a.StartedAt,
	})
	if isForeignKeyViolation(err) {
		return fmt.Errorf("attempt %d of run %d: %w", a.Attempt, a.RunID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("attempt %d of run %d: %w", a.Attempt, a.RunID, mapErr(err))
	}
	return nil
}

// RunAttempts are the attempts of the runs given, by run, in the order they were made.
func (s *Store) RunAttempts(ctx context.Context, runIDs []int64) (map[int64][]RunAttempt, error) {
	out := map[int64][]RunAttempt{}
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := s.Q.ListRunAttempts(ctx, runIDs)
	if err != nil {
		return nil, fmt.Errorf("attempts of %d runs: %w", len(runIDs), mapErr(err))
	}
	for _, r := range rows {
		out[r.RunID] = append(out[r.RunID], r)
	}
	return out, nil
}

// RunRedrives are the redrives of the runs given, by run, oldest first.
func (s *Store) RunRedrives(ctx context.Context, runIDs []int64) (map[int64][]RunRedrive, error) {
	out := map[int64][]RunRedrive{}
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := s.Q.ListRunRedrives(ctx, runIDs)
	if err != nil {
		return nil, fmt.Errorf("redrives of %d runs: %w", len(runIDs), mapErr(err))
	}
	for _, r := range rows {
		out[r.RunID] = append(out[r.RunID], r)
	}
	return out, nil
}

// ErrNotRedrivable is wrapped when a run may not be redriven: it is not FAILED (Status), or
// it is not a run of an http or workflow action (Kind).
var ErrNotRedrivable = errors.New("the run cannot be redriven")

// NotRedrivable says why a run cannot be redriven.
type NotRedrivable struct {
	Status domain.RunStatus // the run's status, when that is why
	// EventRun: the run started no workflow (an event action's).
	EventRun bool
	// ActionNow is the schedule's action kind when it no longer starts a workflow (the
	// schedule was changed to an event action since the run).
	ActionNow domain.ActionKind
}

func (e *NotRedrivable) Error() string {
	switch {
	case e.EventRun:
		return "the run is an event action's: only a run of an http or workflow action is redriven"
	case e.ActionNow != "":
		return fmt.Sprintf("the schedule's action is now %s: a redrive delivers with the schedule's action as it is now, an http or workflow one", e.ActionNow)
	}
	return fmt.Sprintf("the run is %s: only a FAILED run is redriven", e.Status)
}

func (e *NotRedrivable) Unwrap() error { return ErrNotRedrivable }

// Redriven is a run redriven, with its schedule's name and action as they are now.
type Redriven struct {
	Run            ScheduleRun
	ScheduleName   string
	ScheduleAction []byte
}

// redriveSuffix ends the workflow id of a redriven run's series.
var redriveSuffix = regexp.MustCompile(`~redrive-\d+$`)

// RedriveWorkflowID is the workflow id of redrive n of a run whose first series ran as
// workflowID: <first id>~redrive-<n>.
func RedriveWorkflowID(workflowID string, n int) string {
	return fmt.Sprintf("%s~redrive-%d", redriveSuffix.ReplaceAllString(workflowID, ""), n)
}

// RedriveRun makes a FAILED run of an http or workflow action RUNNING again under a new
// workflow id (RedriveWorkflowID), recording the redrive and the failure it answers, in one
// transaction. Nothing is started here: a run watcher leases the run, finds no workflow of
// that id and starts it (activities.RunWatcher), so a redrive committed is a redrive done,
// whatever crashes after. A run that is not FAILED, or is an event action's, is a
// *NotRedrivable; an unknown run ErrNotFound.
func (s *Store) RedriveRun(ctx context.Context, runID int64) (Redriven, error) {
	var out Redriven
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		var err error
		out, err = redriveRun(ctx, q, runID, nil)
		return err
	})
	if err != nil {
		return Redriven{}, err
	}
	return out, nil
}

// redriveRun is RedriveRun in q's transaction, for the bulk redrive jobID when given.
func redriveRun(ctx context.Context, q *dbgen.Queries, runID int64, jobID *int64) (Redriven, error) {
	var out Redriven
	locked, err := q.LockScheduleRun(ctx, runID)
	if err != nil {
		return out, fmt.Errorf("run %d: %w", runID, mapErr(err))
	}
	run := locked.ScheduleRun
	var now domain.Action
	if err := json.Unmarshal(locked.ScheduleAction, &now); err != nil {
		return out, fmt.Errorf("action of the schedule of run %d: %w", runID, err)
	}
	switch {
	case run.WorkflowID == "" && run.Status.Fired():
		return out, &NotRedrivable{EventRun: true}
	case run.Status != domain.RunFailed:
		return out, &NotRedrivable{Status: run.Status}
	case !now.StartsWorkflow():
		return out, &NotRedrivable{ActionNow: now.Kind}
	}
	n := int(run.Redrives) + 1
	id := RedriveWorkflowID(run.WorkflowID, n)
	failedAt := time.Now()
	if run.FinishedAt != nil {
		failedAt = *run.FinishedAt
	}
	if err := q.InsertRunRedrive(ctx, dbgen.InsertRunRedriveParams{
		RunID: run.ID, N: int4(n), WorkflowID: id, PreviousWorkflowID: run.WorkflowID, PreviousError: run.Error, FailedAt: failedAt,
		JobID: jobID,
	}); err != nil {
		return out, fmt.Errorf("record redrive %d of run %d: %w", n, runID, mapErr(err))
	}
	if out.Run, err = q.MarkRunRedriven(ctx, dbgen.MarkRunRedrivenParams{ID: run.ID, WorkflowID: id}); err != nil {
		return out, fmt.Errorf("redrive run %d: %w", runID, mapErr(err))
	}
	out.ScheduleName, out.ScheduleAction = locked.ScheduleName, locked.ScheduleAction
	return out, nil
}

// DeadLetterFilter narrows the dead letter to the ticks of [Since, Until) and triggers.
type DeadLetterFilter struct {
	Since, Until time.Time
	Triggers     []string
}

// ListDeadLetter pages through the dead letter, newest first: the FAILED runs of http and
// workflow actions (a run redriven since is RUNNING, or ended again).
func (s *Store) ListDeadLetter(ctx context.Context, f DeadLetterFilter, beforeID int64, limit int) ([]ScheduleRunOf, error) {
	rows, err := s.Q.ListDeadLetterRuns(ctx, dbgen.ListDeadLetterRunsParams{
		Since: f.Since, Until: f.Until, BeforeID: beforeID, Triggers: orEmpty(f.Triggers), MaxRows: int4(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("list the dead letter: %w", mapErr(err))
	}
	out := make([]ScheduleRunOf, len(rows))
	for i, r := range rows {
		out[i] = ScheduleRunOf(r)
	}
	return out, nil
}

// ArmedStartsNotDue lists the workflow ids of the schedule's armed workflow and http fires
// whose visible time has not come: their targets are started with a start delay, to be
// stopped before a command retracts them.
func (s *Store) ArmedStartsNotDue(ctx context.Context, scheduleID int64) ([]string, error) {
	ids, err := s.Q.ListArmedStartsNotDue(ctx, scheduleID)
	if err != nil {
		return nil, fmt.Errorf("armed starts of schedule %d: %w", scheduleID, mapErr(err))
	}
	return ids, nil
}
