package main

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// observerRole is the login the bench observes the database with (its sampling queries and
// the statement counts), so that pg_stat_statements tells its statements from the ones the
// system under test sends (as the postgres role).
const observerRole = "bench_observer"

// statementCounter counts, with pg_stat_statements, the statements the system under test
// sends to the bench's database over a measured window.
type statementCounter struct {
	observer *pgxpool.Pool // connected as observerRole
}

// statementCount is one normalised statement and how often it ran in the window.
type statementCount struct {
	query string
	calls int64
	ms    float64 // total execution time in PostgreSQL, nested statements and triggers included
}

// newStatementCounter installs pg_stat_statements in the database at dbURL (the cluster
// must load it: benchstack's StatementStats) and opens the observer's pool.
func newStatementCounter(ctx context.Context, dbURL string) (*statementCounter, error) {
	admin, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("statement counter: %w", err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, `
		CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
		DO $$ BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'bench_observer') THEN
				CREATE ROLE bench_observer LOGIN;
			END IF;
		END $$;
		GRANT pg_read_all_data, pg_read_all_stats TO bench_observer;
		GRANT EXECUTE ON FUNCTION pg_stat_statements_reset(oid, oid, bigint) TO bench_observer;`); err != nil {
		return nil, fmt.Errorf("statement counter: install: %w", err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, fmt.Errorf("statement counter: %w", err)
	}
	u.User = url.User(observerRole)
	obs, err := pgxpool.New(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("statement counter: observer pool: %w", err)
	}
	return &statementCounter{observer: obs}, nil
}

func (c *statementCounter) Close() { c.observer.Close() }

// reset starts a window: every count so far is dropped.
func (c *statementCounter) reset(ctx context.Context) error {
	if _, err := c.observer.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return fmt.Errorf("reset statement counts: %w", err)
	}
	return nil
}

// counts are the statements the postgres role (the system under test) ran in this database
// since the last reset, most frequent first.
func (c *statementCounter) counts(ctx context.Context) ([]statementCount, error) {
	rows, err := c.observer.Query(ctx, `
		SELECT query, sum(calls)::bigint, sum(total_exec_time)::float8 FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND userid = 'postgres'::regrole
		GROUP BY query
		ORDER BY 2 DESC, 1`)
	if err != nil {
		return nil, fmt.Errorf("statement counts: %w", err)
	}
	defer rows.Close()
	var out []statementCount
	for rows.Next() {
		var s statementCount
		if err := rows.Scan(&s.query, &s.calls, &s.ms); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func totalMs(cs []statementCount) float64 {
	var ms float64
	for _, c := range cs {
		ms += c.ms
	}
	return ms
}

func totalCalls(cs []statementCount) int64 {
	var n int64
	for _, c := range cs {
		n += c.calls
	}
	return n
}

var (
	sqlcName   = regexp.MustCompile(`^-- name: (\w+)`)
	whitespace = regexp.MustCompile(`\s+`)
)

// statementName is how the table names a statement: its sqlc query name when it has one
// (sqlc puts "-- name: X" first), else its first words.
func statementName(query string) string {
	if m := sqlcName.FindStringSubmatch(query); m != nil {
		return m[1]
	}
	q := strings.TrimSpace(whitespace.ReplaceAllString(query, " "))
	if len(q) > 70 {
		q = q[:70] + "…"
	}
	return "`" + strings.ReplaceAll(q, "|", `\|`) + "`"
}

// statementTable renders counts and execution times per execution, by statement, as
// Markdown rows.
func statementTable(title string, cs []statementCount, executions int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: %d statements for %d executions, %.3f per execution, %.3f ms of execution time in PostgreSQL per execution\n\n",
		title, totalCalls(cs), executions, perExecution(totalCalls(cs), executions), totalMs(cs)/float64(max(executions, 1)))
	fmt.Fprintln(&b, "| statement | calls | per execution | ms per call | ms per execution |")
	fmt.Fprintln(&b, "| --- | ---: | ---: | ---: | ---: |")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %.4f |\n", statementName(c.query), c.calls, perExecution(c.calls, executions),
			c.ms/float64(max(c.calls, 1)), c.ms/float64(max(executions, 1)))
	}
	return b.String()
}

func perExecution(calls, executions int64) float64 {
	return float64(calls) / float64(max(executions, 1))
}
