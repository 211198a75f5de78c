package domain

// TaskStatus is the status of a rollout's task run (task_runs.status).
type TaskStatus string

// Task run statuses.
const (
	TaskNotStarted TaskStatus = "NOT_STARTED"
	TaskPending    TaskStatus = "PENDING"
	TaskAvailable  TaskStatus = "AVAILABLE"
	TaskRunning    TaskStatus = "RUNNING"
	TaskDone       TaskStatus = "DONE"
	TaskFailed     TaskStatus = "FAILED"
	TaskCanceled   TaskStatus = "CANCELED"
	TaskSkipped    TaskStatus = "SKIPPED"
)

// TaskStatuses lists every task run status, in lifecycle order.
var TaskStatuses = []TaskStatus{TaskNotStarted, TaskPending, TaskAvailable, TaskRunning, TaskDone, TaskFailed, TaskCanceled, TaskSkipped}

// RolloutStatus is the status of a rollout (rollouts.status).
type RolloutStatus string

// Rollout statuses.
const (
	RolloutRunning  RolloutStatus = "RUNNING"
	RolloutPaused   RolloutStatus = "PAUSED"
	RolloutCanceled RolloutStatus = "CANCELED"
)

// TaskType is what a task run changes on its database; DDL and SDL are sequential (R1).
type TaskType string

// Task types.
const (
	TaskDDL   TaskType = "DDL"
	TaskSDL   TaskType = "SDL"
	TaskDML   TaskType = "DML"
	TaskOther TaskType = "OTHER"
)

// TaskTypes lists every task type.
var TaskTypes = []TaskType{TaskDDL, TaskSDL, TaskDML, TaskOther}

// Valid reports whether t is one of TaskTypes.
func (t TaskType) Valid() bool {
	for _, v := range TaskTypes {
		if t == v {
			return true
		}
	}
	return false
}

// Sequential reports whether at most one task of this type may be active per database (R1).
func (t TaskType) Sequential() bool { return t == TaskDDL || t == TaskSDL }
