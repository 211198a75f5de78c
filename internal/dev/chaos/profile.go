// Package chaos runs tickgate on a real local stack under a mixed load while it kills and
// restarts its processes and servers, and checks the invariants of docs/spec.md (S1–S2,
// R1–R4, D1–D3) against the database throughout and at the end. `make chaos` runs the full
// profile; the short profile is part of `make test` (e2e/chaos_test.go).
package chaos

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Profile sizes a run: the load, the faults and how long the faults go on.
type Profile struct {
	Name string
	// FaultPhase is how long faults are injected while the load runs.
	FaultPhase time.Duration

	// Schedules: EventSchedules fire every second with an event action; WorkflowSchedules
	// fire every WorkflowEvery with a workflow action whose runs last TargetMin..TargetMax,
	// cycling through the overlap policies, so runs often overlap and the policies act. Under
	// buffer_one and buffer_all the runs last at most BufferedTargetMax: a buffering schedule
	// whose runs (plus the start and the wait) outlast its interval grows its buffer without
	// end, and there it is the faults that make runs overlap. Under load a run takes 1.5-3 s
	// more than its target sleeps (its start, its wait and the next fire are each a round
	// trip through Temporal), hence the five-second interval.
	EventSchedules    int
	WorkflowSchedules int
	WorkflowEvery     time.Duration
	TargetMin         time.Duration
	TargetMax         time.Duration
	BufferedTargetMax time.Duration
	CatchupWindow     time.Duration
	// HTTPSchedules fire every HTTPEvery with an http action at the run's own receiver
	// (internal/dev/receiver), which fails some first attempts (503, 429 with Retry-After,
	// an answer slower than the action's timeout) so retries happen under the faults; the
	// checker holds each tick to one key executed once.
	HTTPSchedules int
	HTTPEvery     time.Duration

	// RestingSchedules fire every RestingEvery (more than the three minutes after which a
	// workflow may rest) with a workflow action, half under skip and half under allow_all:
	// the planner arms their fires while they rest, and a manual trigger sent every
	// TriggerEvery during the faults (to each in turn) wakes one, whose workflow takes it
	// over, watches its runs and rests again — the handovers the faults must not break.
	RestingSchedules int
	RestingEvery     time.Duration
	TriggerEvery     time.Duration

	// CappedSchedules fire every CappedEvery a workflow action whose runs last
	// CappedTargetMin..CappedTargetMax, under allow_all with max_concurrent CappedMax (half
	// buffering a tick that finds the cap full, half skipping it), and take manual triggers
	// and a backfill during the faults (capped.go).
	CappedSchedules int
	CappedEvery     time.Duration
	CappedMax       int
	CappedTargetMin time.Duration
	CappedTargetMax time.Duration

	// CommandSchedules are paused, resumed and triggered by two clients each throughout the
	// faults, every command with a request id, and read back (commands.go); they fire every
	// CommandEvery. ExternalTasks are a rollout's tasks run by two executors in the run that
	// report their results through the API, sometimes both at once (external.go). Their
	// histories, and the agents', are checked for linearizability (histories/).
	CommandSchedules int
	CommandEvery     time.Duration
	ExternalTasks    int

	// Rollout: RolloutTasks over RolloutDatabases, DDL and DML, with ParallelLimit.
	RolloutTasks     int
	RolloutDatabases int
	ParallelLimit    int

	// The progressive scenario (waves.go): WaveDatabases tenant databases migrated in three
	// waves, WaveTasks DDL tasks of WaveTaskSleep each per database, WaveBake between the
	// waves; wave 2's health check fails. 0 databases: no such rollout.
	WaveDatabases int
	WaveTasks     int
	WaveTaskSleep time.Duration
	WaveBake      time.Duration

	// Devices: PCs × DevicesPerPC devices, DeviceTasks tasks queued at once; the agent
	// simulator answers after DeviceLatency (+ up to as much jitter), fails FailRate of the
	// commands and never answers NoAnswerRate of them, which time out after DeviceTimeout.
	PCs           int
	DevicesPerPC  int
	DeviceTasks   int
	DeviceLatency time.Duration
	DeviceTimeout time.Duration
	FailRate      float64
	NoAnswerRate  float64

	// Faults injected during FaultPhase.
	WorkerKills      int
	PostgresRestarts int
	TemporalRestarts int
	APIKills         int
	// RestartsFrom places the server restarts: PostgreSQL's at this fraction of the fault
	// phase, the API kill and Temporal's each RestartsStep later.
	RestartsFrom, RestartsStep float64

	// Network faults (wire.go, faults_wire.go), on a track of their own from WireFrom into
	// the fault phase, one after another, each lifted after its hold and the next waiting for
	// the steady state (and at least WireGap): latency of Latency ± Jitter on every link for
	// LatencyFor; a bandwidth limit of BandwidthKBps per connection for BandwidthFor; a
	// blackhole of every link to PostgreSQL, later of every link to Temporal, each for
	// BlackholeMin..BlackholeMax; one worker cut from PostgreSQL but not from Temporal for
	// SplitFor, and then one cut from Temporal but not from PostgreSQL; ConnectionResets
	// rounds of resetting every connection. WireFrom 0: no network faults.
	WireFrom, WireGap          time.Duration
	LatencyFor                 time.Duration
	Latency, Jitter            time.Duration
	BandwidthFor               time.Duration
	BandwidthKBps              int
	BlackholeMin, BlackholeMax time.Duration
	SplitFor                   time.Duration
	ConnectionResets           int

	// Settle bounds the wait, after the faults, for every tick, task run and device
	// execution to reach its final state.
	Settle time.Duration
}

// Full is `make chaos`: the load and faults.
var Full = Profile{
	Name: "full", FaultPhase: 12 * time.Minute,
	EventSchedules: 200, WorkflowSchedules: 20, WorkflowEvery: 5 * time.Second,
	RestingSchedules: 8, RestingEvery: 4 * time.Minute, TriggerEvery: 10 * time.Second,
	TargetMin: 200 * time.Millisecond, TargetMax: 8 * time.Second, BufferedTargetMax: time.Second, CatchupWindow: 10 * time.Minute,
	HTTPSchedules: 10, HTTPEvery: 5 * time.Second,
	CommandSchedules: 4, CommandEvery: 20 * time.Second, ExternalTasks: 60,
	CappedSchedules: 4, CappedEvery: 2 * time.Second, CappedMax: 2, CappedTargetMin: time.Second, CappedTargetMax: 5 * time.Second,
	RolloutTasks: 2000, RolloutDatabases: 20, ParallelLimit: 25,
	WaveDatabases: 9, WaveTasks: 3, WaveTaskSleep: 5 * time.Second, WaveBake: time.Minute,
	PCs: 10, DevicesPerPC: 25, DeviceTasks: 4, DeviceLatency: 500 * time.Millisecond, DeviceTimeout: 15 * time.Second,
	FailRate: 0.10, NoAnswerRate: 0.05,
	WorkerKills: 20, PostgresRestarts: 1, TemporalRestarts: 1, APIKills: 1,
	RestartsFrom: 0.80, RestartsStep: 0.06,
	WireFrom: 20 * time.Second, WireGap: 15 * time.Second,
	LatencyFor: 2 * time.Minute, Latency: 200 * time.Millisecond, Jitter: 150 * time.Millisecond,
	BandwidthFor: 45 * time.Second, BandwidthKBps: 64,
	BlackholeMin: 30 * time.Second, BlackholeMax: 90 * time.Second,
	SplitFor: 45 * time.Second, ConnectionResets: 1,
	Settle: 10 * time.Minute,
}

// Short is the same run scaled to a few minutes, for `make test`.
var Short = Profile{
	Name: "short", FaultPhase: 3 * time.Minute,
	EventSchedules: 20, WorkflowSchedules: 6, WorkflowEvery: 5 * time.Second,
	RestingSchedules: 2, RestingEvery: 4 * time.Minute, TriggerEvery: 15 * time.Second,
	TargetMin: 200 * time.Millisecond, TargetMax: 8 * time.Second, BufferedTargetMax: time.Second, CatchupWindow: 10 * time.Minute,
	HTTPSchedules: 4, HTTPEvery: 5 * time.Second,
	CommandSchedules: 2, CommandEvery: 20 * time.Second, ExternalTasks: 20,
	CappedSchedules: 2, CappedEvery: 2 * time.Second, CappedMax: 2, CappedTargetMin: time.Second, CappedTargetMax: 5 * time.Second,
	RolloutTasks: 200, RolloutDatabases: 5, ParallelLimit: 10,
	WaveDatabases: 6, WaveTasks: 3, WaveTaskSleep: 4 * time.Second, WaveBake: 15 * time.Second,
	PCs: 2, DevicesPerPC: 25, DeviceTasks: 2, DeviceLatency: 300 * time.Millisecond, DeviceTimeout: 4 * time.Second,
	FailRate: 0.10, NoAnswerRate: 0.05,
	WorkerKills: 4, PostgresRestarts: 1, TemporalRestarts: 1, APIKills: 1,
	RestartsFrom: 0.85, RestartsStep: 0.05,
	WireFrom: 5 * time.Second, WireGap: 5 * time.Second,
	LatencyFor: 15 * time.Second, Latency: 200 * time.Millisecond, Jitter: 150 * time.Millisecond,
	BandwidthFor: 10 * time.Second, BandwidthKBps: 64,
	BlackholeMin: 15 * time.Second, BlackholeMax: 20 * time.Second,
	SplitFor: 10 * time.Second, ConnectionResets: 1,
	Settle: 5 * time.Minute,
}

// ProfileByName returns Full or Short.
func ProfileByName(name string) (Profile, error) {
	switch name {
	case Full.Name:
		return Full, nil
	case Short.Name:
		return Short, nil
	}
	return Profile{}, fmt.Errorf("unknown profile %q: want %q or %q", name, Full.Name, Short.Name)
}

// Faults is how many faults the profile injects: its process faults and its network faults.
func (p Profile) Faults() int {
	return p.WorkerKills + p.PostgresRestarts + p.TemporalRestarts + p.APIKills + len(planWire(p, rand.New(rand.NewPCG(1, 1)))) // #nosec G404 -- counts the plan's faults; the draws do not change how many
}
