package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

// RolloutNudger nudges rollout workflows and the promoter (starter.Starter implements it; the
// interface keeps activities free of an import of the workflows package).
type RolloutNudger interface {
	// NudgeRollouts tells each rollout's workflow that tasks were promoted into it, starting
	// the workflow if it is not running.
	NudgeRollouts(ctx context.Context, rolloutIDs []int64) error
	// NudgePromoter asks the promoter for a round, starting it if it is not running.
	NudgePromoter(ctx context.Context) error
}

// RolloutActivities are the rollout engine's side effects: the promotion round, claims,
// executors and finishing tasks in Postgres.
type RolloutActivities struct {
	Store  *store.Store
	Nudger RolloutNudger
	// SQLTargets maps a target database name to the DSN the sql executor uses.
	SQLTargets map[string]string
	// SQLProbeTargets maps a target database name to the read-only DSN its waves' SQL
	// health probes use (TICKGATE_SQL_PROBE_TARGETS); a database without one is probed
	// through its SQLTargets DSN, in a read-only transaction.
	SQLProbeTargets map[string]string
	// SQLStatementTimeout and SQLLockTimeout bound an sql task's statement, server-side
	// (sql_targets.go; zero: domain.DefaultSQLStatementTimeout, DefaultSQLLockTimeout).
	SQLStatementTimeout, SQLLockTimeout time.Duration
	// Tracer records each task run's trace (rollouts_trace.go); nil when tracing is off.
	Tracer trace.Tracer
	// Outbound is the rule of the http executor's calls and of a wave's HTTP health check
	// (TICKGATE_HTTP_ALLOW): their clients are its (outbound.Rule.NewClient).
	Outbound outbound.Rule
	// WrapHTTP wraps the http executor's transport (nil: none): with tracing on, a call is a
	// span of its task run's trace and carries its traceparent to the endpoint.
	WrapHTTP func(http.RoundTripper) http.RoundTripper

	executorClient struct {
		once sync.Once
		c    *http.Client
	}
}

// PromoteResult is what one promotion round did.
type PromoteResult struct {
	Promoted   int
	RolloutIDs []int64
	// NextRunAt is the earliest moment ahead a gate may let a PENDING task through (its
	// run_at, a window opening or ending, a rate's minute passing), for the promoter's timer;
	// NextWhy says which.
	NextRunAt *time.Time
	NextWhy   string `json:",omitempty"`
	Duration  time.Duration
}

// PromoteInput is what a promotion round is asked with.
type PromoteInput struct {
	// AsOf is the promoter workflow's time: run_at gates count as passed once it (or the
	// database's clock) reaches them. Zero: the database's clock alone.
	AsOf time.Time
}

// PromoteRollouts runs one set-based promotion round and nudges the rollouts it promoted into.
func (a *RolloutActivities) PromoteRollouts(ctx context.Context, in PromoteInput) (PromoteResult, error) {
	start := time.Now()
	p, err := a.Store.PromoteRoundAsOf(ctx, in.AsOf)
	if err != nil {
		return PromoteResult{}, err
	}
	res := PromoteResult{Promoted: len(p.Promoted), RolloutIDs: p.RolloutIDs, NextRunAt: p.NextRunAt, NextWhy: p.NextWhy, Duration: time.Since(start)}
	observePromotion(res.Duration)
	if len(p.RolloutIDs) > 0 && a.Nudger != nil {
		if err := a.Nudger.NudgeRollouts(ctx, p.RolloutIDs); err != nil {
			// The tasks are AVAILABLE in Postgres; the rollouts' safety poll claims them anyway.
			activity.GetLogger(ctx).Warn("nudge rollouts", "rollouts", p.RolloutIDs, "error", err)
		}
	}
	return res, nil
}

// KickRolloutPromoter nudges the promoter (used by a rollout workflow when signalling the
// promoter directly failed because it was not running). Its name is the activity type in
// rollout histories, so it keeps the old verb.
func (a *RolloutActivities) KickRolloutPromoter(ctx context.Context) error {
	return a.Nudger.NudgePromoter(ctx)
}

// ClaimedTaskRun is a RUNNING task handed to its rollout's workflow.
type ClaimedTaskRun struct {
	ID        int64
	RolloutID int64
	Attempt   int32 // the claim number: finishing requires it to still match
	Database  string
	Type      domain.TaskType
	Version   string
	Executor  domain.Executor
	Payload   json.RawMessage
	// TraceContext is the task run's span context, set by its claim while tracing is on
	// ("" otherwise): its executor and its finish join that trace.
	TraceContext string `json:",omitempty"`
}

// ClaimInput asks for a rollout's AVAILABLE tasks.
type ClaimInput struct {
	RolloutID int64
	Max       int
	// Adopt are RUNNING tasks the workflow found it does not hold (orphans of a lost
	// workflow task or of a terminated run): they are returned to be run again.
	Adopt []int64 `json:",omitempty"`
	// ExternalOnly claims only external tasks: the rollout's runner claims the others.
	ExternalOnly bool `json:",omitempty"`
	// Now is the workflow's time: with Waves set, a wave whose tasks all ended starts its
	// bake at Now (store.AdvanceWave).
	Now time.Time `json:",omitempty"`
	// Waves moves a rollout's waves along at the claim (workflows from the rollout-waves
	// change on).
	Waves bool `json:",omitempty"`
}

// ClaimResult is what a claim got and the state of the rollout.
type ClaimResult struct {
	Tasks         []ClaimedTaskRun
	RolloutStatus domain.RolloutStatus
	// RunningIDs are the rollout's other RUNNING tasks, for the workflow to spot orphans.
	RunningIDs []int64 `json:",omitempty"`
	// Unfinished counts the rollout's tasks not yet terminal after the claim.
	Unfinished int64
	// StatusReason says why the engine paused or canceled the rollout (or who paused it).
	StatusReason string `json:",omitempty"`
	// Wave is where the rollout's open wave stands (nil: a rollout of one wave, or a claim
	// without Waves).
	Wave *WaveState `json:",omitempty"`
}

// ClaimRolloutTasks claims (AVAILABLE → RUNNING) up to Max tasks of the rollout, returns the
// adopted ones still RUNNING, and lists the rest of its RUNNING tasks. The workflow runs it
// as a local activity: if its result is lost with a workflow task, the tasks it claimed
// show up in RunningIDs of the next claim and are adopted.
func (a *RolloutActivities) ClaimRolloutTasks(ctx context.Context, in ClaimInput) (ClaimResult, error) {
	r, err := a.Store.GetRollout(ctx, in.RolloutID)
	if errors.Is(err, store.ErrNotFound) {
		return ClaimResult{RolloutStatus: domain.RolloutCanceled}, nil
	}
	if err != nil {
		return ClaimResult{}, err
	}
	res := ClaimResult{RolloutStatus: r.Status, StatusReason: r.StatusReason}
	got := map[int64]bool{}
	if len(in.Adopt) > 0 {
		rows, err := a.Store.TaskRunsByIDs(ctx, in.Adopt)
		if err != nil {
			return ClaimResult{}, err
		}
		for _, t := range rows {
			if t.RolloutID == in.RolloutID && t.Status == domain.TaskRunRunning {
				res.Tasks = append(res.Tasks, claimedFrom(t))
				got[t.ID] = true
			}
		}
	}
	kind := store.ClaimAll
	if in.ExternalOnly {
		kind = store.ClaimExternal
	}
	claimStart := time.Now()
	rows, err := a.Store.ClaimTaskRunsOf(ctx, in.RolloutID, max(in.Max, 1), kind)
	if err != nil {
		return ClaimResult{}, err
	}
	claimed := a.traceClaimed(ctx, rows, claimStart)
	for _, t := range claimed {
		res.Tasks = append(res.Tasks, t)
		got[t.ID] = true
	}
	if in.Waves && r.WaveCount > 1 {
		if err := a.advanceWave(ctx, in, kind, &res, got); err != nil {
			return ClaimResult{}, err
		}
	}
	running, err := a.Store.RunningTaskRunIDs(ctx, in.RolloutID)
	if err != nil {
		return ClaimResult{}, err
	}
	for _, id := range running {
		if !got[id] {
			res.RunningIDs = append(res.RunningIDs, id)
		}
	}
	if res.Unfinished, err = a.Store.CountUnfinished(ctx, in.RolloutID); err != nil {
		return ClaimResult{}, err
	}
	return res, nil
}

// advanceWave is the claim's wave step (store.AdvanceWave): once the open wave's tasks all
// ended it starts the bake, or the checks, or fails the wave; when it opened the next wave
// at once (no bake, no checks), a promotion round runs and the rollout's newly AVAILABLE
// tasks join the claim.
func (a *RolloutActivities) advanceWave(ctx context.Context, in ClaimInput, kind store.ClaimKind, res *ClaimResult, got map[int64]bool) error {
	ws, err := a.Store.AdvanceWave(ctx, in.RolloutID, in.Now)
	if err != nil {
		return err
	}
	res.Wave = waveStateFrom(ws)
	if ws == nil || !ws.Opened {
		return nil
	}
	if _, err := a.PromoteRollouts(ctx, PromoteInput{AsOf: in.Now}); err != nil {
		return err
	}
	rows, err := a.Store.ClaimTaskRunsOf(ctx, in.RolloutID, max(in.Max, 1), kind)
	if err != nil {
		return err
	}
	for _, t := range rows {
		res.Tasks = append(res.Tasks, claimedFrom(t))
		got[t.ID] = true
	}
	return nil
}

func claimedFrom(t store.TaskRun) ClaimedTaskRun {
	return ClaimedTaskRun{ID: t.ID, RolloutID: t.RolloutID, Attempt: t.Attempt, Database: t.Database, Type: t.Type,
		Version: t.Version, Executor: t.Executor, Payload: t.Payload}
}

// claimedRows is claimedFrom of each row, or the error that came with them.
func claimedRows(rows []store.TaskRun, err error) ([]ClaimedTaskRun, error) {
	if err != nil {
		return nil, err
	}
	out := make([]ClaimedTaskRun, len(rows))
	for i, t := range rows {
		out[i] = claimedFrom(t)
	}
	return out, nil
}

// FinishInput finishes a task with a status decided by the workflow (FAILED after the
// executor's last attempt, CANCELED, or an external result).
type FinishInput struct {
	TaskID  int64
	Attempt int32
	Status  domain.TaskRunStatus
	Error   string
	Output  json.RawMessage
}

// FinishRolloutTask mirrors a task's final status in Postgres; false when the task was no longer
// that RUNNING attempt.
func (a *RolloutActivities) FinishRolloutTask(ctx context.Context, in FinishInput) (bool, error) {
	switch in.Status {
	case domain.TaskRunDone, domain.TaskRunFailed, domain.TaskRunCanceled:
	default:
		return false, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cannot finish a task as %q", in.Status), "BadStatus", nil)
	}
	out := in.Output
	if string(bytes.TrimSpace(out)) == "null" {
		out = nil
	}
	_, ok, err := a.Store.FinishTaskRun(ctx, in.TaskID, in.Attempt, in.Status, in.Error, out)
	return ok, err
}

func observePromotion(d time.Duration) { metrics.PromotionRound.Observe(d.Seconds()) }
