// Package starter starts, signals, updates and queries tickgate's workflows with the right
// ids, options and search attributes: the one place that knows how they are reached. The
// API process uses it (schedule commands, rollouts, the device engine's nudges and PC timer
// alarms), the worker starts its singletons through it and fills the activities' small
// interfaces with it, and `tickgate versions` (an operator command of the server binary,
// cmd/tickgate, not of the API client) reads its change report; the test stack and the
// benchmarks start the same way. The CLI (package cli) never reaches Temporal: it talks to
// the API over HTTP through package client.
package starter

import (
	"go.temporal.io/sdk/client"
)

// Starter wraps the Temporal client with tickgate's workflow ids and options.
type Starter struct {
	Client    client.Client
	TaskQueue string
	// ResidentSchedules (TICKGATE_SCHEDULES_RESIDENT): schedules' workflows stay open at
	// rest, so a wake is signalled to the open run (WakeSchedule).
	ResidentSchedules bool
}
