package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tickgate/tickgate/internal/dev/agentsim"
	"github.com/tickgate/tickgate/internal/dev/chaos/histories"
)

// historyTimeout bounds porcupine's search on one history.
const historyTimeout = 3 * time.Minute

// checkHistories checks the run's three client-side histories for linearizability: the
// agents' (each simulator's file, with the server's timeouts of attempts from
// task_device_events), the command schedules' and the external rollout's. A history that
// fails is drawn into dir.
func checkHistories(ctx context.Context, s *stack, pool *pgxpool.Pool, commands, tasks *history, dir string) ([]histories.Result, error) {
	var events []agentsim.HistoryEvent
	for _, a := range s.agents {
		e, err := agentsim.ReadHistory(s.agentHistory(a.name))
		if err != nil {
			return nil, err
		}
		events = append(events, e...)
	}
	rows, err := pool.Query(ctx, `SELECT task_device_id, attempt, created_at FROM task_device_events WHERE type = 'TIMEOUT'`)
	if err != nil {
		return nil, fmt.Errorf("chaos: timeouts: %w", err)
	}
	timeouts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (histories.ServerTimeout, error) {
		var t histories.ServerTimeout
		err := r.Scan(&t.Exec, &t.Attempt, &t.At)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: timeouts: %w", err)
	}
	end := time.Now()
	checks := []struct {
		name  string
		model porcupine.Model
		ops   []porcupine.Operation
	}{
		{"device executions", histories.DeviceModel.ToModel(), histories.DeviceOps(events, timeouts, end)},
		{"schedule commands", histories.ScheduleModel.ToModel(), commands.operations(end)},
		{"rollout tasks", histories.TaskModel.ToModel(), tasks.operations(end)},
	}
	var out []histories.Result
	for _, c := range checks {
		r, err := histories.Check(c.name, c.model, c.ops, dir, historyTimeout)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}
