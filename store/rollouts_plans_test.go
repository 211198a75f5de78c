package store_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/store/dbgen"
)

// The promotion round and the claim keep their plan whatever PostgreSQL's statistics say
// (bench/README.md, "Plans that do not depend on luck"): on a task_runs never analysed
// since its rollout was inserted, and on one analysed when it held only finished tasks
// (the statistics then say no task is PENDING), the gates read the live tasks in one
// ordered pass of task_runs_active, join only by hashing, and look each rollout up once by
// its key; the claim reads task_runs_available in its order and finds the rows it updates
// by their ids. The plans are read with auto_explain as the statements run. Shapes only,
// no timings.
func TestPromotionPlansDoNotDependOnStatistics(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		t.Run(map[bool]string{false: "unanalysed", true: "stale statistics"}[stale], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := testenv.DatabaseURL(t)
			st, err := store.Open(ctx, url)
			require.NoError(t, err)
			defer st.Close()
			_, err = st.Pool.Exec(ctx, `ALTER TABLE task_runs SET (autovacuum_enabled = false);
				ALTER TABLE rollouts SET (autovacuum_enabled = false)`)
			require.NoError(t, err)
			if stale {
				// Statistics taken when the table held finished tasks only.
				old, err := st.CreateRollout(ctx, "history", 10, []store.NewTaskRun{task("old", "DML", "1")})
				require.NoError(t, err)
				_, err = st.Pool.Exec(ctx, `INSERT INTO task_runs (rollout_id, database, type, version, version_key, executor, status, finished_at)
					SELECT $1, 'old' || (i % 50), 'DML', '1', '1', 'noop', 'DONE', now() FROM generate_series(1, 2000) i`, old.ID)
				require.NoError(t, err)
				_, err = st.Pool.Exec(ctx, `DELETE FROM task_runs WHERE rollout_id = $1 AND status = 'PENDING'`, old.ID)
				require.NoError(t, err)
				_, err = st.Pool.Exec(ctx, `ANALYZE task_runs; ANALYZE rollouts`)
				require.NoError(t, err)
			}
			var tasks []store.NewTaskRun
			for db := 0; db < 200; db++ {
				for v := 1; v <= 10; v++ {
					typ := "DML"
					if (db+v)%2 == 0 {
						typ = "DDL"
					}
					tasks = append(tasks, task(fmt.Sprintf("db%03d", db), typ, strconv.Itoa(v)))
				}
			}
			r, err := st.CreateRollout(ctx, "plans", 100, tasks)
			require.NoError(t, err)
			// The first round (as the promoter runs it): tasks AVAILABLE to claim, causes written.
			_, err = st.PromoteRound(ctx)
			require.NoError(t, err)

			plans := explainer(t, url)
			check := func(name string, run func(q *dbgen.Queries) error) string {
				t.Helper()
				plan := plans.run(t, run)
				require.NotContains(t, plan, "Seq Scan on task_runs", "%s: no sequential read of task_runs:\n%s", name, plan)
				return plan
			}
			for _, full := range []bool{true, false} {
				name := map[bool]string{true: "PromoteTasks", false: "PromoteHeads"}[full]
				plan := check(name, func(q *dbgen.Queries) error {
					if full {
						_, err := q.PromoteTasks(ctx, nil)
						return err
					}
					_, err := q.PromoteHeads(ctx, nil)
					return err
				})
				gates := plans.statement(t, plan, "WITH ordered AS MATERIALIZED")
				require.NotContains(t, gates, "Nested Loop", "%s: the gates join by hashing only:\n%s", name, gates)
				require.Contains(t, gates, "Index Scan using task_runs_active on task_runs", "%s: the live tasks in one ordered pass:\n%s", name, gates)
				require.Equal(t, 1, maxLoops(gates), "%s: no part of the gates runs once per task (one rollout):\n%s", name, gates)
			}
			plan := check("ClaimTasks", func(q *dbgen.Queries) error {
				_, err := q.ClaimTasks(ctx, dbgen.ClaimTasksParams{RolloutID: r.ID, MaxRows: 50})
				return err
			})
			require.Regexp(t, `Index Scan using task_runs_available on task_runs a .*\n\s+Index Cond: \(rollout_id = `, plan,
				"the claim reads the rollout's AVAILABLE tasks in their order")
			require.Regexp(t, `Index Scan (using|on) task_runs_pkey .*\n\s+Index Cond: \(id = ANY `, plan,
				"the claim finds the rows it updates by their ids")
			require.Contains(t, plan, "(actual rows=50 loops=1)", "it claimed")
		})
	}
}

// explainer runs statements on a connection of its own with auto_explain logging every
// plan (nested ones too, with ANALYZE) back to the client as notices.
type planLog struct {
	conn *pgx.Conn
	mu   sync.Mutex
	got  []string
}

func explainer(t *testing.T, url string) *planLog {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	p := &planLog{}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.got = append(p.got, n.Message)
	}
	p.conn, err = pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.conn.Close(context.Background()) })
	for _, s := range []string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_analyze = on",
		"SET auto_explain.log_timing = off", "SET auto_explain.log_level = notice"} {
		_, err := p.conn.Exec(ctx, s)
		require.NoError(t, err, s)
	}
	return p
}

// run runs fn in a transaction that is rolled back, and returns the plans logged meanwhile.
func (p *planLog) run(t *testing.T, fn func(q *dbgen.Queries) error) string {
	t.Helper()
	ctx := context.Background()
	p.mu.Lock()
	p.got = nil
	p.mu.Unlock()
	tx, err := p.conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	require.NoError(t, fn(dbgen.New(tx)))
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.got, "\n")
}

// statement is the logged plan whose query text starts with prefix.
func (p *planLog) statement(t *testing.T, plans, prefix string) string {
	t.Helper()
	for _, plan := range strings.Split(plans, "duration: ") {
		if strings.Contains(plan, "Query Text: "+prefix) {
			return plan
		}
	}
	t.Fatalf("no plan of %q among:\n%s", prefix, plans)
	return ""
}

var loopsRe = regexp.MustCompile(`loops=(\d+)`)

// maxLoops is the most times any node of a plan ran.
func maxLoops(plan string) int {
	most := 0
	for _, m := range loopsRe.FindAllStringSubmatch(plan, -1) {
		n, _ := strconv.Atoi(m[1])
		most = max(most, n)
	}
	return most
}
