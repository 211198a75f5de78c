package domain

// AttemptOutcome is how one delivery attempt of an http action's run ended
// (schedule_run_attempts.outcome, http_first_attempts' recorded attempts).
type AttemptOutcome = string

// Attempt outcomes. The final ones are AttemptSucceeded, AttemptRetryable and AttemptFinal;
// a first attempt held by a sender is also AttemptSending, then possibly AttemptLost.
const (
	// AttemptSucceeded got a 2xx answer.
	AttemptSucceeded AttemptOutcome = "succeeded"
	// AttemptRetryable failed in a way the retry policy tries again (408, 429, 5xx, no
	// answer), if attempts and age are left.
	AttemptRetryable AttemptOutcome = "retryable"
	// AttemptFinal failed for good: another 4xx, a redirect, an address the outbound rule
	// refuses.
	AttemptFinal AttemptOutcome = "final"
	// AttemptSending is an attempt recorded as being sent, its answer not yet recorded.
	AttemptSending AttemptOutcome = "sending"
	// AttemptLost is an attempt whose sender died before its answer was recorded: the
	// request may have reached the receiver (which dedupes on webhook-id).
	AttemptLost AttemptOutcome = "lost"
)
