package workflows

import (
	"slices"

	"github.com/tickgate/tickgate/domain"
)

// Registration is one of tickgate's workflow types as a worker registers it: its name and
// its function.
type Registration struct {
	Name string
	Fn   any
}

// Registrations are every workflow type a tickgate worker runs: worker.Register registers
// exactly these (a worker test holds it to that), and they are what a schedule's workflow
// action may never start (OwnTargets).
func Registrations() []Registration {
	return []Registration{
		{ScheduleWorkflowType, ScheduleWorkflow},
		{SchedulePlannerType, SchedulePlannerWorkflow},
		// The runs of http actions: a delivery workflow each, on tickgate's own task queue.
		{HTTPDeliveryWorkflowType, HTTPDeliveryWorkflow},
		{RolloutWorkflowType, RolloutWorkflow},
		{PromoterWorkflowType, PromoterWorkflow},
		{"DispatcherWorkflow", DispatcherWorkflow},
		{"PCWorkflow", PCWorkflow},
		{"PCTimerWorkflow", PCTimerWorkflow},
		// The device timers of earlier versions that nothing starts any more, registered
		// under their old names only so that those still running when a deployment's
		// workers were upgraded go on (and their recorded histories replay): see
		// slot_timer_legacy.go and device_slot.go for when they retire.
		{"SlotDeadlineWorkflow", SlotDeadlineWorkflow},
		{"DeviceSlotWorkflow", DeviceSlotWorkflow},
	}
}

// TypeNames are the names of Registrations, sorted.
func TypeNames() []string {
	var names []string
	for _, r := range Registrations() {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}

// OwnTargets is the rule of which workflows a schedule's workflow action may start, for a
// tickgate whose task queue is taskQueue: none of tickgate's own workflow types
// (Registrations), nothing on its task queue (nor on the default one, where another
// tickgate sharing the namespace may run), and, when allowed lists any
// (TICKGATE_WORKFLOW_TASK_QUEUES), only those queues.
func OwnTargets(taskQueue string, allowed []string) domain.WorkflowTargets {
	queues := []string{DefaultTaskQueue}
	if taskQueue != "" && taskQueue != DefaultTaskQueue {
		queues = append(queues, taskQueue)
	}
	return domain.WorkflowTargets{OwnTypes: TypeNames(), OwnQueues: queues, Queues: allowed}
}
