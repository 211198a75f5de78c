package devstack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The real server's tools, pinned in tools/temporal at the version the CLI embeds and built
// into .dev/bin under these names (the CLI keeps the name `temporal`).
const (
	ServerModule   = "go.temporal.io/server/cmd/server"
	SQLToolModule  = "go.temporal.io/server/cmd/tools/sql"
	UIServerModule = "github.com/temporalio/ui-server/v2/cmd/server"

	ServerBinName   = "temporal-server"
	SQLToolBinName  = "temporal-sql-tool"
	UIServerBinName = "temporal-ui-server"
)

// DefaultHistoryShards is development-postgres12.yaml's shard count. A cluster's shard
// count is fixed when its persistence is first set up; production clusters use far more
// (see docs/production.md).
const DefaultHistoryShards = 4

// ServerBinaries are the paths of the real server, its SQL tool and the Web UI server.
type ServerBinaries struct {
	Server, SQLTool, UI string
}

// BuildServerBinaries returns the real server's tools under root/.dev/bin, building the
// missing ones from the tools/temporal module (about a minute each with warm caches).
func BuildServerBinaries(ctx context.Context, root string, logf func(string, ...any)) (ServerBinaries, error) {
	var b ServerBinaries
	var err error
	if b.Server, err = ToolBinary(ctx, root, ServerBinName, ServerModule, logf); err != nil {
		return b, err
	}
	if b.SQLTool, err = ToolBinary(ctx, root, SQLToolBinName, SQLToolModule, logf); err != nil {
		return b, err
	}
	if b.UI, err = ToolBinary(ctx, root, UIServerBinName, UIServerModule, logf); err != nil {
		return b, err
	}
	return b, nil
}

// ServerPorts are the loopback ports of one single-process server: its four services'
// gRPC and membership ports, the frontend's HTTP port, the Prometheus endpoint and the UI.
type ServerPorts struct {
	Frontend, FrontendHTTP, History, Matching, Worker   int
	FrontendRing, HistoryRing, MatchingRing, WorkerRing int
	Metrics, UI                                         int
}

// DefaultServerPorts are development-postgres12.yaml's ports, with the UI on :8233 as the
// dev server has it and the metrics moved off :8000.
func DefaultServerPorts() ServerPorts {
	return ServerPorts{
		Frontend: 7233, FrontendHTTP: 7243, History: 7234, Matching: 7235, Worker: 7239,
		FrontendRing: 6933, HistoryRing: 6934, MatchingRing: 6935, WorkerRing: 6939,
		Metrics: 7299, UI: 8233,
	}
}

// FreeServerPorts picks free loopback ports for a server that must not meet another one
// (the chaos run, the test harness). The server keeps membership ports in a smallint
// column, so every port is drawn below 32768, under the kernel's ephemeral range.
func FreeServerPorts() (ServerPorts, error) {
	var p ServerPorts
	taken := map[int]bool{}
	for _, port := range []*int{&p.Frontend, &p.FrontendHTTP, &p.History, &p.Matching, &p.Worker,
		&p.FrontendRing, &p.HistoryRing, &p.MatchingRing, &p.WorkerRing, &p.Metrics, &p.UI} {
		n, err := freePortBelow32768(taken)
		if err != nil {
			return p, err
		}
		*port, taken[n] = n, true
	}
	return p, nil
}

func freePortBelow32768(taken map[int]bool) (int, error) {
	for i := 0; i < 200; i++ {
		n := 20000 + rand.IntN(12000) // #nosec G404 -- a free port's pick, no secret
		if taken[n] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", n))
		if err != nil {
			continue
		}
		_ = l.Close()
		return n, nil
	}
	return 0, errors.New("no free port between 20000 and 32000")
}

// TemporalServer is the production shape of Temporal on one machine: go.temporal.io/server
// with all four services in one process, on PostgreSQL persistence in databases of its own
// (<DBPrefix> and <DBPrefix>_visibility) with Shards history shards, plus the Web UI server.
type TemporalServer struct {
	Bins ServerBinaries
	PG   *Postgres // the cluster holding the two databases
	// PGAddr is the host:port the server's persistence dials (default PG's own address);
	// the chaos run puts a fault proxy there. The schema tool always dials PG directly.
	PGAddr string
	Dir    string // config files and logs
	Ports  ServerPorts
	Shards int
	// DBPrefix names the databases; "temporal" when empty.
	DBPrefix string
	// DynamicConfig sets dynamic-config keys beside the defaults (the values are YAML
	// scalars), as the dev server's --dynamic-config-value does.
	DynamicConfig map[string]string
	Log           func(string, ...any)

	server, ui *child
}

var _ TemporalService = (*TemporalServer)(nil)

// Address is the frontend's host:port.
func (t *TemporalServer) Address() string { return fmt.Sprintf("127.0.0.1:%d", t.Ports.Frontend) }

// UIAddress is the Web UI's host:port.
// PID is the server process's id (0 when it is not running), for a bench reading its CPU time.
func (t *TemporalServer) PID() int {
	if t.server == nil || t.server.cmd == nil || t.server.cmd.Process == nil {
		return 0
	}
	return t.server.cmd.Process.Pid
}

func (t *TemporalServer) UIAddress() string { return fmt.Sprintf("127.0.0.1:%d", t.Ports.UI) }

// LogFile is the server's log.
func (t *TemporalServer) LogFile() string { return filepath.Join(t.Dir, "temporal-server.log") }

func (t *TemporalServer) logf(format string, args ...any) {
	if t.Log != nil {
		t.Log(format, args...)
	}
}

// Databases names the server's store and visibility databases.
func (t *TemporalServer) Databases() (store, visibility string) {
	prefix := t.DBPrefix
	if prefix == "" {
		prefix = "temporal"
	}
	return prefix, prefix + "_visibility"
}

// Start sets up or updates the schemas, starts the server, registers the `default`
// namespace and tickgate's search attributes (all idempotent, so a restart runs the same
// steps), and starts the Web UI unless it already runs.
func (t *TemporalServer) Start(ctx context.Context) error {
	if t.Shards == 0 {
		t.Shards = DefaultHistoryShards
	}
	if err := os.MkdirAll(filepath.Join(t.Dir, "config"), 0o755); err != nil { // #nosec G301 -- the dev Temporal server's config directory, no secret
		return fmt.Errorf("temporal server: config dir: %w", err)
	}
	if portOpen(t.Ports.Frontend) {
		return fmt.Errorf("temporal server: port %d is already taken", t.Ports.Frontend)
	}
	if err := t.SetupSchemas(ctx); err != nil {
		return err
	}
	if err := t.writeConfig(); err != nil {
		return err
	}
	t.logf("temporal server: starting on %s (%d history shards, log %s)", t.Address(), t.Shards, t.LogFile())
	t.server = &child{bin: t.Bins.Server, logFile: t.LogFile(),
		args: []string{"--root", t.Dir, "--config", "config", "--env", "tickgate", "--allow-no-auth", "start"}}
	if err := t.server.start(); err != nil {
		return fmt.Errorf("temporal server: %w", err)
	}
	if err := t.server.waitPort(ctx, t.Ports.Frontend, 2*time.Minute); err != nil {
		_ = t.Stop()
		return fmt.Errorf("temporal server: %w (see %s)", err, t.LogFile())
	}
	regCtx, cancel := t.server.whileRunning(ctx)
	defer cancel()
	if err := t.Register(regCtx); err != nil {
		_ = t.Stop()
		logTail, _ := os.ReadFile(t.LogFile())
		return fmt.Errorf("%w\nserver log (%s):\n%s", err, t.LogFile(), tail(logTail))
	}
	if t.ui == nil || !t.ui.running() {
		if err := t.startUI(ctx); err != nil {
			_ = t.Stop()
			return err
		}
	}
	return nil
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s); the UI keeps running, as a
// separate deployment would, until Close.
func (t *TemporalServer) Stop() error {
	if t.server == nil {
		return nil
	}
	t.server.stop()
	return nil
}

// Close stops the server and the UI.
func (t *TemporalServer) Close() error {
	err := t.Stop()
	if t.ui != nil {
		t.ui.stop()
	}
	return err
}

// SetupSchemas creates the two databases with temporal-sql-tool when missing, sets up
// their versioning on creation and updates both schemas to the newest version embedded in
// the server module (postgresql/v12); run on a current schema it changes nothing.
func (t *TemporalServer) SetupSchemas(ctx context.Context) error {
	store, visibility := t.Databases()
	for _, db := range []struct{ name, schema string }{
		{store, "postgresql/v12/temporal"}, {visibility, "postgresql/v12/visibility"},
	} {
		exists, err := t.databaseExists(ctx, db.name)
		if err != nil {
			return err
		}
		if !exists {
			t.logf("temporal server: creating database %s and its schema", db.name)
			if err := t.sqlTool(ctx, db.name, "create-database"); err != nil {
				return err
			}
			if err := t.sqlTool(ctx, db.name, "setup-schema", "-v", "0.0"); err != nil {
				return err
			}
		}
		if err := t.sqlTool(ctx, db.name, "update-schema", "--schema-name", db.schema); err != nil {
			return err
		}
	}
	return nil
}

func (t *TemporalServer) databaseExists(ctx context.Context, name string) (bool, error) {
	conn, err := pgx.Connect(ctx, t.PG.URL("postgres"))
	if err != nil {
		return false, fmt.Errorf("temporal server: connect to postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return false, fmt.Errorf("temporal server: look up database %s: %w", name, err)
	}
	return exists, nil
}

func (t *TemporalServer) sqlTool(ctx context.Context, db string, args ...string) error {
	all := append([]string{"--plugin", "postgres12", "--ep", "127.0.0.1", "-p", fmt.Sprint(t.PG.Port),
		"-u", "postgres", "--db", db}, args...)
	out, err := exec.CommandContext(ctx, t.Bins.SQLTool, all...).CombinedOutput() // #nosec G204 -- the pinned temporal-sql-tool on the dev cluster
	if err != nil {
		return fmt.Errorf("temporal-sql-tool %s on %s: %w\n%s", args[0], db, err, tail(out))
	}
	return nil
}

// Register creates the `default` namespace and tickgate's search attributes when missing,
// then waits until a workflow carrying those attributes can start: the frontend accepts
// calls before its namespace and search-attribute caches have caught up.
func (t *TemporalServer) Register(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var c client.Client
	err := retryUntil(ctx, func() error {
		var err error
		c, err = client.DialContext(ctx, client.Options{HostPort: t.Address(), Namespace: "default", Logger: quietLogger{}})
		return err
	})
	if err != nil {
		return fmt.Errorf("temporal server: dial %s: %w", t.Address(), err)
	}
	defer c.Close()
	err = retryUntil(ctx, func() error {
		_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: "default", WorkflowExecutionRetentionPeriod: durationpb.New(72 * time.Hour),
		})
		var exists *serviceerror.NamespaceAlreadyExists
		if errors.As(err, &exists) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("temporal server: register namespace default: %w", err)
	}
	err = retryUntil(ctx, func() error { return addSearchAttributes(ctx, c) })
	if err != nil {
		return fmt.Errorf("temporal server: register search attributes: %w", err)
	}
	if err := retryUntil(ctx, func() error { return probeSearchAttributes(ctx, c) }); err != nil {
		return fmt.Errorf("temporal server: a workflow with tickgate's search attributes cannot start: %w", err)
	}
	return nil
}

// addSearchAttributes adds those of SearchAttributes the namespace lacks, as Keywords.
func addSearchAttributes(ctx context.Context, c client.Client) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, sa := range SearchAttributes {
		if _, ok := have.GetCustomAttributes()[sa]; !ok {
			missing[sa] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: "default", SearchAttributes: missing,
	})
	return err
}

// probeSearchAttributes starts (and at once terminates) a workflow that sets every one of
// tickgate's search attributes, on a task queue no worker polls.
func probeSearchAttributes(ctx context.Context, c client.Client) error {
	var updates []temporal.SearchAttributeUpdate
	for _, sa := range SearchAttributes {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(sa).ValueSet("devstack-probe"))
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: fmt.Sprintf("devstack-probe/%d", time.Now().UnixNano()), TaskQueue: "devstack-probe",
		TypedSearchAttributes: temporal.NewSearchAttributes(updates...),
	}, "DevstackProbe")
	if err != nil {
		return err
	}
	return c.TerminateWorkflow(ctx, run.GetID(), run.GetRunID(), "devstack: search attributes usable")
}

func retryUntil(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (t *TemporalServer) startUI(ctx context.Context) error {
	uiDir := filepath.Join(t.Dir, "ui")
	if err := os.MkdirAll(filepath.Join(uiDir, "config"), 0o755); err != nil { // #nosec G301 -- the dev Web UI's config directory, no secret
		return fmt.Errorf("temporal ui: config dir: %w", err)
	}
	cfg := fmt.Sprintf("temporalGrpcAddress: %s\nhost: 127.0.0.1\nport: %d\nenableUi: true\ndefaultNamespace: default\nhideLogs: true\ncors:\n  cookieInsecure: true\n",
		t.Address(), t.Ports.UI)
	if err := os.WriteFile(filepath.Join(uiDir, "config", "development.yaml"), []byte(cfg), 0o644); err != nil { // #nosec G306 -- the dev Web UI's config, no secret
		return fmt.Errorf("temporal ui: config: %w", err)
	}
	t.ui = &child{bin: t.Bins.UI, logFile: filepath.Join(t.Dir, "temporal-ui.log"),
		args: []string{"--root", uiDir, "--config", "config", "--env", "development", "start"}}
	if err := t.ui.start(); err != nil {
		return fmt.Errorf("temporal ui: %w", err)
	}
	if err := t.ui.waitPort(ctx, t.Ports.UI, time.Minute); err != nil {
		return fmt.Errorf("temporal ui: %w", err)
	}
	return nil
}

// writeConfig renders the server's static and dynamic config into Dir/config.
func (t *TemporalServer) writeConfig() error {
	store, visibility := t.Databases()
	data := struct {
		ServerPorts
		Shards            int
		PGAddr            string
		Store, Visibility string
		DynamicConfig     string
	}{t.Ports, t.Shards, t.PGAddr, store, visibility, filepath.Join(t.Dir, "config", "dynamicconfig.yaml")}
	if data.PGAddr == "" {
		data.PGAddr = fmt.Sprintf("127.0.0.1:%d", t.PG.Port)
	}
	var b strings.Builder
	if err := serverConfig.Execute(&b, data); err != nil {
		return fmt.Errorf("temporal server: render config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(t.Dir, "config", "tickgate.yaml"), []byte(b.String()), 0o644); err != nil { // #nosec G306 -- the dev Temporal server's config (trust auth on localhost), no secret
		return fmt.Errorf("temporal server: write config: %w", err)
	}
	dynamic := serverDynamicConfig
	keys := make([]string, 0, len(t.DynamicConfig))
	for k := range t.DynamicConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		dynamic += fmt.Sprintf("%s:\n  - value: %s\n", k, t.DynamicConfig[k])
	}
	if err := os.WriteFile(data.DynamicConfig, []byte(dynamic), 0o644); err != nil { // #nosec G306 -- the dev Temporal server's dynamic config, no secret
		return fmt.Errorf("temporal server: write dynamic config: %w", err)
	}
	return nil
}

// serverConfig is development-postgres12.yaml (server v1.29.1) with this cluster's
// databases and ports, logs at warn, and without the archival section nobody here uses.
var serverConfig = template.Must(template.New("server").Parse(`log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: {{.Shards}}
  datastores:
    postgres-default:
      sql:
        pluginName: "postgres12"
        databaseName: "{{.Store}}"
        connectAddr: "{{.PGAddr}}"
        connectProtocol: "tcp"
        user: "postgres"
        password: ""
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: "1h"
    postgres-visibility:
      sql:
        pluginName: "postgres12"
        databaseName: "{{.Visibility}}"
        connectAddr: "{{.PGAddr}}"
        connectProtocol: "tcp"
        user: "postgres"
        password: ""
        maxConns: 2
        maxIdleConns: 2
        maxConnLifetime: "1h"

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  metrics:
    prometheus:
      framework: "tally"
      timerType: "histogram"
      listenAddress: "127.0.0.1:{{.Metrics}}"

services:
  frontend:
    rpc:
      grpcPort: {{.Frontend}}
      membershipPort: {{.FrontendRing}}
      bindOnLocalHost: true
      httpPort: {{.FrontendHTTP}}
  matching:
    rpc:
      grpcPort: {{.Matching}}
      membershipPort: {{.MatchingRing}}
      bindOnLocalHost: true
  history:
    rpc:
      grpcPort: {{.History}}
      membershipPort: {{.HistoryRing}}
      bindOnLocalHost: true
  worker:
    rpc:
      grpcPort: {{.Worker}}
      membershipPort: {{.WorkerRing}}
      bindOnLocalHost: true

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:{{.Frontend}}"

dcRedirectionPolicy:
  policy: "noop"

dynamicConfigClient:
  filepath: "{{.DynamicConfig}}"
  pollInterval: "10s"
`))

// serverDynamicConfig keeps development-sql.yaml's settings that matter to tickgate; the
// rest of the server runs on its defaults, as a production cluster would.
const serverDynamicConfig = `limit.maxIDLength:
  - value: 255
    constraints: {}
history.hostLevelCacheMaxSize:
  - value: 8192
frontend.enableExecuteMultiOperation:
  - value: true
`

// child is a server process in its own process group, logging to a file.
type child struct {
	bin     string
	args    []string
	logFile string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has ended; err says how
	err     error
}

func (c *child) start() error {
	f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // #nosec G302 -- a dev process's log, read like any log
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	c.cmd = exec.Command(c.bin, c.args...) // #nosec G204 -- the dev stack's pinned binaries and arguments
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Stdout, c.cmd.Stderr = f, f
	if err := c.cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("start %s: %w", filepath.Base(c.bin), err)
	}
	exited := make(chan struct{})
	c.exited = exited
	go func() {
		c.err = c.cmd.Wait()
		_ = f.Close()
		close(exited)
	}()
	return nil
}

func (c *child) running() bool {
	if c.exited == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

func (c *child) waitPort(ctx context.Context, port int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !portOpen(port) {
		select {
		case <-c.exited:
			return fmt.Errorf("exited during start-up: %v (log %s)", c.err, c.logFile)
		case <-ctx.Done():
			return fmt.Errorf("not listening on :%d after %s (log %s)", port, timeout, c.logFile)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// whileRunning returns a context that ends when the process exits.
func (c *child) whileRunning(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (c *child) stop() {
	if !c.running() {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
}
