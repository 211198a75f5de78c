package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// ArmWindowRequest arms the ticks of an event schedule from First on, while they fire by
// Until and at most Max of them, in one transaction (ticks closer together than the
// arming lead: an every-second schedule arms a window of them per workflow task).
type ArmWindowRequest struct {
	ScheduleID int64
	Name       string // the jitter's hash input, as the workflow uses it
	// Spec and CreatedAt are the definition the workflow runs under (the row may hold a
	// newer one the workflow has not loaded yet).
	Spec      schedulespec.Spec
	CreatedAt time.Time
	First     time.Time // the workflow's next tick
	Until     time.Time
	Max       int
	Event     domain.Event
}

// ArmedTick is an armed tick and when its fire becomes visible (the tick with its jitter).
type ArmedTick struct {
	Tick   time.Time
	FireAt time.Time
}

// ArmedWindow is what ArmWindow armed. The history holds it, so replays read the ticks
// instead of computing them again.
type ArmedWindow struct {
	Ticks []ArmedTick
	// NextRunAt is the spec's tick after the last armed one (nil: none).
	NextRunAt *time.Time
	// CommittedAt is the worker's clock once the transaction committed (see RunRecord).
	CommittedAt time.Time
	// DueTogether is how many schedules are due in the second of the window's first tick
	// (see RunRecord).
	DueTogether int64 `json:",omitempty"`
}

// ArmWindow computes the window's ticks from the given spec and commits them armed, each
// visible at its fire time (store.ArmWindow). A retry after the commit creates nothing new
// and answers the same ticks (S1).
func (a *ScheduleActivities) ArmWindow(ctx context.Context, r ArmWindowRequest) (ArmedWindow, error) {
	spec, err := schedulespec.Normalize(r.Spec, r.CreatedAt)
	if err != nil {
		return ArmedWindow{}, temporal.NewNonRetryableApplicationError("stored spec is invalid: "+err.Error(), "BadSpec", err)
	}
	var (
		out   ArmedWindow
		ticks []store.ArmedTick
	)
	for t := r.First; !t.IsZero() && len(ticks) < r.Max; t = spec.Next(t) {
		fireAt := t.Add(spec.JitterFor(r.Name, t))
		if fireAt.After(r.Until) {
			out.NextRunAt = &t
			break
		}
		ticks = append(ticks, store.ArmedTick{Tick: t.UTC(), VisibleAt: fireAt.UTC()})
		out.Ticks = append(out.Ticks, ArmedTick{Tick: t.UTC(), FireAt: fireAt.UTC()})
	}
	if out.NextRunAt == nil && len(ticks) > 0 {
		if n := spec.Next(ticks[len(ticks)-1].Tick); !n.IsZero() {
			out.NextRunAt = &n // stopped by Max
		}
	}
	storeCtx, endSpans := ctx, func(error) {}
	if a.Tracer != nil && len(ticks) > 0 {
		storeCtx, endSpans = a.traceWindow(ctx, r, ticks)
	}
	_, err = a.Store.ArmWindow(storeCtx, r.ScheduleID, ticks, out.NextRunAt, r.Event)
	endSpans(err)
	if err != nil {
		return ArmedWindow{}, gone(fmt.Errorf("arm window of schedule %q: %w", r.Name, err), r.ScheduleID)
	}
	out.CommittedAt = time.Now().UTC()
	if len(ticks) > 0 {
		if out.DueTogether, err = a.due.dueTogether(ctx, a.Store, ticks[0].Tick); err != nil {
			return ArmedWindow{}, err
		}
	}
	return out, nil
}
