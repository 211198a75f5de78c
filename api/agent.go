package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// POST /agent/pcs/{name}/claim, POST /agent/task-devices/{id}/ack and /result: what a PC's
// agent calls (docs/devices.md).

// ClaimRequest is the body of POST /agent/pcs/{name}/claim.
type ClaimRequest struct {
	Max *int `json:"max"`
}

// maxClaim caps one claim.
const maxClaim = 1000

// maxSlotSignals bounds the Temporal calls arming slot workflows across all claims.
const maxSlotSignals = 64

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
	pc := c.Param("name")
	cmds, err := s.Store.Claim(c.Request().Context(), pc, max)
	if err != nil {
		return err
	}
	// Each sent attempt's deadline is watched by its slot's durable timer. Telling the
	// timer happens after the answer, so agents never wait on Temporal: the deadline itself
	// is already committed (timeout_at), and the dispatcher's sweep times out an attempt
	// whose timer was never told.
	if s.Starter != nil && len(cmds) > 0 {
		s.afterAnswer(time.Minute, func(ctx context.Context) { s.armSlots(ctx, pc, cmds) })
	}
	page := Page[TaskDeviceDTO]{Items: make([]TaskDeviceDTO, 0, len(cmds))}
	for _, cmd := range cmds {
		page.Items = append(page.Items, claimedView(pc, cmd))
	}
	return c.JSON(http.StatusOK, page)
}

// armSlots tells the slots of the claimed attempts their deadlines, except those whose
// workflow already wakes in time and those a newer attempt has replaced (see slotArms).
func (s *Server) armSlots(ctx context.Context, pc string, cmds []store.ClaimedCommand) {
	var wg sync.WaitGroup
	now := time.Now()
	for _, cmd := range cmds {
		if cmd.TimeoutAt == nil {
			continue
		}
		var sentAt time.Time
		if cmd.SentAt != nil {
			sentAt = *cmd.SentAt
		}
		k, deadline := slotKey{pc: pc, slot: cmd.Slot}, cmd.TimeoutAt.UTC()
		if !s.slotArms.needsSignal(k, sentAt, deadline, now) {
			continue
		}
		s.slotArms.toldAt(k, deadline, now)
		s.slotSignals <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.slotSignals }()
			d := workflows.SlotDeadline{TaskDeviceID: cmd.ID, Attempt: cmd.Attempt, TimeoutAt: deadline}
			if err := s.Starter.ArmSlot(ctx, pc, cmd.Slot, d); err != nil {
				s.slotArms.forget(k, deadline)
				s.Logf("devices: %v", err)
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
	id, err := pathID(c, "task_device")
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
	id, err := pathID(c, "task_device")
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
	if out.CheckTask {
		s.advanceSoon(fmt.Sprintf("task_device %d of task %d %s", id, out.TaskID, out.Status))
	}
	// The result is committed and the freed slot refilled. The slot's timer is not told:
	// when it wakes it finds the attempt resolved in SQL (the race has one winner there)
	// and sleeps until whatever is in flight in the slot by then.
	if out.View != nil {
		return c.JSON(http.StatusOK, taskDeviceDTO(*out.View))
	}
	td, err := s.Store.GetTaskDevice(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskDeviceDTO(td))
}
