package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/store/dbgen"
)

// Freezes (docs/progressive.md): while one is in force nothing new starts — the global one
// stops every rollout (rollout_gates, ClaimTasks) and every device task; a rollout's stops
// that rollout. Work in flight finishes. Every freeze is kept, lifted or not: the history
// of who froze, when and why, and who lifted it.

// Freeze is a freezes row.
type Freeze = dbgen.Freeze

// Actor is who does something through the API: the token's id and a label naming it.
type Actor struct {
	TokenID *int64
	Label   string
}

// ErrNotFrozen is returned when there is no freeze in force to lift.
var ErrNotFrozen = errors.New("not frozen")

// FreezeEventTopic is the outbox topic of freezes set and lifted.
const FreezeEventTopic = "freezes"

// SetFreeze puts a freeze in force: the global one (rolloutID nil) or a rollout's. One is
// in force per scope at a time: a second is ErrConflict, naming the one in force.
func (s *Store) SetFreeze(ctx context.Context, rolloutID *int64, reason string, by Actor) (Freeze, error) {
	var f Freeze
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if rolloutID != nil {
			if _, err := q.GetRollout(ctx, *rolloutID); err != nil {
				return err
			}
		}
		cur, err := q.ActiveFreeze(ctx, rolloutID)
		if err != nil {
			return err
		}
		if len(cur) > 0 {
			return fmt.Errorf("%w: already frozen by %s since %s: %s", ErrConflict, cur[0].FrozenBy,
				cur[0].FrozenAt.UTC().Format("2006-01-02 15:04:05Z"), cur[0].Reason)
		}
		f, err = q.InsertFreeze(ctx, dbgen.InsertFreezeParams{RolloutID: rolloutID, Reason: reason, FrozenBy: by.Label, FrozenByToken: by.TokenID})
		if err != nil {
			return err
		}
		return emitFreezeEvent(ctx, q, f, "freeze.set")
	})
	if err != nil {
		return Freeze{}, fmt.Errorf("freeze %s: %w", freezeScope(rolloutID), mapErr(err))
	}
	return f, nil
}

// LiftFreeze lifts the freeze in force in a scope (the global one when rolloutID is nil);
// ErrNotFrozen when there is none.
func (s *Store) LiftFreeze(ctx context.Context, rolloutID *int64, by Actor) (Freeze, error) {
	var f Freeze
	err := s.InTx(ctx, func(_ pgx.Tx, q *dbgen.Queries) error {
		if rolloutID != nil {
			if _, err := q.GetRollout(ctx, *rolloutID); err != nil {
				return err
			}
		}
		var err error
		f, err = q.LiftFreeze(ctx, dbgen.LiftFreezeParams{RolloutID: rolloutID, LiftedBy: &by.Label, LiftedByToken: by.TokenID})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFrozen
		}
		if err != nil {
			return err
		}
		return emitFreezeEvent(ctx, q, f, "freeze.lifted")
	})
	if err != nil {
		if errors.Is(err, ErrNotFrozen) {
			return Freeze{}, fmt.Errorf("unfreeze %s: %w", freezeScope(rolloutID), ErrNotFrozen)
		}
		return Freeze{}, fmt.Errorf("unfreeze %s: %w", freezeScope(rolloutID), mapErr(err))
	}
	return f, nil
}

// ActiveFreeze is the freeze in force in a scope (the global one when rolloutID is nil), or nil.
func (s *Store) ActiveFreeze(ctx context.Context, rolloutID *int64) (*Freeze, error) {
	rows, err := s.Q.ActiveFreeze(ctx, rolloutID)
	if err != nil {
		return nil, fmt.Errorf("freeze of %s: %w", freezeScope(rolloutID), mapErr(err))
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}

// ActiveFreezes lists every freeze in force, the global one first.
func (s *Store) ActiveFreezes(ctx context.Context) ([]Freeze, error) {
	rows, err := s.Q.ActiveFreezes(ctx)
	if err != nil {
		return nil, fmt.Errorf("freezes in force: %w", mapErr(err))
	}
	return rows, nil
}

// FreezeHistory pages through a scope's freezes, newest first (ids below beforeID; 0: from
// the newest).
func (s *Store) FreezeHistory(ctx context.Context, rolloutID *int64, beforeID int64, limit int) ([]Freeze, error) {
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	rows, err := s.Q.FreezeHistory(ctx, dbgen.FreezeHistoryParams{RolloutID: rolloutID, BeforeID: beforeID, MaxRows: int4(limit)})
	if err != nil {
		return nil, fmt.Errorf("freeze history of %s: %w", freezeScope(rolloutID), mapErr(err))
	}
	return rows, nil
}

func freezeScope(rolloutID *int64) string {
	if rolloutID == nil {
		return "everything"
	}
	return "rollout " + strconv.FormatInt(*rolloutID, 10)
}

func emitFreezeEvent(ctx context.Context, q *dbgen.Queries, f Freeze, typ string) error {
	data := map[string]any{"freeze_id": f.ID, "scope": "global", "reason": f.Reason, "frozen_by": f.FrozenBy, "frozen_at": f.FrozenAt.UTC()}
	aggregate := "freeze/global"
	if f.RolloutID != nil {
		data["scope"], data["rollout_id"] = "rollout", *f.RolloutID
		aggregate = "rollout/" + strconv.FormatInt(*f.RolloutID, 10)
	}
	if f.LiftedAt != nil {
		data["lifted_by"], data["lifted_at"] = f.LiftedBy, f.LiftedAt.UTC()
	}
	body, err := json.Marshal(data)
	if err != nil {
		return err
	}
	ev, err := q.InsertEvent(ctx, dbgen.InsertEventParams{Topic: FreezeEventTopic, Type: typ, AggregateID: aggregate, Data: body})
	if err != nil {
		return fmt.Errorf("event %s: %w", typ, err)
	}
	return q.InsertOutboxMessage(ctx, dbgen.InsertOutboxMessageParams{EventID: ev.ID, Topic: ev.Topic})
}

// RolloutsWithAvailableTasks lists the rollouts holding AVAILABLE tasks, for a wake-up
// after a freeze is lifted.
func (s *Store) RolloutsWithAvailableTasks(ctx context.Context) ([]int64, error) {
	ids, err := s.Q.RolloutsWithAvailableTasks(ctx)
	if err != nil {
		return nil, fmt.Errorf("rollouts with AVAILABLE tasks: %w", mapErr(err))
	}
	return ids, nil
}
