package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tickgate/tickgate/domain"
)

// SQL on a tenant's database (the sql executor, a wave's SQL probe) is bounded by the
// database itself: each transaction sets statement_timeout and lock_timeout first (SET
// LOCAL, gone with the transaction), so a statement that runs or waits too long is ended
// server-side even if the worker that sent it is gone. Its text is one statement, sent
// over the extended query protocol, which PostgreSQL refuses to run with several.

func (a *RolloutActivities) statementTimeout() time.Duration {
	if a.SQLStatementTimeout > 0 {
		return a.SQLStatementTimeout
	}
	return domain.DefaultSQLStatementTimeout
}

func (a *RolloutActivities) lockTimeout() time.Duration {
	if a.SQLLockTimeout > 0 {
		return a.SQLLockTimeout
	}
	return domain.DefaultSQLLockTimeout
}

// setLocalTimeouts sets the transaction's statement and lock timeouts (SET LOCAL).
func setLocalTimeouts(ctx context.Context, tx pgx.Tx, statement, lock time.Duration) error {
	ms := func(d time.Duration) string { return strconv.FormatInt(max(d.Milliseconds(), 1), 10) }
	if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true)",
		ms(statement), ms(lock)); err != nil {
		return fmt.Errorf("set the statement and lock timeouts: %w", err)
	}
	return nil
}

// execOneStatement runs statement over the extended query protocol (Parse, Bind,
// Execute, whatever the DSN's default_query_exec_mode), where PostgreSQL refuses a text
// of several statements: "cannot insert multiple commands into a prepared statement".
func execOneStatement(ctx context.Context, tx pgx.Tx, statement string) (pgconn.CommandTag, error) {
	return tx.Conn().PgConn().ExecParams(ctx, statement, nil, nil, nil, nil).Close()
}

// lockTimedOut reports whether err is a statement ended by lock_timeout.
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03" // lock_not_available
}
