package api

import "github.com/labstack/echo/v4"

// registerSchedules mounts /schedules (DESIGN.md §1).
func (s *Server) registerSchedules(g *echo.Group) {}
