// Package starter starts and signals tickgate's workflows with the right ids and options;
// the API and the CLI reach Temporal only through it.
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
