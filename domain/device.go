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

// TaskDeviceEventType is the type of one attempt event (task_device_events.type).
type TaskDeviceEventType string

// Execution event types: one per status an attempt enters, and FAILED, TIMEOUT (an attempt
// that failed or timed out, before its retry or final failure) and LATE_RESULT (a result
// for an attempt no longer in flight).
const (
	EvCreated        TaskDeviceEventType = "CREATED"
	EvSent           TaskDeviceEventType = "SENT"
	EvAcked          TaskDeviceEventType = "ACKED"
	EvSucceeded      TaskDeviceEventType = "SUCCEEDED"
	EvFailed         TaskDeviceEventType = "FAILED"
	EvTimeout        TaskDeviceEventType = "TIMEOUT"
	EvRetryScheduled TaskDeviceEventType = "RETRY_SCHEDULED"
	EvFailedFinal    TaskDeviceEventType = "FAILED_FINAL"
	EvCancelled      TaskDeviceEventType = "CANCELLED"
	EvLateResult     TaskDeviceEventType = "LATE_RESULT"
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
