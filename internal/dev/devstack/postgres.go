// Package devstack starts the local, Docker-free stack: a throwaway PostgreSQL cluster from
// the machine's PostgreSQL binaries and the Temporal dev server built from the pinned CLI
// module in tools/temporal. `tickgate dev` and the test harnesses both use it.
package devstack

import (
	"context"
	"crypto/sha1" // #nosec G505 -- sha1 names a directory by its path, no security
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is one throwaway cluster: its data directory, port and the binaries that run it.
type Postgres struct {
	BinDir  string
	DataDir string
	Port    int
	// FindFreePort moves to the next free port when Port is taken by someone else.
	FindFreePort bool
	// CrashSafe keeps every acknowledged commit across a crash of the server process
	// (synchronous_commit on: the WAL is written before a commit returns). Off, the default
	// for a throwaway cluster, a crash loses the last few hundred milliseconds of commits —
	// which the chaos run, crashing the cluster on purpose, saw as a lost tick. fsync stays
	// off either way: only an operating-system crash would expose that.
	CrashSafe bool
	// Durable runs the cluster as a production server does: fsync, synchronous_commit and
	// full_page_writes on, so a commit returns only once its WAL is on disk. Benchmarks
	// measure with it (bench-devices -durable); it implies CrashSafe.
	Durable bool
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// URL is the connection string of database db in the cluster (trust auth, loopback only).
func (p *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

func (p *Postgres) logf(format string, args ...any) {
	if p.Log != nil {
		p.Log(format, args...)
	}
}

// FindPostgresBinDir locates initdb/pg_ctl: pg_config --bindir first, then the newest
// version under Debian's /usr/lib/postgresql. With install set and running as root, it
// installs Debian's postgresql package when no binaries are found.
func FindPostgresBinDir(install bool) (string, error) {
	if dir := findPostgresBinDir(); dir != "" {
		return dir, nil
	}
	if !install {
		return "", errors.New("postgresql server binaries (initdb, pg_ctl) not found; install Debian's postgresql package")
	}
	if os.Geteuid() != 0 {
		return "", errors.New("postgresql server binaries not found and not root: run `apt-get install -y postgresql`")
	}
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "postgresql"}} {
		cmd := exec.Command("apt-get", args...) // #nosec G204 -- apt-get with fixed arguments
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tail(out))
		}
	}
	if dir := findPostgresBinDir(); dir != "" {
		return dir, nil
	}
	return "", errors.New("postgresql installed but initdb still not found")
}

func findPostgresBinDir() string {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if fileExists(filepath.Join(dir, "initdb")) && fileExists(filepath.Join(dir, "pg_ctl")) {
			return dir
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	for _, m := range matches {
		if fileExists(filepath.Join(filepath.Dir(m), "pg_ctl")) {
			return filepath.Dir(m)
		}
	}
	return ""
}

func versionOf(initdbPath string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdbPath))))
	return v
}

// ClusterDir returns dir itself when the cluster's service user can use it, and otherwise a
// directory under /tmp named after dir: PostgreSQL refuses to run as root, so as root the
// cluster runs as the `postgres` user, which cannot enter a checkout under /root or under a
// `mktemp -d` directory (both 0700, owned by root). Start applies it to every cluster, so
// callers name the directory they want (under the checkout's .dev) and never place it
// themselves; the same dir always maps to the same place, so a cluster is found again.
func ClusterDir(dir string) string {
	if os.Geteuid() != 0 {
		return dir
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err == nil && serviceUserCanEnter(parent) { // #nosec G301 -- the postgres service user must pass through to the cluster
		return dir
	}
	fallback := fallbackDir(dir)
	// The postgres user must be able to pass through the fallback to reach its data
	// directory (which Start makes 0700 and its own). MkdirAll alone would leave it 0700
	// under a strict umask, and an earlier tickgate created it 0700 (Start's MkdirAll of the
	// data directory made it): set the mode explicitly, on a directory of ours only.
	if err := os.MkdirAll(fallback, 0o755); err == nil { // #nosec G301 -- the postgres service user must pass through to the cluster
		if fi, err := os.Lstat(fallback); err == nil && fi.IsDir() && ownedByUs(fi) {
			_ = os.Chmod(fallback, 0o755) // #nosec G302 -- a directory the postgres service user must pass through
		}
	}
	return filepath.Join(fallback, filepath.Base(dir))
}

// fallbackDir is the directory under /tmp that holds dir's cluster when its service user
// cannot reach dir: one per dir, named by a hash of it.
func fallbackDir(dir string) string {
	sum := sha1.Sum([]byte(dir)) // #nosec G401 -- names a directory by its path, no security
	return filepath.Join(os.TempDir(), "tickgate-pg-"+hex.EncodeToString(sum[:6]))
}

// RemoveClusterDir deletes the (stopped) cluster that Start placed for dir, wherever
// ClusterDir put it: dir itself and, if there is one, its fallback under /tmp.
func RemoveClusterDir(dir string) error {
	err := os.RemoveAll(dir)
	if fb := fallbackDir(dir); fileExists(fb) {
		err = errors.Join(err, os.RemoveAll(fb))
	}
	return err
}

// serviceUserCanEnter reports whether the postgres user can reach dir: `test -x` stats it
// as that user, which fails unless every ancestor is searchable too.
func serviceUserCanEnter(dir string) bool {
	return exec.Command("runuser", "-u", "postgres", "--", "test", "-x", dir).Run() == nil // #nosec G204 -- runuser test -x on a directory of the dev stack
}

func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// Running reports whether a postmaster answers for this data directory; if so, Port is set
// to the port it listens on (from its postmaster.pid).
func (p *Postgres) Running() bool {
	pid, err := os.ReadFile(filepath.Join(p.DataDir, "postmaster.pid"))
	if err != nil {
		return false
	}
	lines := strings.Split(string(pid), "\n")
	if len(lines) < 4 {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || !processAlive(n) {
		return false
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil || !portOpen(port) {
		return false
	}
	p.Port = port
	return true
}

// Start creates the cluster when missing and starts it unless it already runs. The server
// keeps running after this process exits; Stop ends it. It first places the cluster with
// ClusterDir, setting DataDir to where the cluster really lives: every cluster tickgate
// creates (make dev, tests, the chaos run, benchmarks) goes through here, so none of them
// fails in a checkout the postgres user cannot enter.
func (p *Postgres) Start(ctx context.Context) error {
	if p.DataDir == "" {
		return errors.New("postgres: no data directory given")
	}
	p.DataDir = ClusterDir(p.DataDir)
	if p.Running() {
		p.logf("postgres: reusing cluster %s on :%d", p.DataDir, p.Port)
		return nil
	}
	if p.FindFreePort {
		p.moveToAFreePort()
	}
	if portOpen(p.Port) {
		return fmt.Errorf("postgres: port %d is taken by another process", p.Port)
	}
	// Only the data directory itself is private (initdb insists on 0700); directories above
	// it that this creates must let the postgres user through when it runs the cluster.
	if err := os.MkdirAll(filepath.Dir(p.DataDir), 0o755); err != nil { // #nosec G301 -- the postgres service user must pass through to the cluster
		return fmt.Errorf("postgres: create data dir's parent: %w", err)
	}
	if os.Geteuid() == 0 && !serviceUserCanEnter(filepath.Dir(p.DataDir)) {
		return fmt.Errorf("postgres: the postgres user cannot reach %s (a directory above it is not searchable by that user, and the fallback under %s was not usable either)", p.DataDir, os.TempDir())
	}
	if err := os.MkdirAll(p.DataDir, 0o700); err != nil {
		return fmt.Errorf("postgres: create data dir: %w", err)
	}
	if err := p.chownToServiceUser(); err != nil {
		return err
	}
	if !fileExists(filepath.Join(p.DataDir, "PG_VERSION")) {
		p.logf("postgres: initdb %s", p.DataDir)
		out, err := p.run(ctx, filepath.Join(p.BinDir, "initdb"), "-D", p.DataDir, "-U", "postgres",
			"--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync")
		if err != nil {
			return fmt.Errorf("postgres: initdb: %w\n%s", err, tail(out))
		}
	}
	_ = os.Remove(filepath.Join(p.DataDir, "postmaster.pid")) // stale after a kill -9 or reboot
	syncCommit, onDisk := "off", "off"
	if p.CrashSafe || p.Durable {
		syncCommit = "on"
	}
	if p.Durable {
		onDisk = "on"
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses=127.0.0.1 -c max_connections=300 "+
		"-c fsync=%s -c synchronous_commit=%s -c full_page_writes=%s -c shared_buffers=256MB",
		p.DataDir, onDisk, syncCommit, onDisk)
	for attempt := 1; ; attempt++ {
		err := p.startServer(ctx, opts)
		// The ports tickgate uses lie in Linux's ephemeral range, so an outgoing connection
		// can hold one between the check above and the server's bind: take the next one.
		if err == nil || !p.FindFreePort || attempt == 5 || !strings.Contains(err.Error(), "could not bind") {
			return err
		}
		p.Port++
		p.moveToAFreePort()
	}
}

// startServer runs the cluster on p.Port with the server options opts.
func (p *Postgres) startServer(ctx context.Context, opts string) error {
	opts = fmt.Sprintf("-p %d %s", p.Port, opts)
	logFile := filepath.Join(p.DataDir, "server.log")
	p.logf("postgres: starting on 127.0.0.1:%d (log %s)", p.Port, logFile)
	out, err := p.run(ctx, filepath.Join(p.BinDir, "pg_ctl"), "-D", p.DataDir, "-l", logFile, "-o", opts, "-w", "-t", "60", "start")
	if err != nil {
		logTail, _ := os.ReadFile(logFile) // #nosec G304 -- the cluster's own log file
		return fmt.Errorf("postgres: pg_ctl start: %w\n%s\n%s", err, tail(out), tail(logTail))
	}
	return nil
}

// moveToAFreePort moves p.Port up to the first port nothing listens on and nothing holds.
func (p *Postgres) moveToAFreePort() {
	for i := 0; i < 50 && !portFree(p.Port); i++ {
		p.Port++
	}
}

// portFree reports whether a listener could bind 127.0.0.1:port now: no server listens there
// and no connection holds it as its local port.
func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// Stop shuts the cluster down quickly; data stays for the next Start.
func (p *Postgres) Stop() error {
	if !fileExists(filepath.Join(p.DataDir, "postmaster.pid")) {
		return nil
	}
	out, err := p.run(context.Background(), filepath.Join(p.BinDir, "pg_ctl"), "-D", p.DataDir, "-m", "fast", "-w", "stop")
	if err != nil {
		return fmt.Errorf("postgres: pg_ctl stop: %w\n%s", err, tail(out))
	}
	return nil
}

// EnsureDatabase creates database name on the cluster unless it exists.
func (p *Postgres) EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("postgres: look up database %s: %w", name, err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("postgres: create database %s: %w", name, err)
		}
	}
	return nil
}

// Crash stops the cluster the way a crash would (pg_ctl's immediate mode: no checkpoint, so
// the next Start runs crash recovery). The chaos run uses it.
func (p *Postgres) Crash(ctx context.Context) error {
	out, err := p.run(ctx, filepath.Join(p.BinDir, "pg_ctl"), "-D", p.DataDir, "-m", "immediate", "-w", "stop")
	if err != nil {
		return fmt.Errorf("postgres: pg_ctl immediate stop: %w\n%s", err, tail(out))
	}
	return nil
}

// run executes a server binary, as the postgres user when we are root.
func (p *Postgres) run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", bin}, args...)...) // #nosec G204 -- PostgreSQL's own programs from its bin directory
	} else {
		cmd = exec.CommandContext(ctx, bin, args...) // #nosec G204 -- PostgreSQL's own programs from its bin directory
	}
	cmd.Dir = "/"
	return cmd.CombinedOutput()
}

func (p *Postgres) chownToServiceUser() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("postgres: running as root needs the postgres user (from Debian's postgresql package): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(p.DataDir, uid, gid); err != nil {
		return fmt.Errorf("postgres: chown data dir: %w", err)
	}
	return nil
}

func processAlive(pid int) bool {
	proc, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return proc.Signal(syscallZero) == nil
}

func portOpen(port int) bool {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func tail(b []byte) string {
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
