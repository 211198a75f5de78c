package benchstack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CPU is a process's user + system time so far.
type CPU time.Duration

// SelfCPU is this process's CPU time: the bench's in-process tickgate workers (and whatever
// else the bench runs in-process at the moment).
func SelfCPU() (CPU, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return CPU(time.Duration(ru.Utime.Nano() + ru.Stime.Nano())), nil
}

// TemporalCPU is the Temporal server process's CPU time.
func (s *Stack) TemporalCPU() (CPU, error) {
	st, err := readStat(s.Temporal.PID())
	if err != nil {
		return 0, err
	}
	return st.own, nil
}

// PostgresCPU is the cluster's CPU time: the postmaster, its live children (backends,
// writers) and the children it has reaped.
func (s *Stack) PostgresCPU() (CPU, error) { return ClusterCPU(s.PG.DataDir) }

// ClusterCPU is the CPU time of the PostgreSQL cluster whose data directory is dataDir (for
// a bench that starts its cluster without a Stack): the postmaster, its live children and
// the children it has reaped.
func ClusterCPU(dataDir string) (CPU, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid")) // #nosec G304 -- the pid file of the bench's own PostgreSQL cluster
	if err != nil {
		return 0, fmt.Errorf("postgres pid: %w", err)
	}
	pm, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("postgres pid: %w", err)
	}
	root, err := readStat(pm)
	if err != nil {
		return 0, err
	}
	total := root.own + root.children
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("read /proc: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != pm {
			continue // gone meanwhile, or not the cluster's
		}
		total += st.own
	}
	return total, nil
}

type procStat struct {
	ppid          int
	own, children CPU
}

// readStat reads /proc/<pid>/stat: ppid (field 4), utime and stime (14, 15), cutime and
// cstime (16, 17), in clock ticks.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("cpu of pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces: count after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("cpu of pid %d: short stat line", pid)
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
	tick, err := clockTick()
	if err != nil {
		return procStat{}, err
	}
	// f[0] is field 3 (state): field k is f[k-3].
	return procStat{ppid: int(n(1)), own: CPU(time.Duration(n(11)+n(12)) * tick), children: CPU(time.Duration(n(13)+n(14)) * tick)}, nil
}

var (
	tickOnce sync.Once
	tick     time.Duration
	tickErr  error
)

// ProcResolution is the unit /proc counts another process's CPU time in (PostgreSQL's,
// Temporal's): a figure over a window is good to one of it, so per operation to it ÷ the
// operations. This process's own time (getrusage) is finer.
func ProcResolution() (time.Duration, error) { return clockTick() }

// clockTick is the unit of /proc's times (sysconf(_SC_CLK_TCK), asked of getconf).
func clockTick() (time.Duration, error) {
	tickOnce.Do(func() {
		out, err := exec.Command("getconf", "CLK_TCK").Output()
		if err != nil {
			tickErr = fmt.Errorf("getconf CLK_TCK: %w", err)
			return
		}
		hz, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil || hz <= 0 {
			tickErr = fmt.Errorf("getconf CLK_TCK: %q", out)
			return
		}
		tick = time.Second / time.Duration(hz)
	})
	return tick, tickErr
}

// CPUSnapshot is the CPU time of each process a bench runs on, taken at one moment.
type CPUSnapshot struct {
	Temporal, Worker, Postgres CPU
}

// CPU snapshots the Temporal server, this process (the in-process workers) and PostgreSQL.
func (s *Stack) CPU() (CPUSnapshot, error) {
	var c CPUSnapshot
	var err error
	if c.Temporal, err = s.TemporalCPU(); err != nil {
		return c, err
	}
	if c.Worker, err = SelfCPU(); err != nil {
		return c, err
	}
	if c.Postgres, err = s.PostgresCPU(); err != nil {
		return c, err
	}
	return c, nil
}

// Sub is the CPU each process used between earlier and c.
func (c CPUSnapshot) Sub(earlier CPUSnapshot) CPUSnapshot {
	return CPUSnapshot{Temporal: c.Temporal - earlier.Temporal, Worker: c.Worker - earlier.Worker, Postgres: c.Postgres - earlier.Postgres}
}

// Ms is d in milliseconds.
func (d CPU) Ms() float64 { return float64(time.Duration(d).Microseconds()) / 1000 }

// PerOp is c in milliseconds per operation, n operations (at least one) having completed in
// the window c was measured over.
func (c CPU) PerOp(n int64) float64 { return c.Ms() / float64(max(n, 1)) }
