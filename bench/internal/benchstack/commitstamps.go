package benchstack

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// enableCommitTimestamps sets track_commit_timestamp, which takes a restart; a cluster that
// has it already (the data directory is kept between runs) is left as it is.
func enableCommitTimestamps(ctx context.Context, pg *devstack.Postgres) error {
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return fmt.Errorf("commit timestamps: connect: %w", err)
	}
	var on string
	if err := conn.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&on); err != nil {
		conn.Close(ctx)
		return fmt.Errorf("commit timestamps: read setting: %w", err)
	}
	if on == "on" {
		conn.Close(ctx)
		return nil
	}
	_, err = conn.Exec(ctx, "ALTER SYSTEM SET track_commit_timestamp = on")
	conn.Close(ctx)
	if err != nil {
		return fmt.Errorf("commit timestamps: set: %w", err)
	}
	if err := pg.Stop(); err != nil {
		return fmt.Errorf("commit timestamps: restart: %w", err)
	}
	if err := pg.Start(ctx); err != nil {
		return fmt.Errorf("commit timestamps: restart: %w", err)
	}
	return nil
}
