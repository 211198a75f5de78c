package domain_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
)

// verdicts of CheckOneStatement.
const (
	one          = "one"
	multiple     = "multiple"
	none         = "none"
	unterminated = "unterminated"
)

// statementCases are texts lexed by CheckOneStatement, with the verdict each must get.
var statementCases = []struct{ text, want string }{
	{`SELECT 1`, one},
	{`SELECT 1;`, one},
	{"SELECT 1;  -- done", one},
	{`SELECT 1; /* c */ ;`, one},
	{`;SELECT 1`, one},
	{`SELECT ';'`, one},
	{`SELECT 'it''s; fine'`, one},
	{`SELECT E'\'; SELECT 2'`, one},
	{`SELECT e'\\'`, one},
	{`SELECT "a;b" FROM (SELECT 1 AS "a;b") t`, one},
	{`SELECT "a"";b" FROM (SELECT 1 AS "a"";b") t`, one},
	{`SELECT $$;$$`, one},
	{`SELECT $tag$ $$ ; $tag$`, one},
	{`SELECT $a$ $ab$ ; $a$`, one},
	{`SELECT $a$ $b$a$`, one},
	{`DO $$ BEGIN PERFORM 1; PERFORM 2; END $$`, one},
	{"SELECT 1 -- ; SELECT 2", one},
	{"SELECT 1 -- ; SELECT 2\r", one},
	{`SELECT /* ; /* nested ; */ still ; */ 1`, one},
	{`SELECT 2 */* ; */ 3`, one},
	{`SELECT a$b FROM (SELECT 1 AS a$b) t`, one},
	{`SELECT U&'d\0061t\+000061;'`, one},
	{`SELECT U&"a;" FROM (SELECT 1 AS "a;") t`, one},
	{`SELECT B'101', X'1F', N'x;'`, one},
	{`SELECT $1::int`, one},
	{"CREATE TABLE t (id int);\n\n", one},
	{"\v\fSELECT 1\t", one},
	{"SELECT 'é;' AS \"ü;\"", one},

	{`SELECT 1; SELECT 2`, multiple},
	{`SELECT 1;SELECT 2;`, multiple},
	{`SELECT 'a\'; DROP TABLE x; --'`, multiple},
	{`SELECT E'a\''; SELECT 2`, multiple},
	{`SELECT $$a$$; SELECT 2`, multiple},
	{`SELECT $a$ $b$ $a$; SELECT 2`, multiple},
	{`SELECT 1 /* c */; SELECT 2`, multiple},
	{`SELECT a$$ FROM (SELECT 1 AS a$$) t; SELECT 2`, multiple},
	{`SELECT "x""; SELECT 2"; SELECT 3`, multiple},
	{"SELECT 1 -- c\n; SELECT 2", multiple},
	{`SELECT 1 /* /* */ */; SELECT 2`, multiple},
	{`SELECT 1;;SELECT 2`, multiple},
	{`COMMIT; DELETE FROM t`, multiple},
	// Stricter than PostgreSQL (documented): a BEGIN ATOMIC body holds semicolons.
	{`CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END`, multiple},

	{``, none},
	{"  \n\t", none},
	{`;`, none},
	{`;;`, none},
	{`-- only a comment`, none},
	{`/* c */ ;`, none},

	{`SELECT 'abc`, unterminated},
	{`SELECT "abc`, unterminated},
	{`SELECT $$abc`, unterminated},
	{`SELECT $a$ abc $b$`, unterminated},
	{`SELECT /* abc`, unterminated},
	{`SELECT /* /* */ abc`, unterminated},
	{`SELECT E'abc\'`, unterminated},
}

func verdict(err error) string {
	switch {
	case err == nil:
		return one
	case errors.Is(err, domain.ErrMultipleStatements):
		return multiple
	case errors.Is(err, domain.ErrNoStatement):
		return none
	case strings.Contains(err.Error(), "unterminated"):
		return unterminated
	}
	return "other: " + err.Error()
}

func TestCheckOneStatementLexesAsPostgres(t *testing.T) {
	t.Parallel()
	for _, c := range statementCases {
		require.Equal(t, c.want, verdict(domain.CheckOneStatement(c.text)), "%q", c.text)
	}
}

// TestCheckOneStatementAgreesWithPostgres parses every case with PostgreSQL's own parser,
// over the extended query protocol (a Parse message, nothing runs), which is how the sql
// executor and the probes send their text. Whatever PostgreSQL refuses as "multiple
// commands" the lexer refuses too, and whatever it parses as one statement the lexer
// accepts, but for the one documented stricter case (BEGIN ATOMIC). It also shows the
// run-time guard itself: the texts the lexer calls multiple, PostgreSQL refuses to parse.
func TestCheckOneStatementAgreesWithPostgres(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.AdminURL(t))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for _, c := range statementCases {
		if c.want == none {
			continue // PostgreSQL parses an empty text as an empty query; the lexer refuses it
		}
		_, err := conn.PgConn().Prepare(ctx, "", c.text, nil)
		var pgErr *pgconn.PgError
		server := one
		switch {
		case err == nil:
		case errors.As(err, &pgErr) && pgErr.Message == "cannot insert multiple commands into a prepared statement":
			server = multiple
		case errors.As(err, &pgErr):
			server = "error: " + pgErr.Message
		default:
			require.NoError(t, err, "%q", c.text)
		}
		switch {
		case server == multiple:
			require.Equal(t, multiple, c.want, "PostgreSQL parses %q as several statements", c.text)
		case server == one && strings.Contains(c.text, "BEGIN ATOMIC"):
			require.Equal(t, multiple, c.want, "the documented stricter case")
		case server == one:
			require.Equal(t, one, c.want, "PostgreSQL parses %q as one statement", c.text)
		default:
			// A syntax error: nothing runs, whatever the lexer says. The lexer's own
			// refusals of unterminated text are among these.
			require.NotEqual(t, multiple, c.want, "%q: PostgreSQL says %s", c.text, server)
		}
		if c.want == multiple && !strings.Contains(c.text, "BEGIN ATOMIC") {
			require.NotEqual(t, one, server, "%q", c.text)
		}
	}
}

// FuzzCheckOneStatement: the lexer never panics, and text it accepts becomes two statements
// once another is appended on a line of its own (so nothing it accepts hides an open quote
// or comment that would swallow what follows).
func FuzzCheckOneStatement(f *testing.F) {
	for _, c := range statementCases {
		f.Add(c.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		err := domain.CheckOneStatement(text)
		if err != nil {
			require.False(t, strings.HasPrefix(verdict(err), "other"), "%q: %v", text, err)
			return
		}
		require.ErrorIs(t, domain.CheckOneStatement(text+"\n;SELECT 1"), domain.ErrMultipleStatements, "%q", text)
		require.NoError(t, domain.CheckOneStatement(text+"\n;"), "%q", text)
	})
}

// A task's sql statement and a wave's SQL probe are judged by CheckOneStatement when given,
// naming the field.
func TestSQLTextIsOneStatementWhereverItIsGiven(t *testing.T) {
	t.Parallel()
	err := domain.ValidatePayload(domain.ExecutorSQL, []byte(`{"statement":"UPDATE t SET x = 1; DROP TABLE t"}`))
	var pe *domain.PayloadError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "statement", pe.Field)
	require.Contains(t, pe.Msg, "more than one statement")
	require.NoError(t, domain.ValidatePayload(domain.ExecutorSQL, []byte(`{"statement":"UPDATE t SET x = ';'; -- done"}`)))

	s := domain.Strategy{Waves: []domain.Wave{{Databases: []string{"a"}}, {Databases: []string{"b"}}}, Bake: "1m",
		Health: &domain.HealthCheck{SQL: "SELECT true; SELECT false"}}
	err = s.Validate([]string{"a", "b"})
	var fe *domain.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "health.sql", fe.Field)
	s.Health.SQL = "SELECT count(*) = 0 FROM broken;"
	require.NoError(t, s.Validate([]string{"a", "b"}))
}

// Only admin and deployer tokens may create what runs code on targets; the sql and http
// executors are what does.
func TestWhoRunsCodeOnTargets(t *testing.T) {
	t.Parallel()
	for _, r := range domain.Roles {
		require.True(t, r.Valid(), r)
		require.Equal(t, r == domain.RoleAdmin || r == domain.RoleDeployer, r.RunsCodeOnTargets(), r)
	}
	require.False(t, domain.TokenRole("root").Valid())
	for e, want := range map[domain.Executor]bool{domain.ExecutorSQL: true, domain.ExecutorHTTP: true, domain.ExecutorNoop: false, domain.ExecutorExternal: false} {
		require.Equal(t, want, e.RunsCode(), e)
	}
}
