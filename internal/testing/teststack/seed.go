package teststack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// SeedSchedules inserts n event schedules named prefix-00001 … straight into the
// database in one statement (no workflow is started: use it on a stack without workers), for
// tests of lists at scale. Every pausedEvery-th one is paused (0: none).
func (s *Stack) SeedSchedules(t testing.TB, prefix string, n, pausedEvery int) {
	t.Helper()
	_, err := s.Store.Pool.Exec(context.Background(), `
		INSERT INTO schedules (name, spec, action, paused, pause_note, next_run_at)
		SELECT $1 || '-' || lpad(i::text, 5, '0'), '{"interval":{"every":1,"unit":"HOURS"},"timezone":"UTC","start_at":"2026-01-01T00:00:00Z"}',
		       '{"kind":"event","topic":"seed","type":"tick"}',
		       $3 > 0 AND i % $3 = 0, CASE WHEN $3 > 0 AND i % $3 = 0 THEN 'seeded paused' ELSE '' END,
		       CASE WHEN $3 > 0 AND i % $3 = 0 THEN NULL ELSE date_trunc('hour', now()) + interval '1 hour' END
		FROM generate_series(1, $2::int) AS i`, prefix, n, pausedEvery)
	require.NoError(t, err)
	_, err = s.Store.Pool.Exec(context.Background(), `ANALYZE schedules`)
	require.NoError(t, err)
}
