package activities_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// runSQLTask runs one sql task with statement on the target database through a (its
// settings) and returns the task run as it ended.
func runSQLTask(t *testing.T, st *store.Store, a *activities.RolloutActivities, statement string, maxAttempts int32, backoff time.Duration) store.TaskRun {
	t.Helper()
	tasks := claimAll(t, st, [2]string{"sql", fmt.Sprintf(`{"statement":%q}`, statement)})
	a.Store = st
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := a.RunRolloutTasks(ctx, activities.BatchInput{Tasks: tasks, MaxAttempts: maxAttempts, Backoff: backoff})
	require.NoError(t, err)
	tr, err := st.GetTaskRun(context.Background(), tasks[0].ID)
	require.NoError(t, err)
	return tr
}

func execOn(t *testing.T, dsn, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), sql)
	require.NoError(t, err)
}

func tableExists(t *testing.T, dsn, table string) bool {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var exists bool
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists))
	return exists
}

// An sql task's statement runs with statement_timeout and lock_timeout set server-side in
// its transaction (the configured values), so a statement that runs too long is ended by
// the database itself.
func TestSQLTaskRunsUnderServerSideTimeouts(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	target := testenv.DatabaseURL(t)
	a := &activities.RolloutActivities{SQLTargets: map[string]string{"dba": target}, SQLStatementTimeout: 7 * time.Second, SQLLockTimeout: 3 * time.Second}
	tr := runSQLTask(t, st, a, `DO $$ BEGIN
		IF current_setting('statement_timeout') <> '7s' OR current_setting('lock_timeout') <> '3s' THEN
			RAISE EXCEPTION 'statement_timeout %, lock_timeout %', current_setting('statement_timeout'), current_setting('lock_timeout');
		END IF; END $$`, 1, 0)
	require.Equal(t, domain.TaskRunDone, tr.Status, tr.Error)

	// A statement longer than the timeout is ended by the server, and fails the task at once.
	a.SQLStatementTimeout = 300 * time.Millisecond
	tr = runSQLTask(t, st, a, `SELECT pg_sleep(20)`, 3, 10*time.Millisecond)
	require.Equal(t, domain.TaskRunFailed, tr.Status)
	require.Contains(t, tr.Error, "canceling statement due to statement timeout")
}

// A statement that waits for a lock longer than lock_timeout is ended by the server; the
// task is tried again (another transaction held the lock), and succeeds once it is free.
func TestSQLTaskLockTimeoutIsTriedAgain(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	target := testenv.DatabaseURL(t)
	execOn(t, target, `CREATE TABLE locked (id int)`)
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, target)
	require.NoError(t, err)
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE locked IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	// Release the lock once the task's first attempt gave up waiting for it.
	watcher, err := pgx.Connect(ctx, target)
	require.NoError(t, err)
	defer watcher.Close(ctx)
	released := make(chan struct{})
	gaveUp := false // the first attempt stopped waiting for the lock by itself
	go func() {
		defer close(released)
		defer func() { _ = tx.Rollback(ctx) }()
		waiting := func() bool {
			var n int
			_ = watcher.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = 'locked'::regclass AND NOT granted`).Scan(&n)
			return n > 0
		}
		deadline := time.Now().Add(30 * time.Second)
		for !waiting() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		for waiting() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		gaveUp = time.Now().Before(deadline)
	}()
	a := &activities.RolloutActivities{SQLTargets: map[string]string{"dba": target}, SQLLockTimeout: 300 * time.Millisecond}
	tr := runSQLTask(t, st, a, `ALTER TABLE locked ADD COLUMN added int`, 3, 3*time.Second)
	<-released
	require.True(t, gaveUp, "the server ended the first attempt's wait for the lock (lock_timeout)")
	require.Equal(t, domain.TaskRunDone, tr.Status, "the lock timeout was tried again: %s", tr.Error)
	conn, err := pgx.Connect(ctx, target)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var added bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'locked' AND column_name = 'added')`).Scan(&added))
	require.True(t, added)
}

// An sql task whose text holds several statements runs none of them. The lexer refuses
// the plain case before connecting; and where the lexer and the database read a text
// differently (here a database with standard_conforming_strings off, where a backslash
// escapes a quote), PostgreSQL itself refuses it, because the text goes over the extended
// query protocol: on the simple protocol the hidden CREATE TABLE ran.
func TestSQLTaskRunsOneStatementOnly(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	target := testenv.DatabaseURL(t)
	a := &activities.RolloutActivities{SQLTargets: map[string]string{"dba": target}}

	tr := runSQLTask(t, st, a, `SELECT 1; CREATE TABLE evil_plain (id int)`, 1, 0)
	require.Equal(t, domain.TaskRunFailed, tr.Status)
	require.Contains(t, tr.Error, "more than one statement")
	require.False(t, tableExists(t, target, "evil_plain"))

	u, err := url.Parse(target)
	require.NoError(t, err)
	execOn(t, target, `ALTER DATABASE `+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+` SET standard_conforming_strings = off`)
	hidden := `SELECT 'a\''; CREATE TABLE evil_hidden (id int) --'`
	require.NoError(t, domain.CheckOneStatement(hidden), "the lexer (standard strings) reads one statement")
	tr = runSQLTask(t, st, a, hidden, 1, 0)
	require.Equal(t, domain.TaskRunFailed, tr.Status)
	require.Contains(t, tr.Error, "cannot insert multiple commands into a prepared statement")
	require.False(t, tableExists(t, target, "evil_hidden"), "the database refused the whole text")
}

// A wave's SQL probe connects with the database's read-only DSN when
// TICKGATE_SQL_PROBE_TARGETS gives one (not the sql executor's), and runs under
// server-side timeouts: the check's timeout as statement_timeout, and a lock timeout.
func TestSQLProbeUsesTheReadOnlyDSNAndServerSideTimeouts(t *testing.T) {
	t.Parallel()
	target := testenv.DatabaseURL(t)
	u, err := url.Parse(target)
	require.NoError(t, err)
	db := strings.TrimPrefix(u.Path, "/")
	role := "probe_" + strings.TrimPrefix(db, "tickgate_t_")
	// The role docs/security.md tells operators to make.
	execOn(t, target, fmt.Sprintf(`CREATE ROLE %[1]s LOGIN PASSWORD 'probe-pw';
		ALTER ROLE %[1]s SET default_transaction_read_only = on;
		GRANT CONNECT ON DATABASE %[2]s TO %[1]s;
		GRANT USAGE ON SCHEMA public TO %[1]s;
		CREATE TABLE health (ok boolean); INSERT INTO health VALUES (true);
		GRANT SELECT ON health TO %[1]s;`, role, pgx.Identifier{db}.Sanitize()))
	t.Cleanup(func() {
		execOn(t, testenv.AdminURL(t), "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
		execOn(t, testenv.AdminURL(t), "DROP ROLE IF EXISTS "+role)
	})
	ro := *u
	ro.User = url.UserPassword(role, "probe-pw")

	a := &activities.RolloutActivities{
		SQLTargets:      map[string]string{"billing": target},
		SQLProbeTargets: map[string]string{"billing": ro.String()},
		SQLLockTimeout:  2 * time.Second,
	}
	probe := fmt.Sprintf(`SELECT current_user = '%s' AND current_setting('statement_timeout') = '5s'
		AND current_setting('lock_timeout') = '2s' AND (SELECT bool_and(ok) FROM health)`, role)
	res := activities.SQLProbe(context.Background(), a, "billing", probe, 5*time.Second)
	require.True(t, res.OK, "the probe ran as the read-only role under the timeouts: %s", res.Detail)

	// The role writes nothing, even outside the probe's read-only transaction.
	conn, err := pgx.Connect(context.Background(), ro.String())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), `CREATE TABLE written_by_probe (id int)`)
	require.ErrorContains(t, err, "read-only transaction", "the role's default transactions are read-only")

	// A database without a probe DSN is probed through the executor's, read-only.
	a.SQLProbeTargets = nil
	res = activities.SQLProbe(context.Background(), a, "billing", fmt.Sprintf(`SELECT current_user <> '%s'`, role), 5*time.Second)
	require.True(t, res.OK, res.Detail)

	// A probe that runs longer than its timeout is ended by the server.
	res = activities.SQLProbe(context.Background(), a, "billing", `SELECT pg_sleep(20) IS NOT NULL`, time.Second)
	require.False(t, res.OK)
	// Whichever ends it first, the database or the worker's deadline, it ends within the
	// check's timeout; the server-side bound is what the first probe above proved.
	require.NotEmpty(t, res.Detail)

	// Several statements are refused before anything runs.
	res = activities.SQLProbe(context.Background(), a, "billing", `SELECT true; SELECT true`, time.Second)
	require.False(t, res.OK)
	require.Contains(t, res.Detail, "more than one statement")
}
