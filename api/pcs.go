package api

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// POST /pcs, GET /pcs, GET /pcs/{name}: the PCs devices are attached to (docs/devices.md).

var pcNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

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
	capacity := int32(domain.DefaultDeviceCapacity)
	if req.DeviceCapacity != nil {
		capacity = *req.DeviceCapacity
		if capacity < 1 || capacity > domain.MaxDeviceCapacity {
			return BadRequest("device_capacity", "must be from 1 to %d, got %d", domain.MaxDeviceCapacity, capacity)
		}
	}
	pc, err := s.devices.CreatePC(c.Request().Context(), req.Name, capacity)
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return Conflict("name", "pc %q already exists", req.Name)
		}
		return err
	}
	return c.JSON(http.StatusCreated, pcView(pc))
}

func (s *Server) listPCs(c echo.Context) error {
	return listPage(c, idCursor, s.Store.ListPCs, pcView, func(pc store.PC) int64 { return pc.ID })
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
