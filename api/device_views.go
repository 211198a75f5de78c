package api

import (
	"encoding/json"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// The device dispatch resources as the API answers them (docs/devices.md), and their one set
// of converters from store rows.

// PCSlots are a PC's slots: target = min(capacity, eligible devices).
type PCSlots struct {
	Eligible int64 `json:"eligible"`
	Running  int64 `json:"running"`
	Target   int64 `json:"target"`
}

// PCView is a PC as the API answers it; GET /pcs/{name} adds its slots and devices.
type PCView struct {
	Name           string       `json:"name"`
	DeviceCapacity int32        `json:"device_capacity"`
	CreatedAt      time.Time    `json:"created_at"`
	Slots          *PCSlots     `json:"slots,omitempty"`
	Devices        []DeviceView `json:"devices,omitempty"`
}

// DeviceView is a device.
type DeviceView struct {
	Serial    string              `json:"serial"`
	PC        string              `json:"pc"`
	Status    domain.DeviceStatus `json:"status"`
	Error     string              `json:"error"`
	CreatedAt time.Time           `json:"created_at"`
	UpdatedAt time.Time           `json:"updated_at"`
}

// AbortRule stops a task early once at least MinExecuted executions are final and more
// than FailedPercent of them failed.
type AbortRule struct {
	MinExecuted   int32   `json:"min_executed"`
	FailedPercent float64 `json:"failed_percent"`
}

// DeviceTaskView is a device task; GET /tasks/{id} adds its counts and executions.
type DeviceTaskView struct {
	ID          int64                   `json:"id"`
	Payload     json.RawMessage         `json:"payload"`
	TargetCount *int32                  `json:"target_count"`
	Abort       *AbortRule              `json:"abort"`
	Status      domain.DeviceTaskStatus `json:"status"`
	Error       string                  `json:"error"`
	// MaxAttempts is the attempt limit the task took when it became active (the
	// configuration then in force); null until then.
	MaxAttempts *int32               `json:"max_attempts"`
	CreatedAt   time.Time            `json:"created_at"`
	StartedAt   *time.Time           `json:"started_at"`
	FinishedAt  *time.Time           `json:"finished_at"`
	Counts      *DeviceTaskCounts    `json:"counts,omitempty"`
	Devices     []DeviceExecutionDTO `json:"devices,omitempty"`
	// Rate and Windows bound when its executions are sent (docs/progressive.md).
	Rate    *domain.Rate    `json:"rate"`
	Windows []domain.Window `json:"windows"`
	// WaitingCause says, for the running task on GET /tasks/{id}, what holds its sends back
	// now: the freeze, its windows, its rate ("" when nothing does).
	WaitingCause string `json:"waiting_cause,omitempty"`
}

// DeviceTaskCounts are a task's executions by state.
type DeviceTaskCounts struct {
	Active    int64 `json:"active"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Canceled  int64 `json:"canceled"`
}

// DeviceExecutionDTO is one device execution (a task_device row).
type DeviceExecutionDTO struct {
	ID     int64  `json:"id"`
	TaskID int64  `json:"task_id"`
	Device string `json:"device"`
	PC     string `json:"pc"`
	// Slot is the numbered slot of its PC (1..device_capacity) the execution runs in.
	Slot        *int32                 `json:"slot"`
	Status      domain.ExecutionStatus `json:"status"`
	Attempt     int32                  `json:"attempt"`
	MaxAttempts int32                  `json:"max_attempts"`
	Error       string                 `json:"error"`
	CreatedAt   *time.Time             `json:"created_at,omitempty"`
	SentAt      *time.Time             `json:"sent_at"`
	AckedAt     *time.Time             `json:"acked_at"`
	CompletedAt *time.Time             `json:"completed_at"`
	TimeoutAt   *time.Time             `json:"timeout_at"`
	Payload     json.RawMessage        `json:"payload,omitempty"`
}

// DeviceExecutionEventView is one attempt event.
type DeviceExecutionEventView struct {
	ID          int64                     `json:"id"`
	ExecutionID int64                     `json:"task_device_id"`
	Attempt     int32                     `json:"attempt"`
	Type        domain.ExecutionEventType `json:"type"`
	Detail      string                    `json:"detail"`
	CreatedAt   time.Time                 `json:"created_at"`
}

func devUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func pcView(pc store.PC) PCView {
	return PCView{Name: pc.Name, DeviceCapacity: pc.DeviceCapacity, CreatedAt: pc.CreatedAt.UTC()}
}

func deviceView(d store.Device, pc string) DeviceView {
	return DeviceView{Serial: d.Serial, PC: pc, Status: d.Status, Error: d.Error, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

func deviceRowView(r store.DeviceRow) DeviceView {
	return DeviceView{Serial: r.Serial, PC: r.PcName, Status: r.Status, Error: r.Error, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

func deviceTaskView(t store.DeviceTask) DeviceTaskView {
	v := DeviceTaskView{
		ID: t.ID, Payload: t.Payload, TargetCount: t.TargetCount, Status: t.Status, Error: t.Error, MaxAttempts: t.MaxAttempts,
		CreatedAt: t.CreatedAt.UTC(), StartedAt: devUTC(t.StartedAt), FinishedAt: devUTC(t.FinishedAt),
	}
	if t.AbortMinExecuted != nil && t.AbortFailedPercent.Valid {
		v.Abort = &AbortRule{MinExecuted: *t.AbortMinExecuted, FailedPercent: t.AbortFailedPercent.Float64}
	}
	if len(t.Rate) > 0 {
		var r domain.Rate
		if json.Unmarshal(t.Rate, &r) == nil {
			v.Rate = &r
		}
	}
	if len(t.Windows) > 0 {
		_ = json.Unmarshal(t.Windows, &v.Windows)
	}
	return v
}

func deviceExecutionDTO(td store.DeviceExecutionView) DeviceExecutionDTO {
	created := td.CreatedAt.UTC()
	return DeviceExecutionDTO{
		ID: td.ID, TaskID: td.TaskID, Device: td.DeviceSerial, PC: td.PcName, Slot: td.Slot, Status: td.Status, Attempt: td.Attempt,
		MaxAttempts: td.MaxAttempts, Error: td.Error, CreatedAt: &created, SentAt: devUTC(td.SentAt), AckedAt: devUTC(td.AckedAt),
		CompletedAt: devUTC(td.CompletedAt), TimeoutAt: devUTC(td.TimeoutAt),
	}
}

func claimedView(pc string, cmd store.ClaimedCommand) DeviceExecutionDTO {
	return DeviceExecutionDTO{
		ID: cmd.ID, TaskID: cmd.TaskID, Device: cmd.DeviceSerial, PC: pc, Slot: &cmd.Slot, Status: domain.ExecutionSent, Attempt: cmd.Attempt,
		MaxAttempts: cmd.MaxAttempts, SentAt: devUTC(cmd.SentAt), TimeoutAt: devUTC(cmd.TimeoutAt), Payload: cmd.Payload,
	}
}

func deviceExecutionEventView(e store.DeviceExecutionEvent) DeviceExecutionEventView {
	return DeviceExecutionEventView{
		ID: e.ID, ExecutionID: e.ExecutionID, Attempt: e.Attempt, Type: e.Type, Detail: e.Detail, CreatedAt: e.CreatedAt.UTC(),
	}
}
