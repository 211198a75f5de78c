package domain

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tickgate/tickgate/internal/schedulespec"
)

// RunStatus is the status of a schedule run (schedule_runs.status).
type RunStatus string

// Run statuses. RUNNING and BUFFERED are the ones that are not final.
const (
	// RunBuffered is a tick waiting under an overlap policy (buffer_one, buffer_all,
	// cancel_other) for the running run to end; it becomes RUNNING when it starts, or
	// SKIPPED when a newer tick supersedes it.
	RunBuffered   RunStatus = "BUFFERED"
	RunRunning    RunStatus = "RUNNING"
	RunSucceeded  RunStatus = "SUCCEEDED"
	RunFailed     RunStatus = "FAILED"
	RunCanceled   RunStatus = "CANCELED"
	RunTerminated RunStatus = "TERMINATED"
	RunSkipped    RunStatus = "SKIPPED"
	RunMissed     RunStatus = "MISSED"
)

// Fired reports whether a run with this status started its action: not a tick that is
// still waiting (BUFFERED) or that never ran (SKIPPED, MISSED).
func (s RunStatus) Fired() bool {
	return s != RunBuffered && s != RunSkipped && s != RunMissed
}

// Final reports whether the status can no longer change.
func (s RunStatus) Final() bool { return s != RunBuffered && s != RunRunning }

// OnTimeTolerance is how late a tick may fire and still count as on time (timer, worker
// and release latency). Later than that, a tick is late: fired late while tickgate runs,
// caught up or MISSED after an outage (see the catch-up window).
const OnTimeTolerance = 10 * time.Second

// Trigger says why a run exists (schedule_runs.trigger).
type Trigger string

// Triggers of a run.
const (
	TriggerScheduled Trigger = "scheduled"
	TriggerCatchup   Trigger = "catchup"
	TriggerManual    Trigger = "manual"
	TriggerBackfill  Trigger = "backfill"
)

// Periodic reports whether the trigger is the schedule's own timing (a nominal tick, on time
// or caught up), as opposed to an operator's trigger or backfill.
func (t Trigger) Periodic() bool { return t == TriggerScheduled || t == TriggerCatchup }

// Overlap is the policy for a tick that comes while a previous run is still running; the
// values and meanings are Temporal Schedules'.
type Overlap string

// Overlap policies.
const (
	OverlapSkip           Overlap = "skip"
	OverlapBufferOne      Overlap = "buffer_one"
	OverlapBufferAll      Overlap = "buffer_all"
	OverlapCancelOther    Overlap = "cancel_other"
	OverlapTerminateOther Overlap = "terminate_other"
	OverlapAllowAll       Overlap = "allow_all"
)

// DefaultOverlap is the policy of a schedule created without one.
const DefaultOverlap = OverlapSkip

// Overlaps lists every policy, in the order the documentation gives them.
var Overlaps = []Overlap{OverlapSkip, OverlapBufferOne, OverlapBufferAll, OverlapCancelOther, OverlapTerminateOther, OverlapAllowAll}

// Valid reports whether o is one of Overlaps.
func (o Overlap) Valid() bool {
	for _, v := range Overlaps {
		if o == v {
			return true
		}
	}
	return false
}

// Buffers reports whether the policy queues a tick behind the running run.
func (o Overlap) Buffers() bool { return o == OverlapBufferOne || o == OverlapBufferAll }

// ActionKind is what a fire does.
type ActionKind string

// Action kinds.
const (
	ActionEvent    ActionKind = "event"
	ActionWorkflow ActionKind = "workflow"
	// ActionHTTP sends a signed HTTP request (domain/http_action.go); its run is a delivery
	// workflow of tickgate's own, so it fires, overlaps and is watched as a workflow run.
	ActionHTTP ActionKind = "http"
)

// Action is what a fire does: append an event, start a workflow, or send an HTTP request.
type Action struct {
	Kind         ActionKind      `json:"kind"`
	Topic        string          `json:"topic,omitempty"`
	Type         string          `json:"type,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	WorkflowType string          `json:"workflow_type,omitempty"`
	TaskQueue    string          `json:"task_queue,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	// An http action's request (see HTTPBody for how body is sent).
	URL    string `json:"url,omitempty"`
	Method string `json:"method,omitempty"`
	// Headers are the values of the request's own headers, as a create or an update gives
	// them: write-only, they are stored apart from the action (like the signing secret) and
	// the stored action keeps their names only (SplitHeaders).
	Headers map[string]string `json:"headers,omitempty"`
	// HeaderNames are the names of the headers whose values are stored: what a view shows of
	// them. In an update, a name listed here and not in Headers keeps its stored value.
	HeaderNames []string              `json:"header_names,omitempty"`
	Body        json.RawMessage       `json:"body,omitempty"`
	Timeout     schedulespec.Duration `json:"timeout,omitempty"`
	// Limits bound the deliveries to the URL's host (domain/http_limits.go).
	Limits *HostLimit `json:"limits,omitempty"`
	// AutoPause pauses the schedule after sustained failure (domain/auto_pause.go).
	AutoPause *AutoPause `json:"auto_pause,omitempty"`
}

// StartsWorkflow reports whether a fire of the action is a workflow run: a workflow action's
// target, or an http action's delivery. Such a run is RUNNING until its workflow closes, and
// the overlap policies count it.
func (a Action) StartsWorkflow() bool { return a.Kind == ActionWorkflow || a.Kind == ActionHTTP }

// Event is an event_store row (and its outbox message) appended with a fire.
type Event struct {
	Topic string
	Type  string
	Data  json.RawMessage
}

// TickKey is the idempotency key of a nominal tick: unique per (schedule, tick) (S1).
func TickKey(scheduleID int64, tick time.Time) string {
	return fmt.Sprintf("%d@%s", scheduleID, tick.UTC().Format(time.RFC3339Nano))
}

// ManualKey is the idempotency key of a manual trigger, unique per trigger request.
func ManualKey(scheduleID int64, requestID string) string {
	return fmt.Sprintf("%d@manual/%s", scheduleID, requestID)
}

// FireEvent is the event appended with a fire: an event action's own topic, type and data;
// for a workflow or http action, a schedule.fired event saying which run started when.
func FireEvent(schedule string, act Action, tick time.Time, trigger Trigger, firedAt time.Time) Event {
	if act.Kind == ActionEvent {
		return Event{Topic: act.Topic, Type: act.Type, Data: act.Data}
	}
	fields := map[string]any{
		"schedule": schedule, "scheduled_at": tick.UTC(), "fired_at": firedAt.UTC(), "trigger": trigger,
		"workflow_type": act.WorkflowType,
	}
	if act.Kind == ActionHTTP {
		delete(fields, "workflow_type")
		fields["url"] = act.URL
	}
	data, _ := json.Marshal(fields)
	return Event{Topic: DefaultEventTopic, Type: DefaultEventType, Data: data}
}
