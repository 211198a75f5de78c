package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tickgate/tickgate/internal/dev/chaos/histories"
)

// The external rollout: tasks whose work another service does (executor external), which
// the rollout claims and then waits for a result on (POST /task-runs/{id}/result). Two
// executors run here as that service: each lists the tasks, and reports a result for every
// task it sees claimed — the first for all of them, the second for every third one too, at
// about the same time, so that two results race for one task. Every listing is a read of
// each task in it. The history goes to histories.TaskModel.

// externalRolloutRequest is ExternalTasks DML tasks over five databases, one version.
func externalRolloutRequest(p Profile) map[string]any {
	tasks := make([]map[string]any, 0, p.ExternalTasks)
	for i := 0; i < p.ExternalTasks; i++ {
		tasks = append(tasks, map[string]any{
			"database": fmt.Sprintf("chaos_ext_%d", i%5), "type": "DML", "version": "1.0",
			"executor": "external", "payload": map[string]any{"task": i},
		})
	}
	return map[string]any{"name": "chaos-external", "parallel_limit": 10, "tasks": tasks}
}

// taskRow is the part of a task run the executors read.
type taskRow struct {
	ID        int64          `json:"id"`
	Status    string         `json:"status"`
	Output    map[string]any `json:"output"`
	StartedAt *time.Time     `json:"started_at"`
}

// externalExecutors runs the two executors until ctx ends.
type externalExecutors struct {
	c         *recordingClient
	h         *history
	rolloutID int64
}

func (x *externalExecutors) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, ex := range []struct {
		name  string
		every int
	}{{"executor-a", 1}, {"executor-b", 3}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answered := map[int64]bool{} // tasks this executor's result was definitely answered for
			for ctx.Err() == nil {
				rows := x.read(ctx, ex.name)
				if len(rows) > 0 && allFinal(rows) {
					return // nothing left to report: the final read at the end sees the outcomes again
				}
				for _, t := range rows {
					if answered[t.ID] || t.ID%int64(ex.every) != 0 || (t.Status != "AVAILABLE" && t.Status != "RUNNING") {
						continue
					}
					if x.report(ctx, ex.name, t.ID) {
						answered[t.ID] = true
					}
				}
				sleepCtx(ctx, 700*time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

func allFinal(rows []taskRow) bool {
	for _, t := range rows {
		switch t.Status {
		case "DONE", "FAILED", "CANCELED", "SKIPPED":
		default:
			return false
		}
	}
	return true
}

// read lists the rollout's tasks and records a read of each.
func (x *externalExecutors) read(ctx context.Context, client string) []taskRow {
	rows, code, began, ended := list[taskRow](ctx, x.c, fmt.Sprintf("/rollouts/%d/tasks", x.rolloutID))
	if code != http.StatusOK {
		return nil
	}
	for _, t := range rows {
		out := histories.TaskOut{Code: code, Status: t.Status}
		if by, ok := t.Output["by"].(string); ok {
			out.By = by
		}
		if t.StartedAt != nil {
			out.StartedAt = t.StartedAt.UTC().Format(time.RFC3339Nano)
		}
		x.h.add(client, histories.TaskOp{Kind: histories.TaskRead, Task: t.ID, Client: client}, out, began, ended, true)
	}
	return rows
}

// report sends this executor's result for task id (its output names the executor) and
// records it; it answers whether an answer came.
func (x *externalExecutors) report(ctx context.Context, client string, id int64) bool {
	by := client + "/" + strconv.FormatInt(id, 10)
	body := map[string]any{"status": "DONE", "output": map[string]any{"by": by}}
	code, began, ended := x.c.call(ctx, http.MethodPost, fmt.Sprintf("/task-runs/%d/result", id), x.c.requestID("result"), body, nil)
	x.h.add(client, histories.TaskOp{Kind: histories.TaskResult, Task: id, Result: by, Client: client}, histories.TaskOut{Code: code}, began, ended, code != 0)
	return code != 0
}
