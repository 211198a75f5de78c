package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/metrics"
)

// TestSQLCollector: fire lateness is an exact "le" histogram of schedule_runs, runs and task
// runs are counted by status (every status, 0 included: an alert sees the first MISSED
// tick), slots are reported per PC, and the engine's health (store.ReadEngineHealth, whose
// figures the store's tests move) under the names the alerts watch.
func TestSQLCollector(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	_, err := st.Pool.Exec(ctx, `INSERT INTO schedules (name, spec, action) VALUES ('s', '{"interval":"1h"}', '{"kind":"event"}')`)
	require.NoError(t, err)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Lateness 0.01 s exactly (on a bound: counts in le=0.01), 0.2 s, 3 s; one SKIPPED run (no fire).
	for i, late := range []time.Duration{10 * time.Millisecond, 200 * time.Millisecond, 3 * time.Second} {
		at := base.Add(time.Duration(i) * time.Hour)
		_, err := st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, finished_at)
			SELECT id, $1::timestamptz, $2::timestamptz, 'scheduled', 'SUCCEEDED', $3, $2::timestamptz FROM schedules`, at, at.Add(late), "k"+at.String())
		require.NoError(t, err)
	}
	_, err = st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, trigger, status, reason, idempotency_key, finished_at)
		SELECT id, $1::timestamptz, 'scheduled', 'SKIPPED', 'overlap', 'skip-1', $1::timestamptz FROM schedules`, base.Add(5*time.Hour))
	require.NoError(t, err)
	// The record of a retracted armed fire: hidden by the API, not counted either.
	_, err = st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, trigger, status, reason, idempotency_key, workflow_id, finished_at, retracted_at)
		SELECT id, $1::timestamptz, 'scheduled', 'SKIPPED', 'retracted before its tick', 'k/retracted/1', 'w', $1::timestamptz, $1::timestamptz FROM schedules`, base.Add(6*time.Hour))
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO pcs (name, device_capacity) VALUES ('pc-a', 3);
		INSERT INTO devices (pc_id, serial) SELECT id, 'd' || g FROM pcs, generate_series(1, 5) g`)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(&metrics.SQLCollector{Store: st})
	h := latenessHistogram(t, reg)
	require.EqualValues(t, 3, h.GetSampleCount())
	require.InDelta(t, 3.21, h.GetSampleSum(), 1e-9)
	want := map[float64]uint64{0.01: 1, 0.025: 1, 0.1: 1, 0.25: 2, 2.5: 2, 5: 3, 60: 3}
	for _, b := range h.GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok {
			require.Equal(t, w, b.GetCumulativeCount(), "le=%g", b.GetUpperBound())
		}
	}
	require.Equal(t, 1, testutil.CollectAndCount(&metrics.SQLCollector{Store: st}, "tickgate_device_slots_target"))
	lint, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, lint)
	require.NoError(t, testutil.GatherAndCompare(reg, stringsReader(`
# HELP tickgate_device_slots_busy Device slots in use per PC (task_devices holding a slot).
# TYPE tickgate_device_slots_busy gauge
tickgate_device_slots_busy{pc="pc-a"} 0
# HELP tickgate_device_slots_target Device slots a PC should keep busy: min(capacity, eligible devices).
# TYPE tickgate_device_slots_target gauge
tickgate_device_slots_target{pc="pc-a"} 3
# HELP tickgate_devices Devices by status (online, offline, error).
# TYPE tickgate_devices gauge
tickgate_devices{status="error"} 0
tickgate_devices{status="offline"} 0
tickgate_devices{status="online"} 5
# HELP tickgate_device_timeouts_total Device execution attempts that timed out (TIMEOUT events).
# TYPE tickgate_device_timeouts_total counter
tickgate_device_timeouts_total 0
# HELP tickgate_schedule_dead_letter_runs Runs in the dead letter: the FAILED runs of http and workflow actions (a redrive takes one out).
# TYPE tickgate_schedule_dead_letter_runs gauge
tickgate_schedule_dead_letter_runs 0
# HELP tickgate_schedule_runs Schedule runs by status (SKIPPED and MISSED included).
# TYPE tickgate_schedule_runs gauge
tickgate_schedule_runs{status="BUFFERED"} 0
tickgate_schedule_runs{status="CANCELED"} 0
tickgate_schedule_runs{status="FAILED"} 0
tickgate_schedule_runs{status="MISSED"} 0
tickgate_schedule_runs{status="RUNNING"} 0
tickgate_schedule_runs{status="SKIPPED"} 1
tickgate_schedule_runs{status="SUCCEEDED"} 3
tickgate_schedule_runs{status="TERMINATED"} 0
# HELP tickgate_workers_alive Worker processes alive: beating in worker_liveness within the liveness grace (15 s).
# TYPE tickgate_workers_alive gauge
tickgate_workers_alive 0
`), "tickgate_device_slots_busy", "tickgate_device_slots_target", "tickgate_schedule_runs", "tickgate_devices", "tickgate_device_timeouts_total",
		"tickgate_schedule_dead_letter_runs", "tickgate_workers_alive"))
}

// TestSQLLatenessCoversTheLatestFires: the lateness histogram reads only the latest
// LatenessWindow fires, so a scrape costs the same however many runs are recorded.
func TestSQLLatenessCoversTheLatestFires(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	_, err := st.Pool.Exec(ctx, `INSERT INTO schedules (name, spec, action) VALUES ('s', '{"interval":"1s"}', '{"kind":"event"}')`)
	require.NoError(t, err)
	// 100 old fires 1 minute late, then a full window of fires 1 ms late.
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = st.Pool.Exec(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, finished_at)
		SELECT s.id, $1::timestamptz + g * interval '1 second',
		       $1::timestamptz + g * interval '1 second' + CASE WHEN g <= 100 THEN interval '1 minute' ELSE interval '1 millisecond' END,
		       'scheduled', 'SUCCEEDED', 'k' || g, $1::timestamptz + g * interval '1 second' + interval '2 minutes'
		FROM schedules s, generate_series(1, 100 + $2::int) g ORDER BY g`, base, metrics.LatenessWindow)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(&metrics.SQLCollector{Store: st})
	h := latenessHistogram(t, reg)
	require.EqualValues(t, metrics.LatenessWindow, h.GetSampleCount())
	require.InDelta(t, 0.001*metrics.LatenessWindow, h.GetSampleSum(), 1e-6, "the 100 older, later fires are outside the window")
}

// latenessHistogram gathers reg and returns the fire-lateness histogram.
func latenessHistogram(t *testing.T, reg *prometheus.Registry) *dto.Histogram {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "tickgate_schedule_fire_lateness_seconds" {
			return f.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatal("no lateness histogram gathered")
	return nil
}
