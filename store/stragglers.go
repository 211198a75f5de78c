package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// Fires armed behind the release frontier ("stragglers").
//
// A release makes every armed fire due up to its time true, as one feed_releases row: the
// feed places such a fire's message at that release's position, and the settling counts it
// fired at the release. That holds for every fire armed before the release. A fire armed
// after a release already passed its time — a planner back after an outage arming the ticks
// it missed while the releasers, back first, released up to now — would slip in behind the
// release: shown at once as fired at a release that never saw it, never judged late, and
// placed in the feed at an old position, behind consumers that already read past it.
//
// So a transaction that arms a fire near or behind the frontier holds the release lock
// shared (taken before any row lock, as a retraction does, so that it never waits for a
// release while holding a row the release waits for): no release runs meanwhile. It reads
// the frontier under that lock, and releases the fires it armed at or behind it itself, as
// the release would have: judged by tick_fate like every late fire (ReleaseDueFires), their
// messages positioned at this transaction — after everything a cursor could have read.

// stragglerMargin is how near the release frontier (or now) an armed fire's time must be
// for its arming transaction to take the release lock: beyond it, a release that passes the
// fire's time starts after the arming transaction assigned its id, and the feed's horizon
// holds the release back until the arming commits.
const stragglerMargin = 2 * domain.OnTimeTolerance

// errNeedsReleaseLock rolls an arming transaction back to start again holding the release
// lock: it found a fire it arms near the frontier only after taking row locks.
var errNeedsReleaseLock = errors.New("arming near the release frontier: retry holding the release lock")

// nearFrontier reports whether any of the visible times is within stragglerMargin of the
// release frontier or of the database's now, whichever is later (read without the lock).
func nearFrontier(ctx context.Context, q *dbgen.Queries, visible []time.Time) (bool, error) {
	if len(visible) == 0 {
		return false, nil
	}
	f, err := q.ReleaseFrontier(ctx)
	if err != nil {
		return false, fmt.Errorf("release frontier: %w", mapErr(err))
	}
	edge := f.Frontier
	if f.DbNow.After(edge) {
		edge = f.DbNow
	}
	edge = edge.Add(stragglerMargin)
	for _, v := range visible {
		if !v.After(edge) {
			return true, nil
		}
	}
	return false, nil
}

// armedRef is a fire an arming transaction armed.
type armedRef struct {
	RunID          int64
	VisibleAt      time.Time
	StartsWorkflow bool
}

// releaseStragglers releases the fires just armed (in this transaction, which holds the
// release lock shared) whose time the release frontier has passed, judged at asOf (nil:
// now). A workflow fire among them is judged as not started: its target is started after
// the arming commits. It returns what the release made of them.
func releaseStragglers(ctx context.Context, q *dbgen.Queries, asOf *time.Time, armed []armedRef) ([]dbgen.ReleaseDueFiresRow, error) {
	f, err := q.ReleaseFrontier(ctx)
	if err != nil {
		return nil, fmt.Errorf("release frontier: %w", mapErr(err))
	}
	ref := f.DbNow // now(): the transaction's start, as ReleaseDueFires reads it
	if asOf != nil {
		ref = *asOf
	}
	p := dbgen.ReleaseDueFiresParams{AsOf: asOf, OnTimeMs: float64(domain.OnTimeTolerance.Milliseconds()), GraceSeconds: LivenessGrace.Seconds()}
	judge := dbgen.JudgeLateWorkflowFiresParams{AsOf: asOf, OnTimeMs: p.OnTimeMs, GraceSeconds: p.GraceSeconds}
	for _, a := range armed {
		if a.VisibleAt.After(f.Frontier) {
			continue
		}
		p.StragglerIds = append(p.StragglerIds, a.RunID)
		// A late workflow fire is judged from what its target did (not started); one on
		// time is judged by ReleaseDueFires itself.
		if a.StartsWorkflow && ref.Sub(a.VisibleAt) > domain.OnTimeTolerance {
			judge.Ids = append(judge.Ids, a.RunID)
			judge.StartedAt = append(judge.StartedAt, time.Time{}) // not started
			judge.Began = append(judge.Began, false)
		}
	}
	if len(p.StragglerIds) == 0 {
		return nil, nil
	}
	if len(judge.Ids) > 0 {
		fates, err := q.JudgeLateWorkflowFires(ctx, judge)
		if err != nil {
			return nil, fmt.Errorf("judge %d workflow fires armed behind the release: %w", len(judge.Ids), mapErr(err))
		}
		for _, d := range fates {
			p.DecidedIds = append(p.DecidedIds, d.ID)
			p.DecidedFates = append(p.DecidedFates, d.Fate)
			p.DecidedReasons = append(p.DecidedReasons, d.Reason)
			p.DecidedFiredAt = append(p.DecidedFiredAt, d.FiredAt)
		}
	}
	rows, err := q.ReleaseDueFires(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("release %d fires armed behind the release: %w", len(p.StragglerIds), mapErr(err))
	}
	return rows, nil
}
