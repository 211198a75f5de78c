package workflows

import (
	"encoding/json"
	"time"

	"github.com/tickgate/tickgate/domain"
)

// ScheduleWorkflowType is the registered name of the schedule workflow.
const ScheduleWorkflowType = "ScheduleWorkflow"

// Signal and update names of ScheduleWorkflow. Other services may send them as signals
// (fire and forget) or updates (answered once the workflow has decided them); the workflow
// decides both alike, in the order they arrived, and the result is mirrored in Postgres.
const (
	SchedulePause   = "pause"   // payload PauseRequest
	ScheduleResume  = "resume"  // payload ResumeRequest (optional)
	ScheduleTrigger = "trigger" // payload TriggerRequest; the update answers TriggerResult
	ScheduleRefresh = "refresh" // no payload: the definition changed in Postgres, reload it
	// ScheduleReschedule moves the next fire; payload RescheduleRequest.
	ScheduleReschedule = "reschedule"
	// ScheduleBackfill fires every tick of a past range once; payload BackfillRequest, the
	// update answers BackfillResult.
	ScheduleBackfill = "backfill"
	// ScheduleDescribe is the query answering ScheduleDescription.
	ScheduleDescribe = "describe"
)

// ScheduleWorkflowID is the one workflow id of a schedule (domain.ScheduleWorkflowID).
func ScheduleWorkflowID(name string) string { return domain.ScheduleWorkflowID(name) }

// ScheduleInput starts (or continues) a schedule's workflow. Another service starting it
// with signal-with-start or update-with-start gives the Name alone (ScheduleID 0).
type ScheduleInput struct {
	ScheduleID int64 `json:",omitempty"`
	Name       string
	// Woken is set when the planner started the run, to decide a fire at its tick: it rests
	// as soon as it has nothing in flight. A run a command started lingers a while after it
	// (see restLinger).
	Woken bool `json:",omitempty"`
	// Carry is the state handed over by continue-as-new; nil on the first run.
	Carry *ScheduleCarry `json:",omitempty"`
	// AtRest: a resident run continued as new at rest (schedule_resident.go); it takes the
	// schedule over only when something reaches it.
	AtRest bool `json:",omitempty"`
}

// ScheduleCarry is the state a schedule keeps across continue-as-new.
type ScheduleCarry struct {
	Watermark time.Time // the newest nominal tick already processed
	Paused    bool
	Note      string
	Running   []RunningRun
	Buffer    []BufferedTick
	// LastSuccessAt is the nominal time of the newest run that succeeded (a manual run's
	// nominal time is when it was triggered); skip_if_successful compares it to the
	// previous tick.
	LastSuccessAt time.Time
	// ContinueAsNewAfter overrides how many loop iterations a run makes before it continues
	// as new (0: the default); for tests and tuning.
	ContinueAsNewAfter int `json:",omitempty"`
	// Rescheduled replaces the next natural tick when set (reschedule).
	Rescheduled *time.Time `json:",omitempty"`
	// Backfills are the ranges still to fire, oldest request first.
	Backfills []Backfill `json:",omitempty"`
	// Armed are the fires armed ahead and not yet released that the run took over from
	// the planner (see carryOf), until their release or a command's retraction.
	Armed *ArmedFire `json:",omitempty"`
}

// Backfill is a range of ticks still to fire: those after Done up to End.
type Backfill struct {
	Done    time.Time
	End     time.Time
	Overlap domain.Overlap
}

// RescheduleRequest sets the schedule's next fire time. Natural ticks before it are
// recorded SKIPPED with the reason; ticks after it follow the spec again.
type RescheduleRequest struct {
	NextRunAt time.Time `json:"next_run_at"`
}

// BackfillRequest fires every tick in [Start, End] once, in order, subject to the overlap
// policy (Overlap overrides it). Ticks that already ran are not run again.
type BackfillRequest struct {
	Start   time.Time      `json:"start"`
	End     time.Time      `json:"end"`
	Overlap domain.Overlap `json:"overlap,omitempty"`
}

// BackfillResult says how many ticks the range holds.
type BackfillResult struct {
	Ticks int `json:"ticks"`
}

// RunningRun is a run of a workflow action that has not finished.
type RunningRun struct {
	RunID       int64
	WorkflowID  string
	ScheduledAt time.Time
	// WatchFrom is set for a run whose watch has not begun: an armed allow_all run, whose
	// outcome no decision waits for, is watched from the first loop round at or after its
	// start (see watchDue) rather than from its arming.
	WatchFrom *time.Time `json:",omitempty"`
}

// BufferedTick is a tick waiting for running runs to finish (overlap buffer_one/buffer_all,
// cancel_other).
type BufferedTick struct {
	Tick    time.Time
	Trigger domain.Trigger
	Key     string
	Input   json.RawMessage `json:",omitempty"`
	// Overlap is the policy the tick was buffered under ("" in state carried from before it
	// was kept: the schedule's policy).
	Overlap domain.Overlap `json:",omitempty"`
}

// PauseRequest pauses a schedule with an operator's note. Identity says who asks, for the
// schedule's history (the API gives the token's name; another service its own name; none:
// the door, "signal" or "update").
type PauseRequest struct {
	Note     string `json:"note"`
	Identity string `json:"identity,omitempty"`
}

// ResumeRequest resumes a schedule, saying why (Note) and who asks (Identity), for the
// schedule's history. Both are optional: a resume may carry no payload at all.
type ResumeRequest struct {
	Note     string `json:"note,omitempty"`
	Identity string `json:"identity,omitempty"`
}

// TriggerRequest fires a schedule now. RequestID makes a retried trigger idempotent (the
// API sets it; a signal without one gets a fresh id); Overlap overrides the schedule's
// policy for this run; Input overrides the workflow action's input.
type TriggerRequest struct {
	RequestID string          `json:"request_id,omitempty"`
	Overlap   domain.Overlap  `json:"overlap,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// TriggerResult is the run a trigger recorded.
type TriggerResult struct {
	RunID       int64            `json:"run_id"`
	Status      domain.RunStatus `json:"status"`
	Reason      string           `json:"reason,omitempty"`
	ScheduledAt time.Time        `json:"scheduled_at"`
	// existed marks a tick recorded before (a retry, or a backfill of a tick that ran).
	existed bool
	// workflowID is the run's target workflow id as recorded.
	workflowID string
}

// ScheduleDescription answers the describe query.
type ScheduleDescription struct {
	Name       string       `json:"name"`
	Paused     bool         `json:"paused"`
	Note       string       `json:"note,omitempty"`
	Watermark  time.Time    `json:"watermark"`
	NextFireAt *time.Time   `json:"next_fire_at,omitempty"`
	Running    []RunningRun `json:"running"`
	Buffered   int          `json:"buffered"`
	Backfills  int          `json:"backfills"`
	Version    int64        `json:"version"`
	// Changed, in the answer of a pause or resume, says whether that command changed the
	// paused state (false: the schedule was in that state already, and nothing changed).
	Changed bool `json:"changed,omitempty"`
	// AtRest: the workflow is resident (TICKGATE_SCHEDULES_RESIDENT) and its schedule at
	// rest: the planner arms its fires, the run watchers watch its runs (running lists none),
	// and the watermark is the planner's.
	AtRest bool `json:"at_rest,omitempty"`
}
