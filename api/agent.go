package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// POST /agent/pcs/{name}/claim, POST /agent/task-devices/{id}/ack and /result: what a PC's
// agent calls (DESIGN.md §3).

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
	pc, cmds, err := s.Store.Claim(c.Request().Context(), c.Param("name"), max)
	if err != nil {
		return err
	}
	// Each sent attempt starts (or reaches) its slot workflow, whose durable timer then races
	// the result. That happens after the answer, so agents never wait on Temporal: the
	// deadline itself is already committed (timeout_at), and the dispatcher's sweep times out
	// an attempt whose workflow never started.
	if s.Starter != nil && len(cmds) > 0 {
		s.afterAnswer(time.Minute, func(ctx context.Context) { s.armSlots(ctx, pc.Name, cmds) })
	}
	page := Page[TaskDeviceDTO]{Items: make([]TaskDeviceDTO, 0, len(cmds))}
	for _, cmd := range cmds {
		page.Items = append(page.Items, claimedView(pc.Name, cmd))
	}
	return c.JSON(http.StatusOK, page)
}

// armSlots signals each claimed attempt's slot workflow (starting it), skipping attempts
// resolved while the signal waited its turn.
func (s *Server) armSlots(ctx context.Context, pc string, cmds []store.ClaimedCommand) {
	var wg sync.WaitGroup
	for _, cmd := range cmds {
		s.slotSignals <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.slotSignals }()
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
	// The result is committed (and the freed slot refilled): tell the slot workflow, which
	// cancels its timer — after the answer, so the agent never waits on Temporal. A lost
	// signal costs nothing but a later wake-up: the workflow's timer finds the attempt
	// resolved in SQL and ends.
	if s.Starter != nil {
		sig := workflows.SlotResult{Attempt: resolvedAttempt(out), Status: out.Status}
		s.afterAnswer(signalTimeout, func(ctx context.Context) {
			if err := s.Starter.SlotResult(ctx, id, sig); err != nil {
				s.Logf("devices: %v", err)
			}
		})
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
