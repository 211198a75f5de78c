package store

import (
	"errors"

	"github.com/tickgate/tickgate/store/dbgen"
)

// Device dispatch rows (docs/devices.md). The engine's SQL is split by concern: PCs and their
// devices (devices_pcs.go), the task queue and its single active task (devices_tasks.go),
// executions and their attempts (devices_executions.go), the group commit of agents'
// results (devices_results.go), filling slots (devices_refill.go), and the component that
// advances the active task off the request path (devices_advancer.go). The API process's
// listening connection (listener.go) wakes agents' long-polls and keeps its token cache.
type (
	PC                   = dbgen.Pc
	Device               = dbgen.Device
	DeviceTask           = dbgen.Task
	DeviceExecution      = dbgen.DeviceExecution
	DeviceExecutionView  = dbgen.GetDeviceExecutionViewRow
	DeviceExecutionEvent = dbgen.DeviceExecutionEvent
	PCSummary            = dbgen.PcDeviceSummary
	// ClaimedCommand is an attempt handed to an agent: SENT, its deadline started, with
	// its task's payload (and its PC's id).
	ClaimedCommand = dbgen.ClaimDeviceExecutionsRow
)

// ErrNotInFlight is returned when an ack or result names an attempt that is no longer out
// on the device (it timed out, was canceled, or a newer attempt was sent): HTTP 409.
var ErrNotInFlight = errors.New("attempt is not in flight")
