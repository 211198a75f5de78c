package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/store"
)

// POST /agent/pcs/{name}/claim, POST /agent/task-devices/{id}/ack and /result: what a PC's
// agent calls (docs/devices.md). The steps are the device engine's (package deviceengine).

// ClaimRequest is the body of POST /agent/pcs/{name}/claim.
type ClaimRequest struct {
	Max *int `json:"max"`
	// Wait makes the claim a long-poll: with nothing to send, the answer waits up to this
	// long (a Go duration, at most maxClaimWait) for the PC's next execution.
	Wait *schedulespec.Duration `json:"wait"`
}

// maxClaim caps one claim.
const maxClaim = 1000

// maxClaimWait caps a claim's long-poll.
const maxClaimWait = time.Minute

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
	var wait time.Duration
	if req.Wait != nil {
		wait = time.Duration(*req.Wait)
		if wait < 0 || wait > maxClaimWait {
			return BadRequest("wait", "must be from 0s to %s, got %s", maxClaimWait, wait)
		}
	}
	pc := c.Param("name")
	s.extendWriteDeadline(c, wait)
	cmds, err := s.devices.Claim(c.Request().Context(), pc, max, wait)
	if err != nil {
		return err
	}
	page := Page[DeviceExecutionDTO]{Items: make([]DeviceExecutionDTO, 0, len(cmds))}
	for _, cmd := range cmds {
		page.Items = append(page.Items, claimedView(pc, cmd))
	}
	return c.JSON(http.StatusOK, page)
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
	if err := s.devices.Ack(c.Request().Context(), id, req.Attempt); err != nil {
		if errors.Is(err, store.ErrNotInFlight) {
			return Conflict("attempt", "%v", err)
		}
		return err
	}
	td, err := s.Store.GetDeviceExecution(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceExecutionDTO(td))
}

// ResultRequest is the body of POST /agent/task-devices/{id}/result.
type ResultRequest struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	Retryable *bool  `json:"retryable"`
	Attempt   *int32 `json:"attempt"`
	// ClaimNext asks for the slot's next execution in the answer (ResultView.Next), so an
	// agent that keeps working needs no claim of its own.
	ClaimNext bool `json:"claim_next"`
}

// ResultView answers a result: the execution as the result left it, and, when the request
// asked (claim_next) and its slot was refilled at once, the slot's next execution, SENT to
// this agent with its payload (as a claim would hand it).
type ResultView struct {
	DeviceExecutionDTO
	Next *DeviceExecutionDTO `json:"next,omitempty"`
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
	p := PrincipalOf(c)
	kr := keyedRequestOf(c)
	pc := "" // the execution's PC, once known
	if r.Succeeded {
		var handled bool
		if handled, pc, err = s.recordSuccess(c, id, req, p, kr); handled || err != nil {
			return err
		}
	}
	// The general path: a failure, or a success the group commit left undecided.
	if err := s.checkAgentExecution(c.Request().Context(), p, id, pc); err != nil {
		return err
	}
	record := func(c echo.Context) error { return s.recordResult(c, id, r) }
	if kr != nil {
		return s.runIdempotent(c, kr, record, s.replayResultAnswer)
	}
	return record(c)
}

// recordSuccess reports a success to the device engine's group commit
// (deviceengine.Engine.ReportSuccess) and answers what its statement decided. handled is
// false when the statement left the result to the general path; pc is then the execution's
// PC.
func (s *Server) recordSuccess(c echo.Context, id int64, req ResultRequest, p *Principal, kr *keyedRequest) (handled bool, pc string, err error) {
	rep := store.SuccessReport{ID: id, Attempt: req.Attempt, ClaimNext: req.ClaimNext}
	if p != nil && p.Role == domain.RoleAgent {
		rep.AgentPC = p.PC
	}
	if kr != nil {
		rep.Key, rep.RequestHash = kr.key, kr.hash
	}
	ans, err := s.devices.ReportSuccess(c.Request().Context(), rep)
	if err != nil {
		return true, "", err
	}
	switch ans.Verdict {
	case domain.SuccessRecorded:
		return true, "", c.JSON(http.StatusOK, resultView(*ans.Done, ans.Next))
	case domain.SuccessReplayed:
		if ans.Stored != nil {
			return true, "", replayed(c, ans.Stored)
		}
		c.Response().Header().Set(ReplayedHeader, "true")
		return true, "", c.JSON(http.StatusOK, resultView(*ans.Done, ans.Next))
	case domain.SuccessNotFound:
		return true, "", NotFound("no task_device %d", id)
	case domain.SuccessForbidden:
		return true, "", s.checkAgentExecution(c.Request().Context(), p, id, ans.PCName)
	case domain.SuccessKeyReused:
		return true, "", NewProblem(http.StatusUnprocessableEntity, IdempotencyHeader, "%v", store.ErrKeyReused)
	case domain.SuccessKeyInProgress:
		c.Response().Header().Set("Retry-After", "1")
		return true, "", Conflict(IdempotencyHeader, "%v", store.ErrInFlight)
	}
	return false, ans.PCName, nil
}

// recordResult is the general path: one transaction decides any result
// (deviceengine.Engine.RecordResult).
func (s *Server) recordResult(c echo.Context, id int64, r store.Result) error {
	out, err := s.devices.RecordResult(c.Request().Context(), id, r)
	if err != nil {
		if errors.Is(err, store.ErrNotInFlight) {
			return Conflict("attempt", "%v", err)
		}
		return err
	}
	if out.View != nil {
		return c.JSON(http.StatusOK, resultView(*out.View, nil))
	}
	td, err := s.Store.GetDeviceExecution(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resultView(td, nil))
}

// replayResultAnswer renders a result's first answer kept with its Idempotency-Key.
func (s *Server) replayResultAnswer(c echo.Context, answer []byte) error {
	done, next, err := s.Store.StoredResultAnswer(c.Request().Context(), answer)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resultView(*done, next))
}

func resultView(td store.DeviceExecutionView, next *store.ClaimedCommand) ResultView {
	v := ResultView{DeviceExecutionDTO: deviceExecutionDTO(td)}
	if next != nil {
		n := claimedView(td.PcName, *next)
		v.Next = &n
	}
	return v
}
