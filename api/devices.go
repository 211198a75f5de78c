package api

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// registerDevices mounts /pcs, /devices, /tasks, /task-devices and /agent (DESIGN.md §3).
func (s *Server) registerDevices(g *echo.Group) {
	g.POST("/pcs", s.createPC)
	g.GET("/pcs", s.listPCs)
	g.GET("/pcs/:name", s.getPC)
	g.POST("/devices", s.createDevice)
	g.GET("/devices", s.listDevices)
	g.GET("/devices/:serial", s.getDevice)
	g.PATCH("/devices/:serial", s.patchDevice)
	g.POST("/tasks", s.createDevTask)
	g.GET("/tasks", s.listDevTasks)
	g.GET("/tasks/:id", s.getDevTask)
	g.GET("/tasks/:id/devices", s.listTaskDevices)
	g.POST("/tasks/:id/cancel", s.cancelDevTask)
	g.GET("/task-devices/:id", s.getTaskDevice)
	g.GET("/task-devices/:id/events", s.taskDeviceEvents)
	g.POST("/agent/pcs/:name/claim", s.agentClaim)
	g.POST("/agent/task-devices/:id/ack", s.agentAck)
	g.POST("/agent/task-devices/:id/result", s.agentResult)
}

var (
	pcNamePattern     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	devSerialPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	deviceStatusNames = map[domain.DeviceStatus]bool{domain.DeviceOnline: true, domain.DeviceBusy: true, domain.DeviceOffline: true, domain.DeviceError: true}
)

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

// DevTaskView is a device task; GET /tasks/{id} adds its counts and executions.
type DevTaskView struct {
	ID          int64                   `json:"id"`
	Payload     json.RawMessage         `json:"payload"`
	TargetCount *int32                  `json:"target_count"`
	Abort       *AbortRule              `json:"abort"`
	Status      domain.DeviceTaskStatus `json:"status"`
	Error       string                  `json:"error"`
	MaxAttempts int32                   `json:"max_attempts"`
	CreatedAt   time.Time               `json:"created_at"`
	StartedAt   *time.Time              `json:"started_at"`
	FinishedAt  *time.Time              `json:"finished_at"`
	Counts      *DevTaskCounts          `json:"counts,omitempty"`
	Devices     []TaskDeviceDTO         `json:"devices,omitempty"`
}

// DevTaskCounts are a task's executions by state.
type DevTaskCounts struct {
	Active    int64 `json:"active"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Cancelled int64 `json:"cancelled"`
}

// TaskDeviceDTO is one device execution (a task_device row).
type TaskDeviceDTO struct {
	ID          int64                   `json:"id"`
	TaskID      int64                   `json:"task_id"`
	Device      string                  `json:"device"`
	PC          string                  `json:"pc"`
	Status      domain.TaskDeviceStatus `json:"status"`
	Attempt     int32                   `json:"attempt"`
	MaxAttempts int32                   `json:"max_attempts"`
	Error       string                  `json:"error"`
	CreatedAt   *time.Time              `json:"created_at,omitempty"`
	SentAt      *time.Time              `json:"sent_at"`
	AckedAt     *time.Time              `json:"acked_at"`
	CompletedAt *time.Time              `json:"completed_at"`
	TimeoutAt   *time.Time              `json:"timeout_at"`
	Payload     json.RawMessage         `json:"payload,omitempty"`
}

// TaskDeviceEventView is one attempt event.
type TaskDeviceEventView struct {
	ID           int64     `json:"id"`
	TaskDeviceID int64     `json:"task_device_id"`
	Attempt      int32     `json:"attempt"`
	Type         string    `json:"type"`
	Detail       string    `json:"detail"`
	CreatedAt    time.Time `json:"created_at"`
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

func devTaskView(t store.DevTask) DevTaskView {
	v := DevTaskView{
		ID: t.ID, Payload: t.Payload, TargetCount: t.TargetCount, Status: t.Status, Error: t.Error, MaxAttempts: t.MaxAttempts,
		CreatedAt: t.CreatedAt.UTC(), StartedAt: devUTC(t.StartedAt), FinishedAt: devUTC(t.FinishedAt),
	}
	if t.AbortMinExecuted != nil && t.AbortFailedPercent.Valid {
		v.Abort = &AbortRule{MinExecuted: *t.AbortMinExecuted, FailedPercent: t.AbortFailedPercent.Float64}
	}
	return v
}

func taskDeviceDTO(td store.TaskDeviceView) TaskDeviceDTO {
	created := td.CreatedAt.UTC()
	return TaskDeviceDTO{
		ID: td.ID, TaskID: td.TaskID, Device: td.DeviceSerial, PC: td.PcName, Status: td.Status, Attempt: td.Attempt,
		MaxAttempts: td.MaxAttempts, Error: td.Error, CreatedAt: &created, SentAt: devUTC(td.SentAt), AckedAt: devUTC(td.AckedAt),
		CompletedAt: devUTC(td.CompletedAt), TimeoutAt: devUTC(td.TimeoutAt),
	}
}

func devPathID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, BadRequest("id", "must be a positive integer, got %q", c.Param("id"))
	}
	return id, nil
}

// devBG is a context for Temporal calls made after the SQL commit: the request may be gone,
// the nudge should still go out.
func devBG() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// nudgeDispatcher asks the dispatcher to re-check the active task. SQL already holds the
// truth, and the dispatcher's safety poll re-checks, so a failure is logged, not returned.
func (s *Server) nudgeDispatcher() {
	if s.Starter == nil {
		return
	}
	ctx, cancel := devBG()
	defer cancel()
	if err := s.Starter.CheckDispatcher(ctx); err != nil {
		s.Logf("devices: %v", err)
	}
}

// switchTaskNow runs the dispatcher's step right after a commit that may have ended the
// running task (its last execution final, an abort, a cancel), so the next task becomes
// active without waiting for a Temporal round trip, then nudges the dispatcher, which owns
// the step (its own run finds nothing left to do). The step is one serialised SQL
// transaction, so running it from here and from the dispatcher at once is safe (D1). The
// next task takes the attempt limit and device timeout the worker gave the ended one.
func (s *Server) switchTaskNow(ctx context.Context, endedTaskID int64) {
	if t, err := s.Store.GetDevTask(ctx, endedTaskID); err == nil && t.StartedAt != nil {
		adv, err := s.Store.Advance(ctx, int(t.MaxAttempts), time.Duration(t.DeviceTimeoutMs)*time.Millisecond)
		if err != nil {
			log.Printf("devices: advance after task %d: %v", endedTaskID, err)
		} else if len(adv.Activated) > 0 {
			if _, err := s.Store.RefillAll(ctx); err != nil {
				log.Printf("devices: refill after activating %v: %v", adv.Activated, err)
			}
		}
	}
	if s.Starter != nil {
		if err := s.Starter.CheckDispatcher(ctx); err != nil {
			log.Printf("devices: %v", err)
		}
	}
}

// CreatePCRequest is the body of POST /pcs.
type CreatePCRequest struct {
	Name           string `json:"name"`
	DeviceCapacity *int32 `json:"device_capacity"`
}

func (s *Server) createPC(c echo.Context) error {
	var req CreatePCRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if !pcNamePattern.MatchString(req.Name) {
		return BadRequest("name", "must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	capacity := int32(20)
	if req.DeviceCapacity != nil {
		capacity = *req.DeviceCapacity
		if capacity < 1 || capacity > 1000 {
			return BadRequest("device_capacity", "must be from 1 to 1000, got %d", capacity)
		}
	}
	pc, err := s.Store.CreatePC(c.Request().Context(), req.Name, capacity)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return Conflict("name", "pc %q already exists", req.Name)
		}
		return err
	}
	if s.Starter != nil {
		ctx, cancel := devBG()
		defer cancel()
		if err := s.Starter.RefillPC(ctx, pc.Name); err != nil {
			s.Logf("devices: %v", err)
		}
	}
	return c.JSON(http.StatusCreated, pcView(pc))
}

func (s *Server) listPCs(c echo.Context) error {
	limit, after, err := pageParams(c)
	if err != nil {
		return err
	}
	pcs, err := s.Store.ListPCs(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(pcs, limit, pcView, func(pc store.PC) string { return IntCursor(pc.ID) }))
}

func (s *Server) getPC(c echo.Context) error {
	d, err := s.Store.GetPCDetail(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	v := pcView(d.PC)
	v.Slots = &PCSlots{Eligible: d.Slots.Eligible, Running: d.Slots.Running, Target: d.Slots.Target}
	v.Devices = make([]DeviceView, 0, len(d.Devices))
	for _, dev := range d.Devices {
		v.Devices = append(v.Devices, deviceView(dev, d.PC.Name))
	}
	return c.JSON(http.StatusOK, v)
}

// CreateDeviceRequest is the body of POST /devices.
type CreateDeviceRequest struct {
	PC     string `json:"pc"`
	Serial string `json:"serial"`
}

func (s *Server) createDevice(c echo.Context) error {
	var req CreateDeviceRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if req.PC == "" {
		return BadRequest("pc", "is required")
	}
	if !devSerialPattern.MatchString(req.Serial) {
		return BadRequest("serial", "must be 1-128 characters of letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
	}
	// The device joins the PC's slots in the same transaction (refilled at once).
	dev, _, err := s.Store.CreateDevice(c.Request().Context(), req.PC, req.Serial)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrNotFound):
			return NewProblem(http.StatusNotFound, "pc", "pc %q not found", req.PC)
		case errors.Is(err, store.ErrConflict):
			return Conflict("serial", "device %q already exists", req.Serial)
		}
		return err
	}
	return c.JSON(http.StatusCreated, deviceView(dev, req.PC))
}

func (s *Server) listDevices(c echo.Context) error {
	limit, after, err := pageParams(c)
	if err != nil {
		return err
	}
	rows, err := s.Store.ListDevices(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(rows, limit, func(r store.DeviceRow) DeviceView {
		return DeviceView{Serial: r.Serial, PC: r.PcName, Status: r.Status, Error: r.Error,
			CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	}, func(r store.DeviceRow) string { return IntCursor(r.ID) }))
}

func (s *Server) deviceWithPC(ctx context.Context, d store.Device) (DeviceView, error) {
	pc, err := s.Store.Q.GetPCByID(ctx, d.PcID)
	if err != nil {
		return DeviceView{}, err
	}
	return deviceView(d, pc.Name), nil
}

func (s *Server) getDevice(c echo.Context) error {
	d, err := s.Store.GetDevice(c.Request().Context(), c.Param("serial"))
	if err != nil {
		return err
	}
	v, err := s.deviceWithPC(c.Request().Context(), d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// PatchDeviceRequest is the body of PATCH /devices/{serial}.
type PatchDeviceRequest struct {
	Status domain.DeviceStatus `json:"status"`
}

func (s *Server) patchDevice(c echo.Context) error {
	var req PatchDeviceRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if !deviceStatusNames[req.Status] {
		return BadRequest("status", "must be online, busy, offline or error, got %q", req.Status)
	}
	// Applied to the PC's slots in the same transaction: an execution on a device that left
	// the eligible set is cancelled, free slots are refilled.
	d, _, err := s.Store.SetDeviceStatus(c.Request().Context(), c.Param("serial"), req.Status, "set by operator")
	if err != nil {
		return err
	}
	s.nudgeDispatcher() // a cancelled execution may have been the task's last
	v, err := s.deviceWithPC(c.Request().Context(), d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// CreateDevTaskRequest is the body of POST /tasks.
type CreateDevTaskRequest struct {
	Payload     json.RawMessage `json:"payload"`
	TargetCount *int32          `json:"target_count"`
	Abort       *AbortRule      `json:"abort"`
}

func (s *Server) createDevTask(c echo.Context) error {
	var req CreateDevTaskRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	nt := store.NewDevTask{Payload: req.Payload, TargetCount: req.TargetCount}
	if len(req.Payload) > 0 && string(req.Payload) != "null" {
		var v any
		if err := json.Unmarshal(req.Payload, &v); err != nil {
			return BadRequest("payload", "must be JSON")
		}
	} else {
		nt.Payload = json.RawMessage(`{}`)
	}
	if req.TargetCount != nil && *req.TargetCount < 1 {
		return BadRequest("target_count", "must be at least 1, got %d", *req.TargetCount)
	}
	if req.Abort != nil {
		if req.Abort.MinExecuted < 1 {
			return BadRequest("abort.min_executed", "must be at least 1, got %d", req.Abort.MinExecuted)
		}
		if req.Abort.FailedPercent < 0 || req.Abort.FailedPercent >= 100 {
			return BadRequest("abort.failed_percent", "must be from 0 to below 100, got %g", req.Abort.FailedPercent)
		}
		nt.AbortMinExecuted, nt.AbortFailedPercent = &req.Abort.MinExecuted, &req.Abort.FailedPercent
	}
	t, err := s.Store.CreateDevTask(c.Request().Context(), nt)
	if err != nil {
		return err
	}
	s.nudgeDispatcher()
	return c.JSON(http.StatusCreated, devTaskView(t))
}

func (s *Server) listDevTasks(c echo.Context) error {
	limit, after, err := pageParams(c)
	if err != nil {
		return err
	}
	ts, err := s.Store.ListDevTasks(c.Request().Context(), after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(ts, limit, devTaskView, func(t store.DevTask) string { return IntCursor(t.ID) }))
}

// maxTaskDevicesShown caps the executions GET /tasks/{id} lists.
const maxTaskDevicesShown = 5000

func (s *Server) getDevTask(c echo.Context) error {
	id, err := devPathID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.Store.GetDevTask(ctx, id)
	if err != nil {
		return err
	}
	counts, err := s.Store.DevTaskCounts(ctx, id)
	if err != nil {
		return err
	}
	v := devTaskView(t)
	v.Counts = &DevTaskCounts{Active: counts.Active, Succeeded: counts.Succeeded, Failed: counts.Failed, Cancelled: counts.Cancelled}
	v.Devices = []TaskDeviceDTO{}
	var after int64
	for len(v.Devices) < maxTaskDevicesShown {
		tds, err := s.Store.TaskDevices(ctx, id, after, 500)
		if err != nil {
			return err
		}
		for _, td := range tds {
			v.Devices = append(v.Devices, taskDeviceDTO(td))
		}
		if len(tds) < 500 {
			break
		}
		after = tds[len(tds)-1].ID
	}
	return c.JSON(http.StatusOK, v)
}

// listTaskDevices pages through a task's executions.
func (s *Server) listTaskDevices(c echo.Context) error {
	id, err := devPathID(c)
	if err != nil {
		return err
	}
	limit, after, err := pageParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.Store.GetDevTask(ctx, id); err != nil {
		return err
	}
	tds, err := s.Store.TaskDevices(ctx, id, after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(tds, limit, taskDeviceDTO, func(td store.TaskDeviceView) string { return IntCursor(td.ID) }))
}

func (s *Server) cancelDevTask(c echo.Context) error {
	id, err := devPathID(c)
	if err != nil {
		return err
	}
	t, err := s.Store.CancelDevTask(c.Request().Context(), id)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return Conflict("", "%v", err)
		}
		return err
	}
	// The next task becomes active at once.
	ctx, cancel := devBG()
	defer cancel()
	s.switchTaskNow(ctx, t.ID)
	return c.JSON(http.StatusOK, devTaskView(t))
}

func (s *Server) getTaskDevice(c echo.Context) error {
	id, err := devPathID(c)
	if err != nil {
		return err
	}
	td, err := s.Store.GetTaskDevice(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskDeviceDTO(td))
}

func (s *Server) taskDeviceEvents(c echo.Context) error {
	id, err := devPathID(c)
	if err != nil {
		return err
	}
	evs, err := s.Store.TaskDeviceEvents(c.Request().Context(), id)
	if err != nil {
		return err
	}
	page := Page[TaskDeviceEventView]{Items: make([]TaskDeviceEventView, 0, len(evs))}
	for _, e := range evs {
		page.Items = append(page.Items, TaskDeviceEventView{
			ID: e.ID, TaskDeviceID: e.TaskDeviceID, Attempt: e.Attempt, Type: e.Type, Detail: e.Detail, CreatedAt: e.CreatedAt.UTC(),
		})
	}
	return c.JSON(http.StatusOK, page)
}

// ClaimRequest is the body of POST /agent/pcs/{name}/claim.
type ClaimRequest struct {
	Max *int `json:"max"`
}

// maxClaim caps one claim.
const maxClaim = 1000

func (s *Server) agentClaim(c echo.Context) error {
	var req ClaimRequest
	if err := Decode(c, &req, true); err != nil {
		return err
	}
	max := 1
	if req.Max != nil {
		max = *req.Max
		if max < 1 || max > maxClaim {
			return BadRequest("max", "must be from 1 to %d, got %d", maxClaim, max)
		}
	}
	pc, cmds, err := s.Store.Claim(c.Request().Context(), c.Param("name"), max)
	if err != nil {
		return err
	}
	// Each sent attempt starts (or reaches) its slot workflow, whose durable timer then races
	// the result. That happens after the answer, so agents never wait on Temporal: the
	// deadline itself is already committed (timeout_at), and the dispatcher's sweep times out
	// an attempt whose workflow never started.
	if s.Starter != nil && len(cmds) > 0 {
		go s.armSlots(pc.Name, cmds)
	}
	page := Page[TaskDeviceDTO]{Items: make([]TaskDeviceDTO, 0, len(cmds))}
	for _, cmd := range cmds {
		page.Items = append(page.Items, TaskDeviceDTO{
			ID: cmd.ID, TaskID: cmd.TaskID, Device: cmd.DeviceSerial, PC: pc.Name, Status: domain.TDSent, Attempt: cmd.Attempt,
			MaxAttempts: cmd.MaxAttempts, SentAt: devUTC(cmd.SentAt), TimeoutAt: devUTC(cmd.TimeoutAt), Payload: cmd.Payload,
		})
	}
	return c.JSON(http.StatusOK, page)
}

// slotSignals bounds the Temporal calls arming slot workflows across all claims.
var slotSignals = make(chan struct{}, 64)

// armSlots signals each claimed attempt's slot workflow (starting it), skipping attempts
// resolved while the signal waited its turn.
func (s *Server) armSlots(pc string, cmds []store.ClaimedCommand) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, cmd := range cmds {
		slotSignals <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slotSignals }()
			td, err := s.Store.GetTaskDevice(ctx, cmd.ID)
			if err == nil && (td.Attempt != cmd.Attempt || (td.Status != domain.TDSent && td.Status != domain.TDAcked)) {
				return
			}
			sig := workflows.SlotSent{Attempt: cmd.Attempt}
			if cmd.SentAt != nil {
				sig.SentAt = cmd.SentAt.UTC()
			}
			if cmd.TimeoutAt != nil {
				sig.TimeoutAt = cmd.TimeoutAt.UTC()
			}
			ref := starter.SlotRef{TaskDeviceID: cmd.ID, TaskID: cmd.TaskID, PC: pc, Device: cmd.DeviceSerial}
			if err := s.Starter.SlotSent(ctx, ref, sig); err != nil {
				log.Printf("devices: %v", err)
			}
		}()
	}
	wg.Wait()
}

// AckRequest is the optional body of POST /agent/task-devices/{id}/ack.
type AckRequest struct {
	Attempt *int32 `json:"attempt"`
}

func (s *Server) agentAck(c echo.Context) error {
	id, err := devPathID(c)
	if err != nil {
		return err
	}
	var req AckRequest
	if err := Decode(c, &req, true); err != nil {
		return err
	}
	if _, err := s.Store.Ack(c.Request().Context(), id, req.Attempt); err != nil {
		if errors.Is(err, store.ErrNotInFlight) {
			return Conflict("attempt", "%v", err)
		}
		return err
	}
	td, err := s.Store.GetTaskDevice(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskDeviceDTO(td))
}

// ResultRequest is the body of POST /agent/task-devices/{id}/result.
type ResultRequest struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	Retryable *bool  `json:"retryable"`
	Attempt   *int32 `json:"attempt"`
}

func (s *Server) agentResult(c echo.Context) error {
	id, err := devPathID(c)
	if err != nil {
		return err
	}
	var req ResultRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	if req.Status != "succeeded" && req.Status != "failed" {
		return BadRequest("status", `must be "succeeded" or "failed", got %q`, req.Status)
	}
	if req.Attempt != nil && *req.Attempt < 1 {
		return BadRequest("attempt", "must be at least 1, got %d", *req.Attempt)
	}
	if len(req.Error) > 4096 {
		return BadRequest("error", "at most 4096 characters")
	}
	r := store.Result{Succeeded: req.Status == "succeeded", Error: req.Error, Attempt: req.Attempt}
	if req.Retryable != nil && !*req.Retryable {
		r.NotRetryable = true
	}
	out, err := s.Store.ReportResult(c.Request().Context(), id, r)
	if err != nil {
		if errors.Is(err, store.ErrNotInFlight) {
			return Conflict("attempt", "%v", err)
		}
		return err
	}
	// The result is committed (and the freed slot refilled): tell the slot workflow, which
	// cancels its timer, and nudge the dispatcher when the task may be done — after the
	// answer, so the agent never waits on Temporal. A lost signal costs nothing but a later
	// wake-up: the workflow's timer finds the attempt resolved in SQL and ends.
	if s.Starter != nil {
		sig := workflows.SlotResult{Attempt: resolvedAttempt(out), Status: out.Status}
		go func() {
			ctx, cancel := devBG()
			defer cancel()
			if err := s.Starter.SlotResult(ctx, id, sig); err != nil {
				log.Printf("devices: %v", err)
			}
			if out.CheckTask {
				s.switchTaskNow(ctx, out.TaskID)
			}
		}()
	}
	td, err := s.Store.GetTaskDevice(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskDeviceDTO(td))
}

// resolvedAttempt is the attempt a result resolved (Outcome.Attempt is the next one after a retry).
func resolvedAttempt(o store.Outcome) int32 {
	if o.Status == domain.TDRetryScheduled {
		return o.Attempt - 1
	}
	return o.Attempt
}
