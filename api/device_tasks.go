package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/store"
)

// POST /tasks, GET /tasks, GET /tasks/{id}, GET /tasks/{id}/devices, POST /tasks/{id}/cancel:
// the queue of device tasks, one active at a time (docs/devices.md).

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
	s.advanceSoon(fmt.Sprintf("task %d created", t.ID)) // it becomes active if none is
	return c.JSON(http.StatusCreated, devTaskView(t))
}

func (s *Server) listDevTasks(c echo.Context) error {
	return listPage(c, idCursor, s.Store.ListDevTasks, devTaskView, func(t store.DevTask) int64 { return t.ID })
}

// maxTaskDevicesShown caps the executions GET /tasks/{id} lists.
const maxTaskDevicesShown = 5000

func (s *Server) getDevTask(c echo.Context) error {
	id, err := pathID(c, "task")
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
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	return listPage(c, idCursor, func(ctx context.Context, after int64, limit int) ([]store.TaskDeviceView, error) {
		if _, err := s.Store.GetDevTask(ctx, id); err != nil {
			return nil, err
		}
		return s.Store.TaskDevices(ctx, id, after, limit)
	}, taskDeviceDTO, func(td store.TaskDeviceView) int64 { return td.ID })
}

func (s *Server) cancelDevTask(c echo.Context) error {
	id, err := pathID(c, "task")
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
	s.advanceSoon(fmt.Sprintf("task %d cancelled", t.ID)) // the next task becomes active at once
	return c.JSON(http.StatusOK, devTaskView(t))
}
