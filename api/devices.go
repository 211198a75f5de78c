package api

import "github.com/labstack/echo/v4"

// registerDevices mounts /pcs, /devices, /tasks, /task-devices and /agent (DESIGN.md §3).
func (s *Server) registerDevices(g *echo.Group) {}
