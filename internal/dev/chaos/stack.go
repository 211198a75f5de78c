package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/dev/devstack"
	"github.com/tickgate/tickgate/store"
)

// stack is the local product the run attacks: its own PostgreSQL cluster and Temporal
// (never the ones `make dev` or the tests use, since the run restarts them), two worker
// processes, two API processes, as behind a load balancer, and two agent simulators, each
// calling one of the APIs.
type stack struct {
	dir        string
	bin        string // the tickgate binary
	pg         *devstack.Postgres
	temporal   devstack.TemporalService
	dbURL      string
	apiAddrs   []string
	adminToken string
	workers    []*process
	apis       []*process
	agents     []*process
	logf       func(string, ...any)
	// sqlTargets is the workers' TICKGATE_SQL_TARGETS: the tenant databases of the waves
	// scenario.
	sqlTargets map[string]string
	// wire holds the fault proxies every process dials its services through (wire.go).
	wire *wire
}

// processCount is how many worker and API processes the run starts: more than one of
// each, so nothing may live in one process's memory that another needs.
const processCount = 2

// process is one tickgate subcommand run as a child process, restartable after a kill.
type process struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	// readyURL answers 200 once the process is connected and serving.
	readyURL string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // #nosec G302 -- a process log of the chaos stack, read like any log
	if err != nil {
		return fmt.Errorf("%s: log file: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...) // #nosec G204 -- the chaos stack's own binaries and arguments
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("%s: start: %w", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	return nil
}

// kill sends SIGKILL to the process group and waits for it to be gone.
func (p *process) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// stop asks the process to end (SIGTERM), killing it after a grace period.
func (p *process) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// killAndRestart kills the process, leaves it dead for down, starts it again and waits
// for it to be ready.
func (p *process) killAndRestart(ctx context.Context, down time.Duration) error {
	p.kill()
	sleepCtx(ctx, down)
	if err := p.start(); err != nil {
		return err
	}
	return p.waitReady(ctx, recoveryTimeout)
}

// waitReady polls readyURL until it answers 200.
func (p *process) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.readyURL, nil)
		if err != nil {
			return fmt.Errorf("%s: ready request: %w", p.name, err)
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready at %s within %s (log %s)", p.name, p.readyURL, timeout, p.logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var freePort = devstack.FreePort

// agentHistory is where agent simulator name writes its history.
func (s *stack) agentHistory(name string) string {
	return filepath.Join(s.dir, name+".history.jsonl")
}

// startStack brings up PostgreSQL, Temporal, the database schema and an admin token.
// The tickgate processes are started by startProcesses.
func startStack(ctx context.Context, dir, bin, shape string, logf func(string, ...any)) (*stack, error) {
	root, err := devstack.RepoRoot()
	if err != nil {
		return nil, err
	}
	s := &stack{dir: dir, bin: bin, logf: logf, wire: newWire()}
	binDir, err := devstack.FindPostgresBinDir(true)
	if err != nil {
		return nil, err
	}
	pgPort, err := freePort()
	if err != nil {
		return nil, err
	}
	// Crash-safe, as a production server is: the run crashes it and counts every tick.
	s.pg = &devstack.Postgres{BinDir: binDir, DataDir: filepath.Join(dir, "pg"), Port: pgPort, FindFreePort: true, CrashSafe: true, Log: logf}
	if err := s.pg.Start(ctx); err != nil {
		return nil, err
	}
	if err := s.pg.EnsureDatabase(ctx, "tickgate"); err != nil {
		return s, err
	}
	s.dbURL = s.pg.URL("tickgate")

	if s.temporal, err = startTemporal(ctx, root, dir, shape, s.pg, s.wire, logf); err != nil {
		return s, err
	}
	if err := store.Migrate(ctx, s.dbURL); err != nil {
		return s, err
	}
	st, err := store.Open(ctx, s.dbURL)
	if err != nil {
		return s, err
	}
	defer st.Close()
	_, token, err := st.CreateToken(ctx, store.NewToken{Role: domain.RoleAdmin, Note: "chaos run"})
	if err != nil {
		return s, fmt.Errorf("admin token: %w", err)
	}
	s.adminToken = token
	return s, nil
}

// startTemporal starts the run's Temporal: the CLI's dev server on a SQLite file, or the
// real server with its persistence in the run's PostgreSQL cluster (so the PostgreSQL
// restart hits Temporal too, as it would in production).
func startTemporal(ctx context.Context, root, dir, shape string, pg *devstack.Postgres, w *wire, logf func(string, ...any)) (devstack.TemporalService, error) {
	if shape == TemporalServer {
		bins, err := devstack.BuildServerBinaries(ctx, root, logf)
		if err != nil {
			return nil, err
		}
		ports, err := devstack.FreeServerPorts()
		if err != nil {
			return nil, err
		}
		// Temporal's persistence crosses a process boundary too: through a proxy of its own.
		pgAddr, err := w.link(endTemporal, endPostgres, pgHostPort(pg))
		if err != nil {
			return nil, err
		}
		srv := &devstack.TemporalServer{Bins: bins, PG: pg, PGAddr: pgAddr, Dir: filepath.Join(dir, "temporal-server"), Ports: ports,
			Shards: devstack.DefaultHistoryShards, Log: logf}
		return srv, srv.Start(ctx)
	}
	temporalBin, err := devstack.TemporalBinary(ctx, root, logf)
	if err != nil {
		return nil, err
	}
	tPort, err := freePort()
	if err != nil {
		return nil, err
	}
	uiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	dev := &devstack.Temporal{Bin: temporalBin, DBFile: filepath.Join(dir, "temporal.db"), Port: tPort, UIPort: uiPort,
		LogFile: filepath.Join(dir, "temporal.log")}
	return dev, dev.Start(ctx)
}

// pgHostPort is the cluster's own address.
func pgHostPort(pg *devstack.Postgres) string { return fmt.Sprintf("127.0.0.1:%d", pg.Port) }

// viaProxy rewrites a PostgreSQL URL of the run's cluster to dial addr instead.
func viaProxy(url string, pg *devstack.Postgres, addr string) string {
	return strings.Replace(url, pgHostPort(pg), addr, 1)
}

// serviceEnv links process name to PostgreSQL and Temporal through proxies of its own and
// answers the environment that dials them, with the workers' SQL targets rewritten alike.
func (s *stack) serviceEnv(name string, common []string, sqlTargets bool) ([]string, error) {
	pgAddr, err := s.wire.link(name, endPostgres, pgHostPort(s.pg))
	if err != nil {
		return nil, err
	}
	temporalAddr, err := s.wire.link(name, endTemporal, s.temporal.Address())
	if err != nil {
		return nil, err
	}
	env := append(append([]string{}, common...), "DATABASE_URL="+viaProxy(s.dbURL, s.pg, pgAddr), "TEMPORAL_ADDRESS="+temporalAddr)
	if sqlTargets {
		targets := map[string]string{}
		for db, url := range s.sqlTargets {
			targets[db] = viaProxy(url, s.pg, pgAddr)
		}
		env = append(env, sqlTargetsEnv(targets))
	}
	return env, nil
}

// startProcesses starts the workers and the APIs, each dialing PostgreSQL and Temporal
// through fault proxies of its own, and waits for them to be ready.
func (s *stack) startProcesses(ctx context.Context, p Profile, taskQueue string) error {
	common := []string{
		"TICKGATE_TASK_QUEUE=" + taskQueue,
		"TICKGATE_DEVICE_TIMEOUT=" + p.DeviceTimeout.String(),
		// The http actions' receiver listens on loopback (internal/dev/receiver).
		"TICKGATE_HTTP_ALLOW=127.0.0.1",
	}
	for i := 1; i <= processCount; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		metricsAddr := fmt.Sprintf("127.0.0.1:%d", port)
		name := fmt.Sprintf("worker-%d", i)
		env, err := s.serviceEnv(name, common, true)
		if err != nil {
			return err
		}
		s.workers = append(s.workers, &process{
			name: name, bin: s.bin, args: []string{"worker"},
			env:     append(env, "TICKGATE_WORKER_METRICS_ADDR="+metricsAddr),
			logPath: filepath.Join(s.dir, fmt.Sprintf("worker-%d.log", i)), readyURL: "http://" + metricsAddr + "/readyz",
		})
	}
	for i := 1; i <= processCount; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		name := fmt.Sprintf("api-%d", i)
		env, err := s.serviceEnv(name, common, false)
		if err != nil {
			return err
		}
		s.apiAddrs = append(s.apiAddrs, addr)
		s.apis = append(s.apis, &process{
			name: name, bin: s.bin, args: []string{"api"},
			env:     append(env, "TICKGATE_HTTP_ADDR="+addr),
			logPath: filepath.Join(s.dir, fmt.Sprintf("api-%d.log", i)), readyURL: "http://" + addr + "/readyz",
		})
	}
	for _, proc := range s.services() {
		if err := proc.start(); err != nil {
			return err
		}
	}
	for _, proc := range s.services() {
		if err := proc.waitReady(ctx, 2*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// services are the processes with a /readyz: the workers and the APIs.
func (s *stack) services() []*process {
	return append(append([]*process{}, s.workers...), s.apis...)
}

// startAgents runs one agent simulator per API, the PCs dealt out between them, each
// calling its API through a fault proxy and recording its history (histories.go).
func (s *stack) startAgents(p Profile, pcs []string) error {
	for i, addr := range s.apiAddrs {
		var mine []string
		for j := i; j < len(pcs); j += len(s.apiAddrs) {
			mine = append(mine, pcs[j])
		}
		if len(mine) == 0 {
			continue
		}
		name := fmt.Sprintf("agent-sim-%d", i+1)
		proxied, err := s.wire.link(name, fmt.Sprintf("api-%d", i+1), addr)
		if err != nil {
			return err
		}
		agents := &process{
			name: name, bin: s.bin,
			args: []string{"agent-sim", "-server", "http://" + proxied, "-pcs", strings.Join(mine, ","), "-token", s.adminToken,
				"-latency", p.DeviceLatency.String(), "-jitter", p.DeviceLatency.String(),
				"-fail-rate", fmt.Sprint(p.FailRate), "-no-answer-rate", fmt.Sprint(p.NoAnswerRate), "-report", "10s",
				"-history", s.agentHistory(name)},
			logPath: filepath.Join(s.dir, fmt.Sprintf("agent-sim-%d.log", i+1)),
		}
		if err := agents.start(); err != nil {
			return err
		}
		s.agents = append(s.agents, agents)
	}
	return nil
}

// stopAgents stops the agent simulators (their histories are then complete: an answer cut
// short is written as unknown).
func (s *stack) stopAgents() {
	for _, a := range s.agents {
		a.stop()
	}
}

// close stops everything the stack started; the directory stays for the logs.
func (s *stack) close() error {
	var errs []error
	for _, a := range s.agents {
		a.stop()
	}
	for _, a := range s.apis {
		a.stop()
	}
	for _, w := range s.workers {
		w.stop()
	}
	if s.temporal != nil {
		errs = append(errs, s.temporal.Close())
	}
	if s.pg != nil {
		errs = append(errs, s.pg.Stop())
	}
	s.wire.close()
	return errors.Join(errs...)
}

// restartPostgres crashes the cluster (immediate stop: no checkpoint, crash recovery on
// start) and starts it again after down.
func (s *stack) restartPostgres(ctx context.Context, down time.Duration) error {
	if err := s.pg.Crash(ctx); err != nil {
		return err
	}
	sleepCtx(ctx, down)
	if err := s.pg.Start(ctx); err != nil {
		return err
	}
	// Started on another port (its own was taken meanwhile): the proxies follow it.
	return s.wire.repoint(endPostgres, pgHostPort(s.pg))
}

// restartTemporal stops the server and starts it again on the same ports and data after
// down: workflows, timers and task queues survive in its SQLite file or PostgreSQL
// databases.
func (s *stack) restartTemporal(ctx context.Context, down time.Duration) error {
	if err := s.temporal.Stop(); err != nil {
		return fmt.Errorf("temporal: stop: %w", err)
	}
	sleepCtx(ctx, down)
	return s.temporal.Start(ctx)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
