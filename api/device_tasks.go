package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// POST /tasks, GET /tasks, GET /tasks/{id}, GET /tasks/{id}/devices, POST /tasks/{id}/cancel:
// the queue of device tasks, one active at a time (docs/devices.md).

// CreateDeviceTaskRequest is the body of POST /tasks.
type CreateDeviceTaskRequest struct {
	Payload     json.RawMessage `json:"payload"`
	TargetCount *int32          `json:"target_count"`
	Abort       *AbortRule      `json:"abort"`
	// Rate bounds the executions sent per minute across the farm; Windows when they may be
	// sent (docs/progressive.md).
	Rate    *domain.Rate    `json:"rate,omitempty"`
	Windows []domain.Window `json:"windows,omitempty"`
}

func (s *Server) createDeviceTask(c echo.Context) error {
	var req CreateDeviceTaskRequest
	if err := Decode(c, &req, false); err != nil {
		return err
	}
	nt := store.NewDeviceTask{Payload: req.Payload, TargetCount: req.TargetCount}
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
	if req.Rate != nil {
		if err := req.Rate.Validate("rate"); err != nil {
			return fieldProblem("", err)
		}
		nt.Rate = req.Rate
	}
	if len(req.Windows) > 0 {
		if err := domain.ValidateWindows(req.Windows, "windows"); err != nil {
			return fieldProblem("", err)
		}
		nt.Windows = req.Windows
	}
	t, err := s.devices.CreateTask(c.Request().Context(), nt)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, deviceTaskView(t))
}

func (s *Server) listDeviceTasks(c echo.Context) error {
	return listPage(c, idCursor, s.Store.ListDeviceTasks, deviceTaskView, func(t store.DeviceTask) int64 { return t.ID })
}

// maxExecutionsShown caps the executions GET /tasks/{id} lists.
const maxExecutionsShown = 5000

func (s *Server) getDeviceTask(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.Store.GetDeviceTask(ctx, id)
	if err != nil {
		return err
	}
	counts, err := s.Store.DeviceTaskCounts(ctx, id)
	if err != nil {
		return err
	}
	v := deviceTaskView(t)
	v.Counts = &DeviceTaskCounts{Active: counts.Active, Succeeded: counts.Succeeded, Failed: counts.Failed, Canceled: counts.Canceled}
	if t.Status == domain.DeviceTaskRunning {
		if v.WaitingCause, err = s.deviceTaskWaitingCause(ctx, id); err != nil {
			return err
		}
	}
	v.Devices = []DeviceExecutionDTO{}
	var after int64
	for len(v.Devices) < maxExecutionsShown {
		tds, err := s.Store.DeviceExecutions(ctx, id, after, 500)
		if err != nil {
			return err
		}
		for _, td := range tds {
			v.Devices = append(v.Devices, deviceExecutionDTO(td))
		}
		if len(tds) < 500 {
			break
		}
		after = tds[len(tds)-1].ID
	}
	return c.JSON(http.StatusOK, v)
}

// listDeviceExecutions pages through a task's executions.
func (s *Server) listDeviceExecutions(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	return listPage(c, idCursor, func(ctx context.Context, after int64, limit int) ([]store.DeviceExecutionView, error) {
		if _, err := s.Store.GetDeviceTask(ctx, id); err != nil {
			return nil, err
		}
		return s.Store.DeviceExecutions(ctx, id, after, limit)
	}, deviceExecutionDTO, func(td store.DeviceExecutionView) int64 { return td.ID })
}

func (s *Server) cancelDeviceTask(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	t, err := s.devices.CancelTask(c.Request().Context(), id)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return Conflict("", "%v", err)
		}
		return err
	}
	return c.JSON(http.StatusOK, deviceTaskView(t))
}
