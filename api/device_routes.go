package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tickgate/tickgate/deviceengine"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// DeviceEngine is the device engine as the device routes call it (deviceengine.Engine): every
// write of device state a request makes, with the step that follows it (a PC's workflow
// started, the PC's timer told of new deadlines, the active task advanced). The routes
// read through the store.
type DeviceEngine interface {
	CreatePC(ctx context.Context, name string, capacity int32) (store.PC, error)
	CreateDevice(ctx context.Context, pc, serial string) (store.Device, error)
	SetDeviceStatus(ctx context.Context, serial string, status domain.DeviceStatus, why string) (store.Device, error)
	CreateTask(ctx context.Context, t store.NewDeviceTask) (store.DeviceTask, error)
	CancelTask(ctx context.Context, id int64) (store.DeviceTask, error)
	Claim(ctx context.Context, pc string, max int, wait time.Duration) ([]store.ClaimedCommand, error)
	Ack(ctx context.Context, id int64, attempt *int32) error
	ReportSuccess(ctx context.Context, r store.SuccessReport) (store.SuccessAnswer, error)
	RecordResult(ctx context.Context, id int64, r store.Result) (store.Outcome, error)
	// Drain waits for the calls the engine made after its answers.
	Drain(ctx context.Context) error
}

// registerDevices mounts /pcs, /devices, /tasks, /task-devices and /agent (docs/devices.md):
// one file per resource beside this one.
func (s *Server) registerDevices(g *echo.Group) {
	s.devices = s.Devices
	if s.devices == nil {
		s.devices = deviceengine.New(deviceengine.Options{Store: s.Store, Starter: s.Starter, Listener: s.Listener, Tracer: s.Tracer, Logf: s.Logf})
	}
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

// Drain waits until the calls the device engine started after answers (a PC timer told a
// alarm, the dispatcher nudged) are done, or ctx ends. Call it once the HTTP server
// stopped taking requests.
func (s *Server) Drain(ctx context.Context) error {
	if s.devices == nil {
		return nil
	}
	return s.devices.Drain(ctx)
}
