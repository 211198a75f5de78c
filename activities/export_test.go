package activities

import (
	"context"
	"time"

	"github.com/tickgate/tickgate/store"
)

// PlayRetry makes runners started with ctx behave as attempt n of their activity.
func PlayRetry(n int32) (restore func()) {
	old := activityAttempt
	activityAttempt = func(context.Context) int32 { return n }
	return func() { activityAttempt = old }
}

// WaitOutOutage is waitOutOutage for a test.
func WaitOutOutage(ctx context.Context, fn func() (int, error)) (int, error) {
	return waitOutOutage(ctx, fn)
}

// TargetEnd is targetEnd for a test.
func TargetEnd(err error) (RunOutcome, bool) { return targetEnd(err) }

// SQLProbe is a.sqlProbe for a test. It is a function, not a method: a test that registers
// RolloutActivities with a worker registers every exported method as an activity.
func SQLProbe(ctx context.Context, a *RolloutActivities, db, query string, timeout time.Duration) store.HealthResult {
	return a.sqlProbe(ctx, db, query, timeout)
}

// TargetAnswered reports whether a wait's error is Temporal's word on the target (targetEnd).
func TargetAnswered(err error) bool { _, closed := targetEnd(err); return closed }
