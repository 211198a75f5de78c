package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// The group commit and the single-request path take the same steps (migrations/
// 00092_device_steps.sql): the same successes, reported to two identical farms, one as one
// group-commit batch and the other one request at a time (a result, then a claim for the
// PCs whose agents asked for their next executions), leave the same executions, events and
// devices. The three PCs cover a freed slot refilled and handed out at once (pa), refilled
// and left waiting, or not refilled for want of a device (pb), and a PC with nothing left
// (pc); one attempt was acknowledged first.
func TestDevicesGroupCommitAndSinglePathLeaveTheSameRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type report struct {
		pc        string
		claimNext bool
	}
	farm := func(st *store.Store) map[string][]store.ClaimedCommand {
		devFarm(t, st, "pa", 2, 4)
		devFarm(t, st, "pb", 2, 3)
		devFarm(t, st, "pc", 2, 2)
		activate(t, st, store.NewDeviceTask{})
		out := map[string][]store.ClaimedCommand{}
		for _, pc := range []string{"pa", "pb", "pc"} {
			out[pc] = claimed(t, st, pc, 2)
			require.Len(t, out[pc], 2)
		}
		_, err := st.Ack(ctx, out["pb"][1].ID, nil)
		require.NoError(t, err)
		return out
	}
	reports := []report{{"pa", true}, {"pa", true}, {"pb", false}, {"pb", false}, {"pc", true}, {"pc", true}}

	grouped := testenv.Store(t)
	cmds := farm(grouped)
	var batch []store.SuccessReport
	seen := map[string]int{}
	for _, r := range reports {
		c := cmds[r.pc][seen[r.pc]]
		seen[r.pc]++
		batch = append(batch, success(c, r.claimNext))
	}
	answers, err := grouped.RecordSuccesses(ctx, batch)
	require.NoError(t, err)
	for i, a := range answers {
		require.Equal(t, domain.SuccessRecorded, a.Verdict, "report %d", i)
	}
	require.NotNil(t, answers[0].Next, "pa's freed slots were refilled and handed out")
	require.Nil(t, answers[4].Next, "pc has no device left")

	single := testenv.Store(t)
	cmds = farm(single)
	seen = map[string]int{}
	asked := map[string]bool{}
	for _, r := range reports {
		c := cmds[r.pc][seen[r.pc]]
		seen[r.pc]++
		_, err := single.ReportResult(ctx, c.ID, store.Result{Succeeded: true, Attempt: &c.Attempt})
		require.NoError(t, err)
		asked[r.pc] = asked[r.pc] || r.claimNext
	}
	for _, pc := range []string{"pa", "pb", "pc"} {
		if asked[pc] {
			claimed(t, single, pc, 10)
		}
	}

	want := deviceState(t, grouped)
	require.Equal(t, want, deviceState(t, single))
	require.Contains(t, want, "pa-d02 task 1 slot 1 SENT attempt 1/3 sent deadline=20m0s [CREATED#1 SENT#1]")
	require.Contains(t, want, "pb-d02 task 1 slot 1 CREATED attempt 1/3 [CREATED#1]")
	require.Contains(t, want, "pb-d01 task 1 slot 2 SUCCEEDED attempt 1/3 sent acked completed deadline=20m0s [CREATED#1 SENT#1 ACKED#1 SUCCEEDED#1]")
}

// deviceState is every execution (by device, with its events), and every device's
// status and last task, in a form two databases can be compared by: no ids, no times
// (only whether each was stamped, and the deadline's distance from the send).
func deviceState(t *testing.T, st *store.Store) []string {
	t.Helper()
	rows, err := st.Pool.Query(context.Background(), `
		SELECT d.serial, td.task_id, coalesce(td.slot, 0), td.status, td.attempt, td.max_attempts, td.error,
		       td.sent_at IS NOT NULL, td.acked_at IS NOT NULL, td.completed_at IS NOT NULL,
		       coalesce((td.timeout_at - td.sent_at)::text, ''),
		       (SELECT string_agg(e.type || '#' || e.attempt || CASE WHEN e.detail <> '' THEN ':' || e.detail ELSE '' END, ' ' ORDER BY e.id)
		        FROM task_device_events e WHERE e.task_device_id = td.id)
		FROM task_devices td JOIN devices d ON d.id = td.device_id
		ORDER BY d.serial, td.task_id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var serial, status, errText, deadline, events string
		var task int64
		var slot, attempt, maxAttempts int32
		var sent, acked, completed bool
		require.NoError(t, rows.Scan(&serial, &task, &slot, &status, &attempt, &maxAttempts, &errText, &sent, &acked, &completed, &deadline, &events))
		line := fmt.Sprintf("%s task %d slot %d %s attempt %d/%d", serial, task, slot, status, attempt, maxAttempts)
		for _, f := range []struct {
			on   bool
			name string
		}{{sent, "sent"}, {acked, "acked"}, {completed, "completed"}} {
			if f.on {
				line += " " + f.name
			}
		}
		if deadline != "" {
			d, err := parsePGInterval(deadline)
			require.NoError(t, err)
			line += " deadline=" + d
		}
		if errText != "" {
			line += " error=" + errText
		}
		out = append(out, line+" ["+events+"]")
	}
	require.NoError(t, rows.Err())
	devs, err := st.Pool.Query(context.Background(), `SELECT serial, status, coalesce(last_task_id, 0), in_use FROM devices ORDER BY serial`)
	require.NoError(t, err)
	defer devs.Close()
	for devs.Next() {
		var serial, status string
		var last int64
		var inUse bool
		require.NoError(t, devs.Scan(&serial, &status, &last, &inUse))
		out = append(out, fmt.Sprintf("device %s %s last task %d in use %t", serial, status, last, inUse))
	}
	require.NoError(t, devs.Err())
	return out
}

// parsePGInterval reads an interval PostgreSQL printed as hh:mm:ss as a Go duration.
func parsePGInterval(s string) (string, error) {
	var h, m, sec int
	if _, err := fmt.Sscanf(s, "%d:%d:%d", &h, &m, &sec); err != nil {
		return "", fmt.Errorf("interval %q: %w", s, err)
	}
	return (time.Duration(h*3600+m*60+sec) * time.Second).String(), nil
}
