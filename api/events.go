package api

import "github.com/labstack/echo/v4"

// registerEvents mounts the outbox consumer feed.
func (s *Server) registerEvents(g *echo.Group) {}
