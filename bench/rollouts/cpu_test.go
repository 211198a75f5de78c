package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/bench/internal/benchstack"
)

// A path's CPU is divided by the task runs completed in its window, and its RESULT keys
// name the path and the process.
func TestCPUPerTaskKeysNameThePathAndProcess(t *testing.T) {
	ms := func(n int) benchstack.CPU { return benchstack.CPU(time.Duration(n) * time.Millisecond) }
	c := perOp(benchstack.CPUSnapshot{Temporal: ms(20), Worker: ms(30), Postgres: ms(90)}, 1000)
	require.Equal(t, "baseline_cpu_ms_per_task_temporal=0.020 baseline_cpu_ms_per_task_tickgate=0.030 baseline_cpu_ms_per_task_pg=0.090", c.keys("baseline_"))
	require.Equal(t, "cpu_ms_per_task_temporal=0.020 cpu_ms_per_task_tickgate=0.030 cpu_ms_per_task_pg=0.090", c.keys(""))
	require.Equal(t, "0.030 / 0.090 / 0.020 = 0.140", c.String())
}

// A window in which no task finished is divided by one, not zero.
func TestCPUPerTaskOfAnEmptyWindowIsItsWholeCPU(t *testing.T) {
	c := perOp(benchstack.CPUSnapshot{Postgres: benchstack.CPU(5 * time.Millisecond)}, 0)
	require.Equal(t, 5.0, c.pg)
}
