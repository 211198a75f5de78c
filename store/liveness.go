package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Worker liveness: the evidence S2 rests on. A tick older than its catch-up window is MISSED
// only when no worker was alive for part of the time since it (an outage); a worker that
// was alive but behind fires it late. Each worker process records itself alive in
// worker_liveness (Liveness.Run) and schedule_outages finds the spans nobody covered.
const (
	// LivenessBeat is how often a live worker beats.
	LivenessBeat = 3 * time.Second
	// LivenessGrace is how long after its last beat a worker still counts as alive: five
	// beats, so that a beat delayed by load never reads as an outage.
	LivenessGrace = 5 * LivenessBeat
)

// Outage is a span in which no worker was alive, and the reason a tick it makes MISSED is
// recorded with (schedule_missed_reason).
type Outage struct {
	From         time.Time
	Until        time.Time
	MissedReason string
}

// Outages lists the spans of [since, until] in which no worker was alive, oldest first,
// each with its MISSED reason under the catch-up window given.
func (s *Store) Outages(ctx context.Context, since, until time.Time, catchupWindow time.Duration) ([]Outage, error) {
	rows, err := s.Q.ScheduleOutages(ctx, dbgen.ScheduleOutagesParams{
		Since: since.UTC(), Until: until.UTC(), GraceSeconds: LivenessGrace.Seconds(), CatchupWindowMs: catchupWindow.Milliseconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("outages from %s to %s: %w", since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), mapErr(err))
	}
	out := make([]Outage, len(rows))
	for i, r := range rows {
		out[i] = Outage{From: r.DownFrom.UTC(), Until: r.DownUntil.UTC(), MissedReason: r.MissedReason}
	}
	return out, nil
}

// TickFate is a late tick's fate by tick_fate, the one rule of a late tick: "fired"
// (late, while workers ran), "catchup" or "missed" (with the reason).
type TickFate struct {
	Fate   string
	Reason string
}

// JudgeTicks judges ticks handled late at judgedAt (fireAt: each tick with its jitter), in
// the order given, under the catch-up window.
func (s *Store) JudgeTicks(ctx context.Context, fireAt []time.Time, judgedAt time.Time, catchupWindow time.Duration) ([]TickFate, error) {
	if len(fireAt) == 0 {
		return nil, nil
	}
	utc := make([]time.Time, len(fireAt))
	for i, t := range fireAt {
		utc[i] = t.UTC()
	}
	rows, err := s.Q.JudgeLateTicks(ctx, dbgen.JudgeLateTicksParams{
		FireAt: utc, JudgedAt: judgedAt.UTC(), CatchupWindowMs: catchupWindow.Milliseconds(), Since: utc[0],
		OnTimeMs: float64(domain.OnTimeTolerance.Milliseconds()), GraceSeconds: LivenessGrace.Seconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("judge %d late ticks: %w", len(fireAt), mapErr(err))
	}
	out := make([]TickFate, len(rows))
	for i, r := range rows {
		out[i] = TickFate{Fate: r.Fate, Reason: r.Reason}
	}
	return out, nil
}

// StartLiveness records a worker process alive from now; a process calls it once, before
// it polls any task, with an id no other process uses.
func (s *Store) StartLiveness(ctx context.Context, workerID string) error {
	if err := s.Q.StartWorkerLiveness(ctx, workerID); err != nil {
		return fmt.Errorf("record worker %s alive: %w", workerID, mapErr(err))
	}
	if err := s.Q.ForgetOldLiveness(ctx); err != nil {
		return fmt.Errorf("forget old worker liveness: %w", mapErr(err))
	}
	return nil
}

// Liveness keeps a worker process's liveness row beating while the process can do its
// work: every LivenessBeat it asks Healthy (the worker's Temporal connection) and, if
// healthy, beats on a connection of its own, so a busy pool never delays a beat.
type Liveness struct {
	Store    *Store
	WorkerID string
	// Healthy, when set, must answer nil for a beat: a worker that cannot reach Temporal
	// cannot fire, and counts as down.
	Healthy func(context.Context) error
	Logger  *slog.Logger
}

// Run beats until ctx ends.
func (l *Liveness) Run(ctx context.Context) {
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	t := time.NewTicker(LivenessBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		if conn, err = l.beat(ctx, conn); err != nil && ctx.Err() == nil {
			logger.Warn("worker liveness beat", "worker", l.WorkerID, "error", err)
		}
	}
}

// beat records one beat, (re)connecting when needed; it returns the connection to reuse.
func (l *Liveness) beat(ctx context.Context, conn *pgx.Conn) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, LivenessBeat)
	defer cancel()
	if l.Healthy != nil {
		if err := l.Healthy(ctx); err != nil {
			return conn, fmt.Errorf("not beating, Temporal is unreachable: %w", err)
		}
	}
	if conn == nil || conn.IsClosed() {
		var err error
		if conn, err = pgx.ConnectConfig(ctx, l.Store.Pool.Config().ConnConfig); err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
	}
	n, err := dbgen.New(conn).BeatWorkerLiveness(ctx, l.WorkerID)
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, fmt.Errorf("beat: %w", mapErr(err))
	}
	if n == 0 {
		// The row is gone (a restore, a cleanup): this process is alive from now.
		return conn, l.Store.StartLiveness(ctx, l.WorkerID)
	}
	return conn, nil
}
