package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// GET /task-devices/{id}, GET /task-devices/{id}/events: one device execution and its
// attempt history (docs/devices.md).

func (s *Server) getTaskDevice(c echo.Context) error {
	id, err := pathID(c, "task_device")
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
	id, err := pathID(c, "task_device")
	if err != nil {
		return err
	}
	evs, err := s.Store.TaskDeviceEvents(c.Request().Context(), id)
	if err != nil {
		return err
	}
	page := Page[TaskDeviceEventView]{Items: make([]TaskDeviceEventView, 0, len(evs))}
	for _, e := range evs {
		page.Items = append(page.Items, taskDeviceEventView(e))
	}
	return c.JSON(http.StatusOK, page)
}
