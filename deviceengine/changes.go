package deviceengine

import (
	"context"
	"fmt"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// The farm and the task queue changed by an operator (docs/devices.md "The model"): each
// change is one store transaction that applies it to the PCs' slots at once (D2), followed
// by the step it may call for — a PC's workflow started, the active task advanced.

// CreatePC adds a PC (a taken name is store.ErrConflict) and starts its workflow, which
// keeps its slots full from then on. The PC exists once its row committed: a workflow that
// could not be started is logged, and the next device change or the dispatcher's safety
// poll fills its slots meanwhile.
func (e *Engine) CreatePC(ctx context.Context, name string, capacity int32) (store.PC, error) {
	pc, err := e.store.CreatePC(ctx, name, capacity)
	if err != nil || e.starter == nil {
		return pc, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), signalTimeout)
	defer cancel()
	if err := e.starter.NudgePC(sctx, pc.Name); err != nil {
		e.logf("devices: %v", err)
	}
	return pc, nil
}

// CreateDevice adds a device to a PC; the PC's free slots are filled in the same
// transaction, so it takes work at once. An unknown PC is store.ErrNotFound, a taken
// serial store.ErrConflict.
func (e *Engine) CreateDevice(ctx context.Context, pc, serial string) (store.Device, error) {
	d, _, err := e.store.CreateDevice(ctx, pc, serial)
	return d, err
}

// SetDeviceStatus sets a device online or offline (an operator's word, why says so); in the
// same transaction an execution on a device that left the eligible set is canceled and free
// slots are refilled. A canceled execution may have been its task's last, so the active
// task is advanced after.
func (e *Engine) SetDeviceStatus(ctx context.Context, serial string, status domain.DeviceStatus, why string) (store.Device, error) {
	d, _, err := e.store.SetDeviceStatus(ctx, serial, status, why)
	if err != nil {
		return d, err
	}
	e.advanceSoon("device " + d.Serial + " set " + string(d.Status))
	return d, nil
}

// CreateTask queues a device task; it becomes active at once if none is (D1).
func (e *Engine) CreateTask(ctx context.Context, t store.NewDeviceTask) (store.DeviceTask, error) {
	task, err := e.store.CreateDeviceTask(ctx, t)
	if err != nil {
		return task, err
	}
	e.advanceSoon(fmt.Sprintf("task %d created", task.ID))
	return task, nil
}

// CancelTask cancels a pending or running task and its executions still holding a slot (a
// finished task is store.ErrConflict); the next task becomes active at once.
func (e *Engine) CancelTask(ctx context.Context, id int64) (store.DeviceTask, error) {
	task, err := e.store.CancelDeviceTask(ctx, id)
	if err != nil {
		return task, err
	}
	e.advanceSoon(fmt.Sprintf("task %d canceled", task.ID))
	return task, nil
}
