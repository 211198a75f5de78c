package domain

import "time"

// Device dispatch defaults (docs/spec.md, D2 and D3), defined once: the configuration,
// the API and the engine read them from here, and a store test pins the SQL column
// defaults of migrations/00003_devices.sql to them.
const (
	// DefaultDeviceTimeout is how long after SENT an attempt may run before it times out
	// (TICKGATE_DEVICE_TIMEOUT unset).
	DefaultDeviceTimeout = 20 * time.Minute
	// DefaultDeviceMaxAttempts is how many times one device execution is attempted
	// (TICKGATE_DEVICE_MAX_ATTEMPTS unset).
	DefaultDeviceMaxAttempts = 3
	// DefaultDeviceCapacity is a PC's slots when POST /pcs names no device_capacity.
	DefaultDeviceCapacity = 20
	// MaxDeviceCapacity is the largest device_capacity a PC may have (the pcs CHECK).
	MaxDeviceCapacity = 1000
)
