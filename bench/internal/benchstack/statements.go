package benchstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// enableStatementStats loads pg_stat_statements (shared_preload_libraries, which takes a
// restart), so a bench can count the statements tickgate sends; a cluster that loads it
// already (the data directory is kept between runs) is left as it is. It counts, it does
// not change what a statement does. With its defaults it counts top-level statements only,
// utility ones (BEGIN, COMMIT) included.
func enableStatementStats(ctx context.Context, pg *devstack.Postgres) error {
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return fmt.Errorf("statement stats: connect: %w", err)
	}
	var libs string
	if err := conn.QueryRow(ctx, "SHOW shared_preload_libraries").Scan(&libs); err != nil {
		conn.Close(ctx)
		return fmt.Errorf("statement stats: read setting: %w", err)
	}
	if strings.Contains(libs, "pg_stat_statements") {
		conn.Close(ctx)
		return nil
	}
	if libs != "" {
		libs += ","
	}
	_, err = conn.Exec(ctx, "ALTER SYSTEM SET shared_preload_libraries = '"+strings.ReplaceAll(libs+"pg_stat_statements", "'", "''")+"'")
	conn.Close(ctx)
	if err != nil {
		return fmt.Errorf("statement stats: set: %w", err)
	}
	if err := pg.Stop(); err != nil {
		return fmt.Errorf("statement stats: restart: %w", err)
	}
	if err := pg.Start(ctx); err != nil {
		return fmt.Errorf("statement stats: restart: %w", err)
	}
	return nil
}
