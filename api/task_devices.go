package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// GET /task-devices/{id}, GET /task-devices/{id}/events: one device execution and its
// attempt history (docs/devices.md).

func (s *Server) getDeviceExecution(c echo.Context) error {
	id, err := pathID(c, "task_device")
	if err != nil {
		return err
	}
	td, err := s.Store.GetDeviceExecution(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceExecutionDTO(td))
}

func (s *Server) deviceExecutionEvents(c echo.Context) error {
	id, err := pathID(c, "task_device")
	if err != nil {
		return err
	}
	evs, err := s.Store.DeviceExecutionEvents(c.Request().Context(), id)
	if err != nil {
		return err
	}
	page := Page[DeviceExecutionEventView]{Items: make([]DeviceExecutionEventView, 0, len(evs))}
	for _, e := range evs {
		page.Items = append(page.Items, deviceExecutionEventView(e))
	}
	return c.JSON(http.StatusOK, page)
}
