package store

import (
	"context"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store/dbgen"
)

// EngineHealth are the figures the shipped alerts watch (deploy/observability): whether
// workers live, whether the planner and the release keep up, the dead letter, device
// timeouts and errors, and rollouts paused by their health checks. Read at scrape time, the
// same on every API replica.
type EngineHealth struct {
	// WorkersAlive counts the worker processes alive by worker_liveness: beating within
	// LivenessGrace.
	WorkersAlive int64
	// PlannerLag is how long the oldest schedule at rest whose plan_at has come has waited
	// for a planner round; 0 when none waits.
	PlannerLag time.Duration
	// ReleaseLag is how long the oldest armed fire whose visible time has come has waited
	// for its release; 0 when none waits.
	ReleaseLag time.Duration
	// DeadLetter counts the FAILED runs of http and workflow actions (ListDeadLetter's rows).
	DeadLetter int64
	// DeviceTimeouts counts the device attempts that ever timed out (TIMEOUT events).
	DeviceTimeouts int64
	// Devices counts devices by status, every status present.
	Devices []StatusCount
	// PausedRollouts counts the paused rollouts by cause (PausedBy*), every cause present.
	PausedRollouts []StatusCount
}

// Why a rollout is paused, as EngineHealth counts them.
const (
	PausedByHealth = domain.WaveFailureHealth // its open wave's health checks failed
	PausedByTasks  = domain.WaveFailureTasks  // its open wave's tasks failed
	PausedByOther  = "other"                  // an operator paused it, or its abort threshold did
)

// deviceStatuses are the statuses a device may have.
var deviceStatuses = []domain.DeviceStatus{domain.DeviceOnline, domain.DeviceOffline, domain.DeviceError}

// PausedCauses lists every cause of a pause EngineHealth counts.
var PausedCauses = []string{PausedByHealth, PausedByTasks, PausedByOther}

// ReadEngineHealth reads EngineHealth.
func (s *Store) ReadEngineHealth(ctx context.Context) (EngineHealth, error) {
	row, err := s.Q.EngineHealth(ctx, LivenessGrace.Seconds())
	if err != nil {
		return EngineHealth{}, fmt.Errorf("engine health: %w", mapErr(err))
	}
	h := EngineHealth{
		WorkersAlive: row.WorkersAlive, DeadLetter: row.DeadLetter, DeviceTimeouts: row.DeviceTimeouts,
		PlannerLag: seconds(row.PlannerLagS), ReleaseLag: seconds(row.ReleaseLagS),
	}
	devices, err := s.Q.DeviceStatusCounts(ctx)
	if err != nil {
		return EngineHealth{}, fmt.Errorf("devices by status: %w", mapErr(err))
	}
	h.Devices = zeroFilled(deviceStatuses, devices, func(r dbgen.DeviceStatusCountsRow) (string, int64) { return r.Status, r.N })
	causes, err := s.Q.PausedRolloutCauses(ctx)
	if err != nil {
		return EngineHealth{}, fmt.Errorf("paused rollouts by cause: %w", mapErr(err))
	}
	h.PausedRollouts = zeroFilled(PausedCauses, causes, func(r dbgen.PausedRolloutCausesRow) (string, int64) { return r.Cause, r.N })
	return h, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
