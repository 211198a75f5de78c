package activities

import "context"

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

// TargetAnswered is targetAnswered for a test: the rule both the schedule workflow's wait
// and the run watcher follow before ending a run.
var TargetAnswered = targetAnswered
