package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5/pgxpool"
)

// targetFails is whether TargetWorkflow fails for workflow id (its rule, without running it).
func targetFails(workflowID string, in TargetInput) bool {
	h := fnv.New64a()
	_, _ = h.Write([]byte(workflowID))
	return int(h.Sum64()/7%100) < in.FailPercent
}

// falseOutcomes counts the workflow-action runs whose end is not what their target did: a
// run ends SUCCEEDED or FAILED only on Temporal's word that its target closed so, and
// TargetWorkflow's outcome is a function of its workflow id, so each such run can be
// judged. A run FAILED whose target succeeds (a wait on the target that failed under the
// faults, taken for the target's end) or SUCCEEDED whose target fails is false.
func falseOutcomes(ctx context.Context, pool *pgxpool.Pool, logf func(string, ...any)) (int64, error) {
	rows, err := pool.Query(ctx, `
		SELECT r.workflow_id, r.status, r.error, s.action->'input'
		FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
		WHERE s.action->>'kind' = 'workflow' AND s.action->>'workflow_type' = $1
		  AND r.workflow_id <> '' AND r.status IN ('SUCCEEDED', 'FAILED') AND r.retracted_at IS NULL`, TargetWorkflowName)
	if err != nil {
		return 0, fmt.Errorf("false outcomes: %w", err)
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var id, status, runErr string
		var raw []byte
		if err := rows.Scan(&id, &status, &runErr, &raw); err != nil {
			return 0, fmt.Errorf("false outcomes: %w", err)
		}
		var in TargetInput
		if err := json.Unmarshal(raw, &in); err != nil {
			return 0, fmt.Errorf("false outcomes: input of %s: %w", id, err)
		}
		if fails := targetFails(id, in); fails != (status == "FAILED") {
			n++
			if n <= 10 {
				logf("chaos: run %s is %s but its target %s (error %q)", id, status, map[bool]string{true: "fails", false: "succeeds"}[fails], runErr)
			}
		}
	}
	return n, rows.Err()
}
