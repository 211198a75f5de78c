package worker

import (
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/workflows"
)

// registerLegacyDeviceTimers registers, under their old names, the device timers of earlier
// releases that nothing starts any more, only so that those still running in a deployment
// when its workers were upgraded go on (and their recorded histories replay):
//
//   - SlotDeadlineWorkflow: the per-slot timers (slot/<pc>/<n>) and the PC's timer under its
//     old id (slot/<pc>/0), replaced by PCTimerWorkflow (pc-timer/<pc>). Delete it with
//     workflows/slot_timer_legacy.go once no SlotDeadlineWorkflow is open (see that file:
//     they do not end by themselves while their PC exists; docs/operations.md says how to
//     retire them).
//   - DeviceSlotWorkflow: the per-execution timer of releases before numbered slots
//     (task-device/<id>). It ends with its execution; delete it once none is open.
//
// Count the open ones with
//
//	temporal workflow count --query 'WorkflowType IN ("SlotDeadlineWorkflow", "DeviceSlotWorkflow") AND ExecutionStatus = "Running"'
func registerLegacyDeviceTimers(r sdkworker.WorkflowRegistry) {
	r.RegisterWorkflow(workflows.SlotDeadlineWorkflow)
	r.RegisterWorkflow(workflows.DeviceSlotWorkflow)
}
