package domain

// TaskRunStatus is the status of a rollout's task run (task_runs.status).
type TaskRunStatus string

// Task run statuses. A new rollout's tasks start PENDING.
const (
	TaskRunPending   TaskRunStatus = "PENDING"
	TaskRunAvailable TaskRunStatus = "AVAILABLE"
	TaskRunRunning   TaskRunStatus = "RUNNING"
	TaskRunDone      TaskRunStatus = "DONE"
	TaskRunFailed    TaskRunStatus = "FAILED"
	TaskRunCanceled  TaskRunStatus = "CANCELED"
	TaskRunSkipped   TaskRunStatus = "SKIPPED"
)

// TaskRunStatuses lists every task run status, in lifecycle order.
var TaskRunStatuses = []TaskRunStatus{TaskRunPending, TaskRunAvailable, TaskRunRunning, TaskRunDone, TaskRunFailed, TaskRunCanceled, TaskRunSkipped}

// RolloutStatus is the status of a rollout. rollouts.status holds what an operator set
// (RUNNING, PAUSED, CANCELED); the rollout_summaries view derives the status users see from
// it and the tasks (those three, DONE and FAILED) — the one definition, read by the store,
// the API, the CLI and the dashboard.
type RolloutStatus string

// Rollout statuses.
const (
	RolloutRunning  RolloutStatus = "RUNNING"
	RolloutPaused   RolloutStatus = "PAUSED"
	RolloutCanceled RolloutStatus = "CANCELED"
	// RolloutDone and RolloutFailed are only derived (never stored in rollouts.status).
	RolloutDone   RolloutStatus = "DONE"
	RolloutFailed RolloutStatus = "FAILED"
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
