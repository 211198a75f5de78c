package main

import (
	"fmt"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
)

// cpuPerOp is each process's CPU in ms per operation (a task run, a promotion round) over
// the window of one measured path.
type cpuPerOp struct{ tickgate, pg, temporal float64 }

func perOp(c benchstack.CPUSnapshot, n int64) cpuPerOp {
	return cpuPerOp{tickgate: c.Worker.PerOp(n), pg: c.Postgres.PerOp(n), temporal: c.Temporal.PerOp(n)}
}

// String is the table's cell: this process / PostgreSQL / Temporal = their sum.
func (c cpuPerOp) String() string {
	return fmt.Sprintf("%.3f / %.3f / %.3f = %.3f", c.tickgate, c.pg, c.temporal, c.tickgate+c.pg+c.temporal)
}

// keys are the RESULT keys of one path: <prefix>cpu_ms_per_task_{temporal,tickgate,pg}.
func (c cpuPerOp) keys(prefix string) string {
	k := prefix + "cpu_ms_per_task"
	return fmt.Sprintf("%s_temporal=%.3f %s_tickgate=%.3f %s_pg=%.3f", k, c.temporal, k, c.tickgate, k, c.pg)
}
