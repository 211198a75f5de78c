package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// GET /pcs/{name}/slots: each of a PC's device_capacity numbered slots and the execution
// holding it, if any (docs/devices.md) — the console's slot grid.

// SlotView is one numbered slot; Execution is null when the slot is free.
type SlotView struct {
	Slot      int32               `json:"slot"`
	Execution *DeviceExecutionDTO `json:"execution"`
}

// PCSlotsView is a PC's slot grid. Now is the server's clock, so a reader can tell how
// long each execution has left before its timeout_at whatever its own clock says.
type PCSlotsView struct {
	PC             string     `json:"pc"`
	DeviceCapacity int32      `json:"device_capacity"`
	Eligible       int64      `json:"eligible"`
	Running        int64      `json:"running"`
	Target         int64      `json:"target"`
	Now            time.Time  `json:"now"`
	Slots          []SlotView `json:"slots"`
}

func (s *Server) pcSlots(c echo.Context) error {
	pc, sum, execs, err := s.Store.PCSlots(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	v := PCSlotsView{PC: pc.Name, DeviceCapacity: pc.DeviceCapacity, Eligible: sum.Eligible, Running: sum.Running,
		Target: sum.Target, Now: s.Now().UTC(), Slots: make([]SlotView, pc.DeviceCapacity)}
	for i := range v.Slots {
		v.Slots[i].Slot = int32(i + 1)
	}
	for _, e := range execs {
		if e.Slot != nil && *e.Slot >= 1 && *e.Slot <= pc.DeviceCapacity {
			dto := deviceExecutionDTO(e)
			v.Slots[*e.Slot-1].Execution = &dto
		}
	}
	return c.JSON(http.StatusOK, v)
}
