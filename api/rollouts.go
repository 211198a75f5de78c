package api

import "github.com/labstack/echo/v4"

// registerRollouts mounts /rollouts and /task-runs (DESIGN.md §2).
func (s *Server) registerRollouts(g *echo.Group) {}
