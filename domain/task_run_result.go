package domain

import "encoding/json"

// TaskRunResult is how a task run ended: its final status (DONE, FAILED or CANCELED) and
// what its executor said (Output on DONE, Error otherwise). It is the one shape of a result:
// the body of POST /task-runs/{id}/result, the payload of a rollout's task-result signal
// (with the task run's id beside it) and what the store records on the run's claim (with
// its id and attempt beside it). The activity that finishes one run keeps a recorded input
// of its own (activities.FinishInput): its JSON is in workflow histories.
type TaskRunResult struct {
	Status TaskRunStatus   `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}
