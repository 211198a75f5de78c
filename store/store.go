// Package store is tickgate's repository layer and the only place SQL lives: a pgxpool plus
// the sqlc-typed queries of store/queries, the SQL functions of the current schema
// (store/schema.sql; the migrations are its history), the multi-statement transactions the
// engines need, and the loops that are SQL alone (the releaser of armed fires, the liveness
// beat, the LISTEN listener, the device results' group commit). The words it stores —
// statuses, kinds, outcomes — are domain's.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tickgate/tickgate/internal/readiness"
	"github.com/tickgate/tickgate/migrations"
	"github.com/tickgate/tickgate/store/dbgen"
)

// ErrNotFound is what every lookup of a missing row returns (pgx.ErrNoRows mapped once).
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a unique constraint rejects a row (a duplicate name, say).
var ErrConflict = errors.New("already exists")

// ErrStale is returned when an optimistic version check fails.
var ErrStale = errors.New("stale version")

// Store wraps the pool and the generated queries.
type Store struct {
	Pool *pgxpool.Pool
	Q    *dbgen.Queries
}

// New wraps an existing pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{Pool: pool, Q: dbgen.New(pool)}
}

// Option adjusts how the pool connects.
type Option func(*pgxpool.Config)

// WithQueryTracer traces the pool's statements with t (nil: untraced, as by default); the
// binary passes the OpenTelemetry tracer when tracing is on (internal/telemetry).
func WithQueryTracer(t pgx.QueryTracer) Option {
	return func(cfg *pgxpool.Config) {
		if t != nil {
			cfg.ConnConfig.Tracer = t
		}
	}
}

// Open connects to databaseURL, retrying with backoff until ctx ends, so a worker started
// before PostgreSQL is up waits for it instead of exiting.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	cfg, err := poolConfig(databaseURL, opts...)
	if err != nil {
		return nil, err
	}
	var st *Store
	err = readiness.Retry(ctx, readiness.DefaultBackoff, func(ctx context.Context) error {
		pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err = connect(pingCtx, cfg)
		return err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	return st, nil
}

// Connect makes one attempt to connect to databaseURL: the pool is returned only once
// PostgreSQL answered a ping. Callers that wait with their own backoff use it.
func Connect(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	cfg, err := poolConfig(databaseURL, opts...)
	if err != nil {
		return nil, err
	}
	return connect(ctx, cfg)
}

func poolConfig(databaseURL string, opts ...Option) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	withNetworkTimeouts(cfg, func(key string) bool { return urlSets(databaseURL, key) })
	for _, o := range opts {
		o(cfg)
	}
	// The caller's tracer (WithQueryTracer) is wrapped, not replaced: the watch needs
	// the pool's releases and failed connects to see a link break.
	newLinkWatch(cfg.ConnConfig.Tracer).install(cfg)
	return cfg, nil
}

func connect(ctx context.Context, cfg *pgxpool.Config) (*Store, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	return New(pool), nil
}

// Close closes the pool.
func (s *Store) Close() { s.Pool.Close() }

// Migrate applies the embedded migrations; running it again is a no-op. A session-level
// advisory lock serialises concurrent starters (a worker and an API starting together).
func Migrate(ctx context.Context, databaseURL string) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	return migrateDB(ctx, db)
}

func migrateDB(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close()
	const lockKey = 0x7469636b67617465 // "tickgate"
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey) //nolint:errcheck
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("migrate: up: %w", err)
	}
	return nil
}

// InTx runs fn in one transaction, committing when it returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx, q *dbgen.Queries) error) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		return fn(tx, s.Q.WithTx(tx))
	})
}

// mapErr turns driver errors into the store's sentinel errors.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%w: %s", ErrConflict, pgErr.ConstraintName)
	}
	return err
}

// int4 is n as a PostgreSQL integer parameter (a LIMIT, a count): n itself whenever it fits,
// and int32's nearest bound beyond, where a conversion would wrap around.
func int4[N ~int | ~int64](n N) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// texts turns typed vocabulary values into the text[] a query's array parameter takes.
func texts[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// InstallID names this database's installation: when its first migration was applied
// (goose_db_version), a value no other tickgate database shares unless cloned from it. Ids
// derived from row ids (a device execution's trace, internal/telemetry) are scoped by it,
// so a reset database or another deployment does not reuse them.
func (s *Store) InstallID(ctx context.Context) (string, error) {
	var id string
	if err := s.Pool.QueryRow(ctx, `SELECT COALESCE(min(tstamp)::text, '') FROM goose_db_version`).Scan(&id); err != nil {
		return "", fmt.Errorf("install id: %w", err)
	}
	return id, nil
}
