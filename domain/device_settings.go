package domain

import (
	"fmt"
	"time"
)

// Device dispatch settings (docs/devices.md, D2 and D3): their defaults and the one rule of
// what they may be, written once. The configuration (internal/config), the API and the
// engine read them from here, and the store applies the same rule again when a task takes
// them. No SQL column carries a default copy (migrations/00024_device_settings_from_config.sql;
// a store test checks it): a task takes the configured values when it becomes active.
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

// MinDeviceTimeout is the shortest device timeout: a task keeps it in whole milliseconds
// (tasks.device_timeout_ms, which must be positive), so anything shorter would be none.
const MinDeviceTimeout = time.Millisecond

// DeviceSettings are the execution rules a task takes when it becomes active (D3): every
// execution of it is attempted at most MaxAttempts times, each attempt timing out Timeout
// after SENT. They come from the configuration in force (TICKGATE_DEVICE_MAX_ATTEMPTS,
// TICKGATE_DEVICE_TIMEOUT), never from an earlier task.
type DeviceSettings struct {
	MaxAttempts int
	Timeout     time.Duration
}

// DefaultDeviceSettings are the settings when none is configured: 3 attempts, 20 minutes.
func DefaultDeviceSettings() DeviceSettings {
	return DeviceSettings{MaxAttempts: DefaultDeviceMaxAttempts, Timeout: DefaultDeviceTimeout}
}

// OrDefaults fills the settings left zero (a configuration built by hand) with their defaults.
func (d DeviceSettings) OrDefaults() DeviceSettings {
	if d.MaxAttempts == 0 {
		d.MaxAttempts = DefaultDeviceMaxAttempts
	}
	if d.Timeout == 0 {
		d.Timeout = DefaultDeviceTimeout
	}
	return d
}

// Validate rejects settings no task may carry (the tasks CHECKs, said in words).
func (d DeviceSettings) Validate() error {
	if err := ValidateDeviceMaxAttempts(d.MaxAttempts); err != nil {
		return err
	}
	return ValidateDeviceTimeout(d.Timeout)
}

// ValidateDeviceTimeout is Validate's rule for the timeout alone.
func ValidateDeviceTimeout(timeout time.Duration) error {
	if timeout < MinDeviceTimeout {
		return fmt.Errorf("device timeout must be at least %s, got %s", MinDeviceTimeout, timeout)
	}
	return nil
}

// ValidateDeviceMaxAttempts is Validate's rule for the attempt limit alone.
func ValidateDeviceMaxAttempts(n int) error {
	if n < 1 {
		return fmt.Errorf("device max attempts must be at least 1, got %d", n)
	}
	return nil
}
