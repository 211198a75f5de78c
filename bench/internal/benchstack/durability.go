package benchstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tickgate/tickgate/internal/dev/devstack"
)

// durabilitySettings decide whether a commit waits for its WAL to reach the disk, and
// whether a crash of the machine could tear a page: make dev turns all three off; a
// production server, and a bench run with Options.Durable, has them on.
var durabilitySettings = []string{"fsync", "synchronous_commit", "full_page_writes"}

// readDurability reads durabilitySettings from the running cluster, as "fsync=on …".
func readDurability(ctx context.Context, pg *devstack.Postgres) (string, error) {
	conn, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("durability settings: connect: %w", err)
	}
	defer conn.Close(ctx)
	var parts []string
	for _, name := range durabilitySettings {
		var v string
		if err := conn.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			return "", fmt.Errorf("durability settings: %s: %w", name, err)
		}
		parts = append(parts, name+"="+v)
	}
	return strings.Join(parts, " "), nil
}

// wantDurability is what readDurability reads on a cluster started with pg's settings.
func wantDurability(pg *devstack.Postgres) string {
	on := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("fsync=%s synchronous_commit=%s full_page_writes=%s", on(pg.Durable), on(pg.Durable || pg.CrashSafe), on(pg.Durable))
}

// ensureDurability restarts a cluster whose settings are not pg's (one an earlier run left
// running with other settings: Start reuses a running cluster as it is), and returns the
// settings it runs with.
func ensureDurability(ctx context.Context, pg *devstack.Postgres) (string, error) {
	got, err := readDurability(ctx, pg)
	if err != nil {
		return "", err
	}
	if got == wantDurability(pg) {
		return got, nil
	}
	if err := pg.Stop(); err != nil {
		return "", fmt.Errorf("durability settings: restart: %w", err)
	}
	if err := pg.Start(ctx); err != nil {
		return "", fmt.Errorf("durability settings: restart: %w", err)
	}
	if got, err = readDurability(ctx, pg); err != nil {
		return "", err
	}
	if got != wantDurability(pg) {
		return "", fmt.Errorf("durability settings: the cluster runs with %s, not %s", got, wantDurability(pg))
	}
	return got, nil
}
