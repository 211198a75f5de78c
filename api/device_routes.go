package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/store"
)

// registerDevices mounts /pcs, /devices, /tasks, /task-devices and /agent (docs/devices.md):
// one file per resource beside this one.
func (s *Server) registerDevices(g *echo.Group) {
	s.timerSignals = make(chan struct{}, maxTimerSignals)
	s.results = s.Store.NewResultBatcher(store.ResultBatcherOptions{})
	g.POST("/pcs", s.createPC)
	g.GET("/pcs", s.listPCs)
	g.GET("/pcs/:name", s.getPC)
	g.GET("/pcs/:name/slots", s.pcSlots)
	g.POST("/devices", s.createDevice)
	g.GET("/devices", s.listDevices)
	g.GET("/devices/:serial", s.getDevice)
	g.PATCH("/devices/:serial", s.patchDevice)
	g.POST("/tasks", s.createDeviceTask)
	g.GET("/tasks", s.listDeviceTasks)
	g.GET("/tasks/:id", s.getDeviceTask)
	g.GET("/tasks/:id/devices", s.listDeviceExecutions)
	g.POST("/tasks/:id/cancel", s.cancelDeviceTask)
	g.GET("/task-devices/:id", s.getDeviceExecution)
	g.GET("/task-devices/:id/events", s.deviceExecutionEvents)
	g.POST("/agent/pcs/:name/claim", s.agentClaim)
	g.POST("/agent/task-devices/:id/ack", s.agentAck)
	g.POST("/agent/task-devices/:id/result", s.agentResult)
}

// signalTimeout bounds one Temporal call made after a device commit.
const signalTimeout = 10 * time.Second

// nudgeDispatcher asks the dispatcher to re-check the active task. SQL already holds the
// truth, and the dispatcher's safety poll re-checks, so a failure is logged, not returned.
func (s *Server) nudgeDispatcher(ctx context.Context) {
	if s.Starter == nil {
		return
	}
	if err := s.Starter.CheckDispatcher(ctx); err != nil {
		s.Logf("devices: %v", err)
	}
}

// advanceSoon hands "advance the active task" over after a commit that may have ended it
// (its last execution final, an abort, a cancel, a device leaving): to the task advancer,
// which activates the next task at once with the configured settings, or — in a server
// built without one — to the dispatcher workflow, signalled after the answer. The API
// never advances tasks itself.
func (s *Server) advanceSoon(why string) {
	if s.Advancer != nil {
		s.Advancer.AdvanceSoon(why)
		return
	}
	s.afterAnswer(signalTimeout, s.nudgeDispatcher)
}
