package activities

import "context"

// PlayRetry makes runners started with ctx behave as attempt n of their activity.
func PlayRetry(n int32) (restore func()) {
	old := activityAttempt
	activityAttempt = func(context.Context) int32 { return n }
	return func() { activityAttempt = old }
}
