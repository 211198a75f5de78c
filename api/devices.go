package api

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// POST /devices, GET /devices, GET|PATCH /devices/{serial} (docs/devices.md).

var (
	devSerialPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	// deviceStatusNames are the statuses an operator may set (the contract's
	// PatchDeviceRequest): online (the eligible set; it resets a device from error) or
	// offline. error says an execution failed finally on the device, so only the engine
	// sets it.
	deviceStatusNames = map[domain.DeviceStatus]bool{domain.DeviceOnline: true, domain.DeviceOffline: true}
)

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
	dev, err := s.devices.CreateDevice(c.Request().Context(), req.PC, req.Serial)
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
	return listPage(c, idCursor, s.Store.ListDevices, deviceRowView, func(r store.DeviceRow) int64 { return r.ID })
}

func (s *Server) getDevice(c echo.Context) error {
	d, err := s.Store.GetDevice(c.Request().Context(), c.Param("serial"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceRowView(d))
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
		return BadRequest("status", "must be online or offline, got %q", req.Status)
	}
	d, err := s.devices.SetDeviceStatus(c.Request().Context(), c.Param("serial"), req.Status, "set by operator")
	if err != nil {
		return err
	}
	row, err := s.Store.GetDevice(c.Request().Context(), d.Serial)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceRowView(row))
}
