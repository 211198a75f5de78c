package domain

import (
	"fmt"
	"slices"
	"strings"
)

// WorkflowTargets is the rule of which workflows a schedule's workflow action may start
// (docs/security.md "Workflow actions"): users' workflows, never tickgate's own. A workflow
// of tickgate's, started with input a user wrote, would act with tickgate's authority (a
// delivery signing another schedule's request, a planner claiming schedules).
type WorkflowTargets struct {
	// OwnTypes are tickgate's workflow types (workflows.TypeNames: what its worker
	// registers), refused on any task queue.
	OwnTypes []string
	// OwnQueues are tickgate's task queues, refused for any workflow type.
	OwnQueues []string
	// Queues, when set (TICKGATE_WORKFLOW_TASK_QUEUES), are the only task queues allowed.
	Queues []string
}

// Check refuses a workflow action's target the rule does not allow, naming the field
// (workflow_type or task_queue).
func (t WorkflowTargets) Check(workflowType, taskQueue string) *FieldError {
	if slices.Contains(t.OwnTypes, workflowType) {
		return &FieldError{Field: "workflow_type", Msg: fmt.Sprintf("%q is one of tickgate's own workflows, which a workflow action may not start", workflowType)}
	}
	if slices.Contains(t.OwnQueues, taskQueue) {
		return &FieldError{Field: "task_queue", Msg: fmt.Sprintf("%q is tickgate's own task queue, on which a workflow action may not start workflows", taskQueue)}
	}
	if len(t.Queues) > 0 && !slices.Contains(t.Queues, taskQueue) {
		return &FieldError{Field: "task_queue", Msg: fmt.Sprintf("want one of the task queues TICKGATE_WORKFLOW_TASK_QUEUES allows (%s), got %q",
			strings.Join(t.Queues, ", "), taskQueue)}
	}
	return nil
}
