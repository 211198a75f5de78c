package devstack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// TemporalCLIModule is the pinned CLI whose `server start-dev` is our local Temporal
// (server 1.29.1, UI 2.42.1). Later versions do not build from the module proxy.
const TemporalCLIModule = "github.com/temporalio/cli/cmd/temporal"

// SearchAttributes are tickgate's custom search attributes; every workflow sets
// TickgateKind, and the engine-specific one names its subject.
var SearchAttributes = []string{"TickgateKind", "TickgateSchedule", "TickgateRollout", "TickgatePC", "TickgateTask"}

// RepoRoot finds the checkout's root (the directory holding tickgate's go.mod), starting
// from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod")) // #nosec G304 -- the go.mod files up from the working directory, to find the repository
		if err == nil && strings.HasPrefix(string(b), "module github.com/tickgate/tickgate\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the tickgate checkout (no go.mod of github.com/tickgate/tickgate above the working directory)")
		}
		dir = parent
	}
}

// TemporalBinary returns .dev/bin/temporal under root, building it from the tools/temporal
// module when missing (about three minutes cold; cached afterwards).
func TemporalBinary(ctx context.Context, root string, logf func(string, ...any)) (string, error) {
	return ToolBinary(ctx, root, "temporal", TemporalCLIModule, logf)
}

// ToolBinary returns .dev/bin/<name> under root, building pkg from the tools/temporal
// module when missing. A file lock keeps two concurrent callers (parallel test packages)
// from building twice.
func ToolBinary(ctx context.Context, root, name, pkg string, logf func(string, ...any)) (string, error) {
	bin := filepath.Join(root, ".dev", "bin", name)
	if fileExists(bin) {
		return bin, nil
	}
	unlock, err := LockFile(filepath.Join(root, ".dev", name+"-build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if fileExists(bin) {
		return bin, nil
	}
	if logf != nil {
		logf("%s: building %s (pinned in tools/temporal; first time only)", name, pkg)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil { // #nosec G301 -- .dev/bin, the dev stack's binaries
		return "", fmt.Errorf("%s: bin dir: %w", name, err)
	}
	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, pkg) // #nosec G204 -- the go tool building a package pinned in tools/temporal
	cmd.Dir = filepath.Join(root, "tools", "temporal")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: build: %w\n%s", name, err, tail(out))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("%s: install binary: %w", name, err)
	}
	return bin, nil
}

// TemporalService is a Temporal the stack runs: the CLI's dev server or the real server.
type TemporalService interface {
	// Address is the frontend's host:port; UIAddress the Web UI's.
	Address() string
	UIAddress() string
	// Start starts the server (again, after Stop, on the same ports and data).
	Start(ctx context.Context) error
	// Stop ends the server process; Close ends everything Start started.
	Stop() error
	Close() error
}

var _ TemporalService = (*Temporal)(nil)

// LockFile takes an exclusive flock on path, creating it, and returns the release func.
func LockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { // #nosec G301 -- the lock file's directory under .dev
		return nil, fmt.Errorf("lock dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644) // #nosec G304 G302 -- a lock file under .dev, which holds nothing
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// Temporal is a dev server process with its Web UI.
type Temporal struct {
	Bin     string
	DBFile  string // sqlite file; data survives restarts
	Port    int
	UIPort  int
	LogFile string
	cmd     *exec.Cmd
	done    chan error
}

// Address is the frontend's host:port.
func (t *Temporal) Address() string { return fmt.Sprintf("127.0.0.1:%d", t.Port) }

// UIAddress is the Web UI's host:port.
func (t *Temporal) UIAddress() string { return fmt.Sprintf("127.0.0.1:%d", t.UIPort) }

// Close stops the dev server, which is the whole of it.
func (t *Temporal) Close() error { return t.Stop() }

// Args are the start-dev arguments, search attributes included.
func (t *Temporal) Args() []string {
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", fmt.Sprint(t.Port),
		"--ui-port", fmt.Sprint(t.UIPort), "--db-filename", t.DBFile, "--log-level", "warn",
		// SQLite's default rollback journal with a sync per commit caps the file-backed
		// server at a few dozen workflow updates per second on a small machine; a WAL without
		// syncs survives a kill -9 of the server (the OS keeps the writes) and keeps up with
		// hundreds of schedules. Only a power loss could lose the last commits of a dev server.
		"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=off"}
	for _, sa := range SearchAttributes {
		args = append(args, "--search-attribute", sa+"=Keyword")
	}
	return args
}

// Start runs the server as a child process and waits until its frontend port answers.
func (t *Temporal) Start(ctx context.Context) error {
	if portOpen(t.Port) {
		return fmt.Errorf("temporal: port %d is already taken", t.Port)
	}
	if err := os.MkdirAll(filepath.Dir(t.DBFile), 0o755); err != nil { // #nosec G301 -- the dev Temporal server's data directory under .dev
		return fmt.Errorf("temporal: data dir: %w", err)
	}
	t.cmd = exec.Command(t.Bin, t.Args()...) // #nosec G204 -- the pinned Temporal CLI and its arguments
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if t.LogFile != "" {
		f, err := os.OpenFile(t.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // #nosec G302 -- the dev Temporal server's log, read like any log
		if err != nil {
			return fmt.Errorf("temporal: log file: %w", err)
		}
		t.cmd.Stdout, t.cmd.Stderr = f, f
	}
	if err := t.cmd.Start(); err != nil {
		return fmt.Errorf("temporal: start: %w", err)
	}
	t.done = make(chan error, 1)
	go func() { t.done <- t.cmd.Wait() }()
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for !portOpen(t.Port) || !portOpen(t.UIPort) {
		select {
		case err := <-t.done:
			return fmt.Errorf("temporal: exited during start-up (see %s): %v", t.LogFile, err)
		case <-waitCtx.Done():
			_ = t.Stop()
			return fmt.Errorf("temporal: not listening on :%d after 60s: %w", t.Port, waitCtx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// Stop ends the server (SIGTERM, then SIGKILL after 10s).
func (t *Temporal) Stop() error {
	if t.cmd == nil || t.cmd.Process == nil {
		return nil
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.done
	}
	return nil
}
