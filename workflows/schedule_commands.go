package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
)

// The rules of the schedule commands, written once. Every door calls them: the HTTP API
// (with its clock) before it sends a command, the update validators of ScheduleWorkflow and
// its loop, which decides every command (with the workflow's clock), and so the CLI, which
// speaks HTTP. A
// command refused at one door is refused at every door, with the same field and words.

// Refusal kinds, the application error types a refused update fails with. The API answers
// each with its own status: RefusedInvalid and RefusedTooLarge 400, RefusedConflict 409,
// RefusedEmpty 422.
const (
	// ErrBadCommand: a command's payload is invalid; the refusal names the field.
	ErrBadCommand = "BadScheduleCommand"
	// ErrCommandConflict: the command does not fit the schedule's state (reschedule while paused).
	ErrCommandConflict = "ScheduleCommandConflict"
	// ErrBackfillTooLarge: the range holds more than MaxBackfillTicks ticks.
	ErrBackfillTooLarge = "BackfillTooLarge"
	// ErrBackfillEmpty: the spec gives no tick in the range; the reason says why.
	ErrBackfillEmpty = "BackfillEmpty"
)

// Limits of the commands' payloads.
const (
	// MaxBackfillTicks bounds one backfill request.
	MaxBackfillTicks = 10000
	// MaxPendingBackfills bounds the backfills a schedule holds at once (its workflow
	// carries each until its last tick fired): one more is refused until one is done.
	MaxPendingBackfills = 10
	// MaxPauseNote is the longest pause (or resume) note, in bytes.
	MaxPauseNote = 1000
	// MaxIdentity is the longest identity a pause or resume gives, in bytes.
	MaxIdentity = 200
	// MaxRequestID is the longest trigger request id (the API's Idempotency-Key), in bytes.
	MaxRequestID = 200
	// MaxTriggerInput is the largest input a trigger may carry, in bytes.
	MaxTriggerInput = 256 << 10
	// CommandClockSkew is how far the clock of the door that judges a command may lie from
	// the clock of the one that judged it before (the API's host, the Temporal server): a
	// reschedule up to this far in the past is still "now", a backfill's end up to this far
	// ahead is still "now". No fire happens before its tick either way (see fireNotBefore).
	CommandClockSkew = 5 * time.Second
)

// Refusal is a command refused by its rules: the field it names, why, and its kind (one of
// the Err… types above).
type Refusal struct {
	Command string `json:"command"`
	Field   string `json:"field"`
	Reason  string `json:"reason"`
	Kind    string `json:"kind"`
}

func (r *Refusal) Error() string { return r.Field + ": " + r.Reason }

// ApplicationError is the refusal as a refused update returns it: the reason as the
// message, the kind as the type, the field as the details.
func (r *Refusal) ApplicationError() error {
	return temporal.NewApplicationError(r.Reason, r.Kind, r.Field)
}

// RefusalOf reads a refusal back from an update's error (nil when err is none).
func RefusalOf(err error) *Refusal {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return nil
	}
	switch appErr.Type() {
	case ErrBadCommand, ErrCommandConflict, ErrBackfillTooLarge, ErrBackfillEmpty:
	default:
		return nil
	}
	r := &Refusal{Reason: appErr.Message(), Kind: appErr.Type()}
	if appErr.HasDetails() {
		_ = appErr.Details(&r.Field)
	}
	return r
}

func refuse(command, kind, field, format string, args ...any) *Refusal {
	return &Refusal{Command: command, Field: field, Reason: fmt.Sprintf(format, args...), Kind: kind}
}

// CommandTarget is what the rules read of the schedule a command is sent to.
type CommandTarget struct {
	Paused    bool
	Action    domain.ActionKind
	Spec      *schedulespec.Compiled // nil while a workflow has not loaded it yet
	CreatedAt time.Time
	// PendingBackfills is how many backfills the schedule holds, not yet all fired.
	PendingBackfills int
}

// CheckPause judges a pause.
func CheckPause(req PauseRequest) *Refusal {
	return checkNoteAndIdentity(SchedulePause, req.Note, req.Identity)
}

// CheckResume judges a resume.
func CheckResume(req ResumeRequest) *Refusal {
	return checkNoteAndIdentity(ScheduleResume, req.Note, req.Identity)
}

func checkNoteAndIdentity(command, note, identity string) *Refusal {
	switch {
	case len(note) > MaxPauseNote:
		return refuse(command, ErrBadCommand, "note", "must be at most %d bytes; got %d", MaxPauseNote, len(note))
	case len(identity) > MaxIdentity:
		return refuse(command, ErrBadCommand, "identity", "must be at most %d bytes; got %d", MaxIdentity, len(identity))
	}
	return nil
}

// CheckTrigger judges a trigger.
func CheckTrigger(req TriggerRequest, t CommandTarget) *Refusal {
	switch {
	case req.Overlap != "" && !req.Overlap.Valid():
		return refuse(ScheduleTrigger, ErrBadCommand, "overlap", "must be one of %s; got %q", overlapList(), req.Overlap)
	case len(req.RequestID) > MaxRequestID:
		return refuse(ScheduleTrigger, ErrBadCommand, "request_id", "must be at most %d bytes; got %d", MaxRequestID, len(req.RequestID))
	case len(req.Input) > MaxTriggerInput:
		return refuse(ScheduleTrigger, ErrBadCommand, "input", "must be at most %d bytes; got %d", MaxTriggerInput, len(req.Input))
	case len(req.Input) > 0 && t.Action != domain.ActionWorkflow:
		return refuse(ScheduleTrigger, ErrBadCommand, "input", "only a workflow action takes an input")
	}
	return nil
}

// CheckReschedule judges a reschedule at now.
func CheckReschedule(req RescheduleRequest, t CommandTarget, now time.Time) *Refusal {
	switch {
	case req.NextRunAt.IsZero():
		return refuse(ScheduleReschedule, ErrBadCommand, "next_run_at", "is required (RFC 3339)")
	case t.Paused:
		return refuse(ScheduleReschedule, ErrCommandConflict, "paused", "the schedule is paused: resume it before rescheduling")
	case req.NextRunAt.Before(now.Add(-CommandClockSkew)):
		return refuse(ScheduleReschedule, ErrBadCommand, "next_run_at",
			"%s is in the past; use trigger to fire now or backfill for past ticks", req.NextRunAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// CheckBackfill judges a backfill at now and, once the spec is known, counts the ticks the
// range holds.
func CheckBackfill(req BackfillRequest, t CommandTarget, now time.Time) (ticks int, refusal *Refusal) {
	switch {
	case req.Start.IsZero():
		return 0, refuse(ScheduleBackfill, ErrBadCommand, "start", "is required (RFC 3339)")
	case req.End.IsZero():
		return 0, refuse(ScheduleBackfill, ErrBadCommand, "end", "is required (RFC 3339)")
	case req.End.Before(req.Start):
		return 0, refuse(ScheduleBackfill, ErrBadCommand, "end", "must not be before start")
	case req.End.After(now.Add(CommandClockSkew)):
		return 0, refuse(ScheduleBackfill, ErrBadCommand, "end",
			"%s is in the future: a backfill fills past ticks", req.End.UTC().Format(time.RFC3339))
	case req.Overlap != "" && !req.Overlap.Valid():
		return 0, refuse(ScheduleBackfill, ErrBadCommand, "overlap", "must be one of %s; got %q", overlapList(), req.Overlap)
	case t.PendingBackfills >= MaxPendingBackfills:
		return 0, refuse(ScheduleBackfill, ErrCommandConflict, "backfills",
			"the schedule holds %d backfills not yet done (at most %d at once): wait for one to finish", t.PendingBackfills, MaxPendingBackfills)
	case t.Spec == nil:
		return 0, nil // not loaded yet: judged again once it is
	}
	start, end := req.Start.UTC(), req.End.UTC()
	if end.After(now) {
		end = now // within the clock skew: the ticks after now are not past yet
	}
	if end.Before(start) {
		return 0, refuse(ScheduleBackfill, ErrBadCommand, "start", "%s is in the future: a backfill fills past ticks", start.Format(time.RFC3339))
	}
	spec := t.Spec.ForBackfill(t.CreatedAt, start)
	if why := spec.NoTickReason(start, end); why != "" {
		return 0, refuse(ScheduleBackfill, ErrBackfillEmpty, "start", "nothing to backfill: %s", why)
	}
	n := spec.CountTicks(start, end, MaxBackfillTicks+1)
	if n > MaxBackfillTicks {
		return 0, refuse(ScheduleBackfill, ErrBackfillTooLarge, "end", "the range holds more than %d ticks (at most %d per backfill)", MaxBackfillTicks, MaxBackfillTicks)
	}
	return n, nil
}

// DecodeCommand reads a command's payload (a signal's, or an HTTP body) into req (a pointer to a command's struct); a
// payload that does not decode is refused like any other bad input, naming the field. Each
// field is decoded alone, so that the refusal can name it (the JSON decoder does not for a
// malformed time).
func DecodeCommand(command string, raw json.RawMessage, req any) *Refusal {
	if len(raw) == 0 || string(raw) == "null" {
		return nil // no payload: every field empty, judged by the rules
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return refuse(command, ErrBadCommand, "payload", "must be a JSON object: %v", err)
	}
	known := jsonFields(req)
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names) // the first bad field in a fixed order, so every door names the same one
	for _, name := range names {
		if !known[name] {
			return refuse(command, ErrBadCommand, name, "is not a field of the %s command", command)
		}
		one, _ := json.Marshal(map[string]json.RawMessage{name: fields[name]})
		if err := json.Unmarshal(one, req); err != nil {
			var timeErr *time.ParseError
			if errors.As(err, &timeErr) {
				return refuse(command, ErrBadCommand, name, "is not an RFC 3339 time: %q", timeErr.Value)
			}
			return refuse(command, ErrBadCommand, name, "does not decode: %v", err)
		}
	}
	return nil
}

// jsonFields names the JSON fields of the struct req points to.
func jsonFields(req any) map[string]bool {
	t := reflect.TypeOf(req).Elem()
	out := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = true
	}
	return out
}

// overlapList names the overlap policies for an error message.
func overlapList() string {
	names := make([]string, len(domain.Overlaps))
	for i, o := range domain.Overlaps {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}
