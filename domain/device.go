package domain

// ExecutionStatus is the status of one device execution (task_devices.status).
type ExecutionStatus string

// Execution statuses. The first four hold one of the PC's slots; the last three are final.
const (
	ExecutionCreated        ExecutionStatus = "CREATED"
	ExecutionSent           ExecutionStatus = "SENT"
	ExecutionAcked          ExecutionStatus = "ACKED"
	ExecutionRetryScheduled ExecutionStatus = "RETRY_SCHEDULED"
	ExecutionSucceeded      ExecutionStatus = "SUCCEEDED"
	ExecutionFailedFinal    ExecutionStatus = "FAILED_FINAL"
	ExecutionCanceled       ExecutionStatus = "CANCELED"
)

// ExecutionFinal reports whether an execution status is final.
func ExecutionFinal(s ExecutionStatus) bool {
	return s == ExecutionSucceeded || s == ExecutionFailedFinal || s == ExecutionCanceled
}

// ExecutionEventType is the type of one attempt event (task_device_events.type).
type ExecutionEventType string

// Execution event types: one per status an attempt enters, and FAILED, TIMEOUT (an attempt
// that failed or timed out, before its retry or final failure) and LATE_RESULT (a result
// for an attempt no longer in flight).
const (
	EvCreated        ExecutionEventType = "CREATED"
	EvSent           ExecutionEventType = "SENT"
	EvAcked          ExecutionEventType = "ACKED"
	EvSucceeded      ExecutionEventType = "SUCCEEDED"
	EvFailed         ExecutionEventType = "FAILED"
	EvTimeout        ExecutionEventType = "TIMEOUT"
	EvRetryScheduled ExecutionEventType = "RETRY_SCHEDULED"
	EvFailedFinal    ExecutionEventType = "FAILED_FINAL"
	EvCanceled       ExecutionEventType = "CANCELED"
	EvLateResult     ExecutionEventType = "LATE_RESULT"
)

// DeviceStatus is a device's status (devices.status).
type DeviceStatus string

// Device statuses: online devices are the eligible set (devices.eligible); error is set by
// a FAILED_FINAL execution and cleared only by an operator.
const (
	DeviceOnline  DeviceStatus = "online"
	DeviceOffline DeviceStatus = "offline"
	DeviceError   DeviceStatus = "error"
)

// DeviceTaskStatus is a device task's status (tasks.status); the one running task is the
// active one (D1).
type DeviceTaskStatus string

// Device task statuses.
const (
	DeviceTaskPending  DeviceTaskStatus = "pending"
	DeviceTaskRunning  DeviceTaskStatus = "running"
	DeviceTaskSuccess  DeviceTaskStatus = "success"
	DeviceTaskFailed   DeviceTaskStatus = "failed"
	DeviceTaskCanceled DeviceTaskStatus = "canceled"
)
