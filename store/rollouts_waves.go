package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// A rollout's waves (docs/progressive.md): the wave gate in rollout_gates reads
// rollouts.open_wave; these steps move it along. Each runs in one transaction holding the
// rollout's row lock, conditioned on the wave's status, so a step retried or taken twice
// (a lost workflow task, a continued-as-new run) changes nothing the second time. The
// rollout's workflow takes them: AdvanceWave when it claims, BeginWaveChecks after the bake,
// PassWave or FailWave with the checks' results.

// RolloutWave is a rollout_waves row.
type RolloutWave = dbgen.RolloutWave

// WaveState is where a rollout's open wave stands, for its workflow to act on.
type WaveState struct {
	Wave      int32      `json:"wave"`
	Waves     int32      `json:"waves"`
	Status    string     `json:"status"`
	BakeUntil *time.Time `json:"bake_until,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	// Opened: this step opened Wave (the one before passed without a bake or checks), so
	// its tasks may now be promoted.
	Opened bool `json:"opened,omitempty"`
}

// HealthResult is one health check's outcome, kept in rollout_waves.health.
type HealthResult struct {
	Check  string    `json:"check"`  // "sql" or "http"
	Target string    `json:"target"` // the database, or the URL
	OK     bool      `json:"ok"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// ListRolloutWaves lists a rollout's waves, first to last (none for a rollout of one wave).
func (s *Store) ListRolloutWaves(ctx context.Context, rolloutID int64) ([]RolloutWave, error) {
	rows, err := s.Q.ListRolloutWaves(ctx, rolloutID)
	if err != nil {
		return nil, fmt.Errorf("waves of rollout %d: %w", rolloutID, mapErr(err))
	}
	return rows, nil
}

// RolloutStrategy decodes a rollout's strategy (nil when it has none).
func RolloutStrategy(r Rollout) (*domain.Strategy, error) {
	if len(r.Strategy) == 0 {
		return nil, nil
	}
	var st domain.Strategy
	if err := json.Unmarshal(r.Strategy, &st); err != nil {
		return nil, fmt.Errorf("rollout %d: decode strategy: %w", r.ID, err)
	}
	return &st, nil
}

// AdvanceWave moves a rollout's open wave along as far as SQL alone can, once its tasks
// (and those of the waves before it) have all ended:
//   - a task of the wave ended FAILED or CANCELED: the wave is FAILED and the rollout,
//     if running, is paused with the reason (an event on the outbox says so); the last
//     wave is only marked FAILED (the rollout ends FAILED by itself);
//   - the last wave: PASSED;
//   - a bake: BAKING until now + bake (now is the workflow's clock, whose timer ends it);
//   - no bake but health checks: CHECKING;
//   - neither: PASSED, and the next wave opens.
//
// It returns the open wave's state afterwards (the next one, Opened, when it opened), and
// nil for a rollout of one wave.
func (s *Store) AdvanceWave(ctx context.Context, rolloutID int64, now time.Time) (*WaveState, error) {
	var out *WaveState
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		r, err := q.LockRollout(ctx, rolloutID)
		if err != nil {
			return err
		}
		if r.WaveCount <= 1 {
			return nil
		}
		w, err := q.GetRolloutWave(ctx, dbgen.GetRolloutWaveParams{RolloutID: r.ID, Wave: r.OpenWave})
		if err != nil {
			return fmt.Errorf("wave %d: %w", r.OpenWave, err)
		}
		if w.Status == domain.WaveRunning && r.Status != domain.RolloutCanceled {
			if w, err = finishWave(ctx, q, r, w, now); err != nil {
				return err
			}
			if w.Status == domain.WavePassed && w.Wave < r.WaveCount {
				// The next wave opened: that one is where the rollout stands now.
				if w, err = q.GetRolloutWave(ctx, dbgen.GetRolloutWaveParams{RolloutID: r.ID, Wave: w.Wave + 1}); err != nil {
					return err
				}
				out = waveState(r, w)
				out.Opened = true
				return nil
			}
		}
		out = waveState(r, w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("advance the waves of rollout %d: %w", rolloutID, mapErr(err))
	}
	return out, nil
}

func waveState(r Rollout, w RolloutWave) *WaveState {
	return &WaveState{Wave: w.Wave, Waves: r.WaveCount, Status: w.Status, BakeUntil: w.BakeUntil, Reason: w.Reason}
}

// finishWave is AdvanceWave's step for an open RUNNING wave.
func finishWave(ctx context.Context, q *dbgen.Queries, r Rollout, w RolloutWave, now time.Time) (RolloutWave, error) {
	c, err := q.WaveTaskCounts(ctx, dbgen.WaveTaskCountsParams{RolloutID: r.ID, Wave: w.Wave})
	if err != nil {
		return w, err
	}
	if c.Unfinished > 0 {
		return w, nil
	}
	st, err := RolloutStrategy(r)
	if err != nil {
		return w, err
	}
	if st == nil {
		st = &domain.Strategy{}
	}
	last := w.Wave >= r.WaveCount
	set := dbgen.SetWaveStatusParams{RolloutID: r.ID, Wave: w.Wave, FromStatuses: []string{domain.WaveRunning}, FinishedAt: &now}
	switch {
	case c.Failed+c.Canceled > 0:
		set.Status, set.Failure = domain.WaveFailed, domain.WaveFailureTasks
		set.Reason = fmt.Sprintf("wave %d ended with %s", w.Wave, failedTasks(c.Failed, c.Canceled))
	case last:
		set.Status, set.PassedAt = domain.WavePassed, &now
	default:
		bake, _ := time.ParseDuration(st.Bake)
		switch {
		case bake > 0:
			until := now.Add(bake)
			set.Status, set.BakeUntil = domain.WaveBaking, &until
		case st.Health != nil:
			set.Status = domain.WaveChecking
		default:
			set.Status, set.PassedAt = domain.WavePassed, &now
		}
	}
	w, err = q.SetWaveStatus(ctx, set)
	if err != nil {
		return w, fmt.Errorf("wave %d → %s: %w", set.Wave, set.Status, err)
	}
	switch {
	case w.Status == domain.WaveFailed && !last:
		err = pauseRolloutFor(ctx, q, r.ID, "wave", w.Wave, w.Reason)
	case w.Status == domain.WavePassed && !last:
		err = openNextWave(ctx, q, r.ID, w.Wave, now)
	}
	return w, err
}

func failedTasks(failed, canceled int64) string {
	var s string
	plural := func(n int64, what string) string {
		if n == 1 {
			return "1 " + what + " task"
		}
		return strconv.FormatInt(n, 10) + " " + what + " tasks"
	}
	if failed > 0 {
		s = plural(failed, "failed")
	}
	if canceled > 0 {
		if s != "" {
			s += " and "
		}
		s += plural(canceled, "canceled")
	}
	return s
}

// openNextWave opens the wave after wave (PASSED): the wave gate lets its tasks through.
func openNextWave(ctx context.Context, q *dbgen.Queries, rolloutID int64, wave int32, now time.Time) error {
	if _, err := q.OpenNextWave(ctx, dbgen.OpenNextWaveParams{ID: rolloutID, Wave: wave}); err != nil {
		return fmt.Errorf("open wave %d: %w", wave+1, err)
	}
	_, err := q.SetWaveStatus(ctx, dbgen.SetWaveStatusParams{RolloutID: rolloutID, Wave: wave + 1, Status: domain.WaveRunning,
		FromStatuses: []string{domain.WaveWaiting}, StartedAt: &now})
	if err != nil {
		return fmt.Errorf("start wave %d: %w", wave+1, err)
	}
	return nil
}

// BeginWaveChecks moves a BAKING wave to CHECKING once its bake is over (the workflow's
// timer says so) and returns the wave, its rollout's strategy and whether the checks are to
// run now (the wave is CHECKING and its rollout is not canceled). A wave already CHECKING
// (a retried step) is returned as it is.
func (s *Store) BeginWaveChecks(ctx context.Context, rolloutID int64, wave int32, now time.Time) (RolloutWave, *domain.Strategy, bool, error) {
	var (
		w   RolloutWave
		st  *domain.Strategy
		run bool
	)
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		r, err := q.LockRollout(ctx, rolloutID)
		if err != nil {
			return err
		}
		if st, err = RolloutStrategy(r); err != nil {
			return err
		}
		w, err = q.SetWaveStatus(ctx, dbgen.SetWaveStatusParams{RolloutID: rolloutID, Wave: wave, Status: domain.WaveChecking,
			FromStatuses: []string{domain.WaveBaking}})
		if errors.Is(err, pgx.ErrNoRows) {
			w, err = q.GetRolloutWave(ctx, dbgen.GetRolloutWaveParams{RolloutID: rolloutID, Wave: wave})
		}
		if err != nil {
			return err
		}
		run = w.Status == domain.WaveChecking && r.Status != domain.RolloutCanceled && r.OpenWave == wave
		return nil
	})
	if err != nil {
		return RolloutWave{}, nil, false, fmt.Errorf("begin the checks of wave %d of rollout %d: %w", wave, rolloutID, mapErr(err))
	}
	return w, st, run, nil
}

// PassWave records a CHECKING wave's passed checks and opens the next wave. It reports
// false when the wave was no longer CHECKING (a retried step, or a cancel meanwhile).
func (s *Store) PassWave(ctx context.Context, rolloutID int64, wave int32, results []HealthResult, now time.Time) (bool, error) {
	body, err := json.Marshal(nonNil(results))
	if err != nil {
		return false, err
	}
	passed := false
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if _, err := q.LockRollout(ctx, rolloutID); err != nil {
			return err
		}
		_, err := q.SetWaveStatus(ctx, dbgen.SetWaveStatusParams{RolloutID: rolloutID, Wave: wave, Status: domain.WavePassed,
			FromStatuses: []string{domain.WaveChecking}, CheckedAt: &now, PassedAt: &now, Health: body})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		passed = true
		return openNextWave(ctx, q, rolloutID, wave, now)
	})
	if err != nil {
		return false, fmt.Errorf("pass wave %d of rollout %d: %w", wave, rolloutID, mapErr(err))
	}
	return passed, nil
}

// FailWave records a CHECKING wave's failed checks, with reason ("health check failed on
// billing: …"), and pauses its rollout saying so (an event on the outbox). It reports false
// when the wave was no longer CHECKING.
func (s *Store) FailWave(ctx context.Context, rolloutID int64, wave int32, reason string, results []HealthResult, now time.Time) (bool, error) {
	body, err := json.Marshal(nonNil(results))
	if err != nil {
		return false, err
	}
	failed := false
	err = s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if _, err := q.LockRollout(ctx, rolloutID); err != nil {
			return err
		}
		w, err := q.SetWaveStatus(ctx, dbgen.SetWaveStatusParams{RolloutID: rolloutID, Wave: wave, Status: domain.WaveFailed,
			Failure: domain.WaveFailureHealth, Reason: reason, FromStatuses: []string{domain.WaveChecking}, CheckedAt: &now, Health: body})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		failed = true
		return pauseRolloutFor(ctx, q, rolloutID, "health", w.Wave, "wave "+strconv.Itoa(int(w.Wave))+": "+reason)
	})
	if err != nil {
		return false, fmt.Errorf("fail wave %d of rollout %d: %w", wave, rolloutID, mapErr(err))
	}
	return failed, nil
}

// retryFailedWave takes a resumed rollout's FAILED open wave back to where it can be tried
// again: CHECKING after failed health checks (they run again), RUNNING after failed tasks
// (AdvanceWave looks at them again: retried or skipped ones let it through).
func retryFailedWave(ctx context.Context, q *dbgen.Queries, r Rollout) error {
	w, err := q.GetRolloutWave(ctx, dbgen.GetRolloutWaveParams{RolloutID: r.ID, Wave: r.OpenWave})
	if err != nil || w.Status != domain.WaveFailed {
		return err
	}
	to := domain.WaveRunning
	if w.Failure == domain.WaveFailureHealth {
		to = domain.WaveChecking
	}
	_, err = q.SetWaveStatus(ctx, dbgen.SetWaveStatusParams{RolloutID: r.ID, Wave: w.Wave, Status: to, Reason: "",
		FromStatuses: []string{domain.WaveFailed}})
	return err
}

// pauseRolloutFor pauses a running rollout because of cause ("wave", "health", "abort"),
// saying why, and emits rollout.paused on the outbox.
func pauseRolloutFor(ctx context.Context, q *dbgen.Queries, rolloutID int64, cause string, wave int32, reason string) error {
	r, err := q.PauseRolloutFor(ctx, dbgen.PauseRolloutForParams{ID: rolloutID, Status: domain.RolloutPaused, Reason: reason})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // paused or canceled already
	}
	if err != nil {
		return err
	}
	data := map[string]any{"rollout_id": r.ID, "status": r.Status, "reason": reason, "cause": cause}
	if wave > 0 {
		data["wave"] = wave
	}
	return emitRolloutEvent(ctx, q, r.ID, "rollout.paused", data)
}

// RolloutEventTopic is the outbox topic of the rollout engine's events.
const RolloutEventTopic = "rollouts"

// emitRolloutEvent appends an event about a rollout to the event store and the outbox, in
// the caller's transaction (as a schedule's fire does).
func emitRolloutEvent(ctx context.Context, q *dbgen.Queries, rolloutID int64, typ string, data map[string]any) error {
	body, err := json.Marshal(data)
	if err != nil {
		return err
	}
	ev, err := q.InsertEvent(ctx, dbgen.InsertEventParams{Topic: RolloutEventTopic, Type: typ,
		AggregateID: "rollout/" + strconv.FormatInt(rolloutID, 10), Data: body})
	if err != nil {
		return fmt.Errorf("event %s: %w", typ, err)
	}
	if err := q.InsertOutboxMessage(ctx, dbgen.InsertOutboxMessageParams{EventID: ev.ID, Topic: ev.Topic}); err != nil {
		return fmt.Errorf("outbox %s: %w", typ, err)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
