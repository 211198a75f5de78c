package domain

// TaskDeviceStatus is the status of one device execution (task_devices.status).
type TaskDeviceStatus string

// Execution statuses. The first four hold one of the PC's slots; the last three are final.
const (
	TDCreated        TaskDeviceStatus = "CREATED"
	TDSent           TaskDeviceStatus = "SENT"
	TDAcked          TaskDeviceStatus = "ACKED"
	TDRetryScheduled TaskDeviceStatus = "RETRY_SCHEDULED"
	TDSucceeded      TaskDeviceStatus = "SUCCEEDED"
	TDFailedFinal    TaskDeviceStatus = "FAILED_FINAL"
	TDCancelled      TaskDeviceStatus = "CANCELLED"
)

// TDFinal reports whether an execution status is final.
func TDFinal(s TaskDeviceStatus) bool {
	return s == TDSucceeded || s == TDFailedFinal || s == TDCancelled
}

// Execution event types (task_device_events.type) beyond the statuses above.
const (
	EvFailed     = "FAILED"
	EvTimeout    = "TIMEOUT"
	EvLateResult = "LATE_RESULT"
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
	DevTaskPending   DeviceTaskStatus = "pending"
	DevTaskRunning   DeviceTaskStatus = "running"
	DevTaskSuccess   DeviceTaskStatus = "success"
	DevTaskFailed    DeviceTaskStatus = "failed"
	DevTaskCancelled DeviceTaskStatus = "cancelled"
)
