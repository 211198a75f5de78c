package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
	"github.com/tickgate/tickgate/internal/dev/agentsim"
)

// baselineResult is what the same agents saw against the alternative.
type baselineResult struct {
	executions     int64
	elapsed        time.Duration
	result, refill []time.Duration
	statements     []statementCount
	cpu            benchstack.CPUSnapshot
	// The run split into steady state and task switches (phases.go).
	phases            phases
	steady, switching phaseFigures
	steadyCPU         benchstack.CPUSnapshot
}

// runBaseline runs the same fleet (agentsim, the same PCs, capacity, latency and observer)
// against the design a user would otherwise pick: seed 003's plain queue. One task_devices
// table; an agent's claim is one statement taking the PC's free slots (capacity minus its
// running rows) from the active task's pending rows (FOR UPDATE SKIP LOCKED), and a result
// is one UPDATE. Nothing else: no workflow, no dispatcher, no timeout or retry bookkeeping,
// so it is the floor of what a queue on the same PostgreSQL costs, not a like-for-like
// product.
func runBaseline(ctx context.Context, stack *benchstack.Stack, pool *pgxpool.Pool, stmts *statementCounter, pcs []string, tasks int) (baselineResult, error) {
	var res baselineResult
	if _, err := pool.Exec(ctx, `
		CREATE TABLE baseline_task_devices (
			id bigserial PRIMARY KEY, task int NOT NULL, pc text NOT NULL, device text NOT NULL,
			status text NOT NULL DEFAULT 'pending');
		CREATE INDEX ON baseline_task_devices (pc, status, task, id);
		-- The active task is the smallest unfinished one: read from an index, as a user would.
		CREATE INDEX ON baseline_task_devices (task) WHERE status <> 'done';`); err != nil {
		return res, fmt.Errorf("baseline: create table: %w", err)
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO baseline_task_devices (task, pc, device)
		SELECT t, pc, pc || '-dev-' || lpad(d::text, 2, '0')
		FROM generate_series(0, $1 - 1) t, unnest($2::text[]) pc, generate_series(0, $3 - 1) d
		ORDER BY t, pc, d`, tasks, pcs, *flagDevices); err != nil {
		return res, fmt.Errorf("baseline: insert: %w", err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/pcs/{pc}/claim", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Max int `json:"max"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		pc := r.PathValue("pc")
		rows, err := pool.Query(r.Context(), `
			WITH active AS (SELECT min(task) AS task FROM baseline_task_devices WHERE status <> 'done'),
			free AS (SELECT greatest(0, $2 - count(*)) AS n FROM baseline_task_devices WHERE pc = $1 AND status = 'running'),
			picked AS (
				SELECT b.id FROM baseline_task_devices b, active
				WHERE b.pc = $1 AND b.status = 'pending' AND b.task = active.task
				ORDER BY b.id LIMIT (SELECT n FROM free) FOR UPDATE OF b SKIP LOCKED)
			UPDATE baseline_task_devices b SET status = 'running' FROM picked WHERE b.id = picked.id
			RETURNING b.id, b.task, b.device`, pc, req.Max)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer rows.Close()
		items := []agentsim.Command{}
		for rows.Next() {
			c := agentsim.Command{PC: pc, Attempt: 1, Payload: json.RawMessage(`{}`)}
			if err := rows.Scan(&c.ID, &c.TaskID, &c.Device); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			items = append(items, c)
		}
		if err := rows.Err(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
	})
	mux.HandleFunc("POST /agent/task-devices/{id}/result", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		tag, err := pool.Exec(r.Context(), `UPDATE baseline_task_devices SET status = 'done' WHERE id = $1 AND status = 'running'`, id)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case tag.RowsAffected() == 0:
			w.WriteHeader(http.StatusConflict)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	obs := newObserver()
	runCtx, cancel := context.WithTimeout(ctx, *flagTimeout)
	defer cancel()
	if err := stmts.reset(ctx); err != nil {
		return res, err
	}
	stopCPU := sampleCPU(stack, cpuEvery)
	start := time.Now()
	fleet := agentsim.Start(runCtx, agentsim.Options{
		// The plain queue knows only the older shapes: claims that do not wait, results
		// answered without the next command.
		BaseURL: srv.URL, PCs: pcs, Max: *flagCapacity, Latency: *flagLatency, Legacy: true,
		OnClaimed: obs.claimed, OnAnswering: obs.answering, OnAnswered: obs.answered,
		HTTPClient: obs.httpClient(), Logf: func(string, ...any) {},
	})
	for {
		var open int64
		if err := stmts.observer.QueryRow(ctx, `SELECT count(*) FROM baseline_task_devices WHERE status <> 'done'`).Scan(&open); err != nil {
			cancel()
			fleet.Wait()
			_, _ = stopCPU()
			return res, err
		}
		if open == 0 {
			break
		}
		select {
		case <-runCtx.Done():
			fleet.Wait()
			_, _ = stopCPU()
			return res, fmt.Errorf("baseline: timed out with %d executions open", open)
		case <-time.After(endPoll):
		}
	}
	end := time.Now()
	res.elapsed = end.Sub(start)
	samples, err := stopCPU()
	if err != nil {
		cancel()
		fleet.Wait()
		return res, err
	}
	res.cpu = samples[len(samples)-1].cpu.Sub(samples[0].cpu)
	if res.statements, err = stmts.counts(ctx); err != nil {
		cancel()
		fleet.Wait()
		return res, err
	}
	cancel()
	fleet.Wait()
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM baseline_task_devices`).Scan(&res.executions); err != nil {
		return res, err
	}
	res.result = obs.resultLatencies()
	res.refill, _ = obs.refillLatencies(*flagCapacity)
	res.phases = obs.phases(start, end, *flagCapacity)
	res.steady, res.switching = obs.within(res.phases.steady, *flagCapacity), obs.within(res.phases.switches, *flagCapacity)
	res.steadyCPU = cpuWithin(samples, res.phases.steady)
	return res, nil
}
