package invariants

import (
	"context"
	"fmt"
)

// HTTPDelivery is what a receiver of http actions saw of one Idempotency-Key (see
// internal/dev/receiver): how many deliveries it executed (answered 2xx while the key was
// not yet executed: 0 or 1), and how many arrived with a signature that did not verify.
type HTTPDelivery struct {
	Key           string
	Executions    int
	BadSignatures int
}

// HTTPBreaches are the breaches of S1 for http actions, from the receiver's side: each
// tick is delivered under its own run's key — retried deliveries of that key counting as
// one execution — and a run's status tells the truth about it.
type HTTPBreaches struct {
	// Phantom: keys delivered that are no run's key (or the key of an armed fire that was
	// retracted): a delivery tickgate has no run for, which the receiver cannot dedupe
	// against the tick's own.
	Phantom []string
	// NotExecuted: runs recorded SUCCEEDED whose key the receiver never executed.
	NotExecuted []string
	// FailedButExecuted: runs recorded FAILED whose key the receiver executed.
	FailedButExecuted []string
	// BadSignatures: keys delivered with a signature the schedule's secret does not verify.
	BadSignatures []string
}

// Count is the number of breaches.
func (b HTTPBreaches) Count() int {
	return len(b.Phantom) + len(b.NotExecuted) + len(b.FailedButExecuted) + len(b.BadSignatures)
}

// CheckHTTP compares what the receiver at urlPrefix saw (by key) with the runs of the http
// actions whose URL starts with urlPrefix, read in one statement (one snapshot), while both
// go on: before is what the receiver had seen before that snapshot was taken, after what it
// had seen once the statement returned. A delivery precedes the commit of nothing, so a key
// in before must be a run's; a run recorded SUCCEEDED in the snapshot was executed by then,
// so its key is in after.
func CheckHTTP(ctx context.Context, q Querier, urlPrefix string, before map[string]HTTPDelivery, after func() map[string]HTTPDelivery) (HTTPBreaches, error) {
	var b HTTPBreaches
	rows, err := q.Query(ctx, `
		SELECT r.idempotency_key, r.status, r.retracted_at IS NOT NULL
		FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		WHERE s.action->>'kind' = 'http' AND starts_with(s.action->>'url', $1)`, urlPrefix)
	if err != nil {
		return b, fmt.Errorf("http runs: %w", err)
	}
	defer rows.Close()
	runs := map[string]string{} // key → the status of the run (not retracted) that has it
	for rows.Next() {
		var key, status string
		var retracted bool
		if err := rows.Scan(&key, &status, &retracted); err != nil {
			return b, fmt.Errorf("http runs: %w", err)
		}
		if !retracted {
			runs[key] = status
		}
	}
	if err := rows.Err(); err != nil {
		return b, fmt.Errorf("http runs: %w", err)
	}
	seen := after()
	for key, status := range runs {
		switch {
		case status == "SUCCEEDED" && seen[key].Executions == 0:
			b.NotExecuted = append(b.NotExecuted, key)
		case status == "FAILED" && before[key].Executions > 0:
			b.FailedButExecuted = append(b.FailedButExecuted, key)
		}
	}
	for key, d := range before {
		if _, ok := runs[key]; !ok {
			b.Phantom = append(b.Phantom, key)
		}
		if d.BadSignatures > 0 {
			b.BadSignatures = append(b.BadSignatures, key)
		}
	}
	return b, nil
}
