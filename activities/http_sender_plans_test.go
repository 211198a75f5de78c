package activities_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A sender's statements find the rows it holds by run id, never by scanning every row it
// holds, whatever PostgreSQL's statistics say of the rows held. Three hundred first attempts are armed and released, the
// table's statistics taken while no sender holds any (so the partial index of held rows,
// http_first_attempts_leased, looks nearly empty), and a sender claims them all; then each
// statement that takes a sender's runs by id is planned as a prepared statement is after a
// few executions (a generic plan) and must not read http_first_attempts through the index
// of held rows (by its primary key, or, the table being this small, a scan of it). With `sender = $n` instead of `sender IS NOT
// DISTINCT FROM $n`, the planner takes that index and scans every row the sender holds once
// per run given: in a burst of 10,000 http fires, recording 1,000 first attempts as being
// sent took 800 ms of PostgreSQL's CPU (8 ms by the primary key), and the burst's p99 at the
// receiver was 3.3 s instead of under 1 s.
func TestASendersStatementsNeverScanTheRowsItHolds(t *testing.T) {
	t.Parallel()
	e := newSenderEnv(t)
	ctx := context.Background()
	e.arm("by-key", 300, "http://127.0.0.1:9/hook", nil, nil)
	_, err := e.st.Pool.Exec(ctx, `ANALYZE http_first_attempts`)
	require.NoError(t, err)
	claimed, err := e.st.ClaimFirstAttempts(ctx, "sender-a", time.Minute, 300)
	require.NoError(t, err)
	require.Len(t, claimed, 300)

	statements := generatedStatements(t, "../store/dbgen/http_first_attempts.sql.go")
	// Each statement's parameters, in order, as literals.
	const ids, sender = `'{1,2,3}'`, `'sender-a'`
	args := map[string]string{
		"startFirstAttempts":      ids + `, '{2026-01-01T00:00:00Z,2026-01-01T00:00:00Z,2026-01-01T00:00:00Z}', ` + sender,
		"lockHeldFirstAttempts":   ids + `, ` + sender,
		"deleteHeldFirstAttempts": ids + `, ` + sender,
		"renewHeldFirstAttempts":  `30, ` + ids + `, ` + sender,
		"requeueFirstAttempts":    ids + `, ` + sender,
		"handedOverFirstAttempts": ids + `, ` + sender,
	}
	conn, err := e.st.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	tx, err := conn.Begin(ctx) // EXPLAIN only plans; rolled back all the same
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	for name, arg := range args {
		sql, ok := statements[name]
		require.True(t, ok, "sqlc generated %s", name)
		_, err := tx.Exec(ctx, `PREPARE `+name+` AS `+sql)
		require.NoError(t, err, name)
		var plan string
		require.NoError(t, tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE `+name+`(`+arg+`)`).Scan(&plan), name)
		require.NotContains(t, plan, "http_first_attempts_leased", "%s scans the index of held rows:\n%s", name, plan)
	}
}

// generatedStatements reads the SQL of the statements sqlc generated in file (its string
// constants, each a statement), by the constant's name.
func generatedStatements(t *testing.T, file string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)const (\\w+) = `(.*?)`").FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = strings.TrimSpace(m[2])
	}
	require.NotEmpty(t, out, "statements in %s", file)
	return out
}
