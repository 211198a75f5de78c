// Package invariants checks the engines' invariants from the outside, by reading
// PostgreSQL: what the chaos run samples while it injects faults, and what tests and
// benchmarks assert while rollouts run. It is tooling, written independently of the SQL that
// enforces the rules (store, migrations), so a checker that shares a bug with the enforcement
// cannot hide it. The invariants are stated in docs/spec.md.
package invariants

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier runs a query: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// rolloutBreaches lists, in one statement (one snapshot), every breach of R1–R3:
//   - R1: a database with an AVAILABLE/RUNNING DDL or SDL task has no other active task;
//   - R2: no active task has a smaller-version PENDING/AVAILABLE/RUNNING task on its database;
//   - R3: per rollout, AVAILABLE + RUNNING ≤ parallel_limit;
//   - W1 (docs/progressive.md): no task of a wave has been promoted while a wave before it
//     in its rollout has not PASSED.
const rolloutBreaches = `
WITH live AS (
    SELECT id, rollout_id, database, type, version, version_key, status FROM task_runs
    WHERE status IN ('PENDING', 'AVAILABLE', 'RUNNING')
)
SELECT 'R1: database ' || database || ' has ' || count(*) || ' active tasks, one of them DDL/SDL'
FROM live WHERE status IN ('AVAILABLE', 'RUNNING')
GROUP BY database HAVING bool_or(type IN ('DDL', 'SDL')) AND count(*) > 1
UNION ALL
SELECT 'R2: task ' || a.id || ' (version ' || a.version || ') is ' || a.status || ' while task ' || b.id ||
       ' (version ' || b.version || ') is ' || b.status || ' on database ' || a.database
FROM live a JOIN live b ON b.database = a.database AND b.version_key < a.version_key
WHERE a.status IN ('AVAILABLE', 'RUNNING')
UNION ALL
SELECT 'R3: rollout ' || r.id || ' has ' || count(*) || ' active tasks, limit ' || r.parallel_limit
FROM live l JOIN rollouts r ON r.id = l.rollout_id
WHERE l.status IN ('AVAILABLE', 'RUNNING')
GROUP BY r.id, r.parallel_limit HAVING count(*) > r.parallel_limit
UNION ALL
SELECT 'W1: task ' || t.id || ' of wave ' || t.wave || ' of rollout ' || t.rollout_id || ' was promoted while wave ' ||
       w.wave || ' is ' || w.status
FROM task_runs t JOIN rollout_waves w ON w.rollout_id = t.rollout_id AND w.wave < t.wave
WHERE t.promoted_at IS NOT NULL AND w.status <> 'PASSED'`

// RolloutBreaches reads the task runs once (one snapshot) and describes every breach of
// R1–R3 and W1 it finds (none: an empty slice).
func RolloutBreaches(ctx context.Context, q Querier) ([]string, error) {
	rows, err := q.Query(ctx, rolloutBreaches)
	if err != nil {
		return nil, fmt.Errorf("check rollout invariants: %w", err)
	}
	breaches, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("check rollout invariants: %w", err)
	}
	return breaches, nil
}
