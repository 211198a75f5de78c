package benchstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// enableCommitTimestamps sets track_commit_timestamp, which takes a restart; a cluster that
// has it already (the data directory is kept between runs) is left as it is.
func enableCommitTimestamps(ctx context.Context, pg *devstack.Postgres) error {
	return restartWith(ctx, pg, "track_commit_timestamp", func(v string) (string, bool) { return "on", v == "on" })
}

// restartWith sets a server setting that takes a restart: want maps its current value to
// the one wanted and whether it is there already (then nothing is done).
func restartWith(ctx context.Context, pg *devstack.Postgres, setting string, want func(string) (string, bool)) error {
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return fmt.Errorf("%s: connect: %w", setting, err)
	}
	var cur string
	if err := conn.QueryRow(ctx, "SHOW "+setting).Scan(&cur); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("%s: read: %w", setting, err)
	}
	value, ok := want(cur)
	if ok {
		_ = conn.Close(ctx)
		return nil
	}
	_, err = conn.Exec(ctx, "ALTER SYSTEM SET "+setting+" = '"+strings.ReplaceAll(value, "'", "''")+"'")
	_ = conn.Close(ctx)
	if err != nil {
		return fmt.Errorf("%s: set: %w", setting, err)
	}
	if err := pg.Stop(); err != nil {
		return fmt.Errorf("%s: restart: %w", setting, err)
	}
	if err := pg.Start(ctx); err != nil {
		return fmt.Errorf("%s: restart: %w", setting, err)
	}
	return nil
}
