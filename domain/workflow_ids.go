package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// Workflow ids: the one place each of tickgate's workflow ids is spelled. The workflows
// that own them, the activities that start, describe or signal them, starter and the API
// all take them from here (activities may not import workflows), so no layer keeps a copy.
// Workflow-id uniqueness is what makes each of these workflows a single writer or a
// singleton, so an id that drifted between two copies would mean two writers.
//
// Package workflows keeps the same names for other services' Go code (its contract,
// docs/devices.md "Signals other services may send"); they return these.

// DefaultTaskQueue is tickgate's task queue unless TICKGATE_TASK_QUEUE names another. The
// ids of the singletons and of the device workflows of a stack on another queue carry that
// queue, so several stacks (tests, staging) can share one Temporal namespace.
const DefaultTaskQueue = "tickgate"

// scheduleWorkflowPrefix begins every schedule's workflow id.
const scheduleWorkflowPrefix = "schedule/"

// ScheduleWorkflowID is the one workflow id of a schedule: schedule/<name>.
func ScheduleWorkflowID(name string) string { return scheduleWorkflowPrefix + name }

// ScheduleOfWorkflowID is the schedule whose workflow has id (ScheduleWorkflowID), or ""
// when id is no schedule's workflow.
func ScheduleOfWorkflowID(id string) string {
	name, ok := strings.CutPrefix(id, scheduleWorkflowPrefix)
	if !ok || strings.Contains(name, "/") {
		return ""
	}
	return name
}

// RunWorkflowID is the workflow id of a workflow action's run, from its idempotency key:
// schedule/<name>/run/<tick or request>. A tick fired again after a retraction gets a suffix
// of its own when recorded (~2, ~3, …).
func RunWorkflowID(schedule, key string) string {
	suffix := key
	if _, after, found := strings.Cut(key, "@"); found {
		suffix = after
	}
	return fmt.Sprintf("%s%s/run/%s", scheduleWorkflowPrefix, schedule, suffix)
}

// SchedulePlannerWorkflowID is the id of planner n of a task queue's stack: a singleton
// each, started by every worker (workflow-id uniqueness keeps one of each).
func SchedulePlannerWorkflowID(taskQueue string, n int) string {
	if taskQueue == "" || taskQueue == DefaultTaskQueue {
		return fmt.Sprintf("schedule-planner/%d", n)
	}
	return fmt.Sprintf("schedule-planner/%s/%d", taskQueue, n)
}

// RolloutWorkflowID is the one workflow id of a rollout: rollout/<id>.
func RolloutWorkflowID(rolloutID int64) string { return "rollout/" + strconv.FormatInt(rolloutID, 10) }

// PromoterWorkflowID is the promoter singleton's id for the stack on taskQueue:
// "rollout-promoter" on the default queue, "rollout-promoter/<queue>" otherwise.
func PromoterWorkflowID(taskQueue string) string {
	if taskQueue == "" || taskQueue == DefaultTaskQueue {
		return "rollout-promoter"
	}
	return "rollout-promoter/" + taskQueue
}

// DeviceScope is the prefix of the device engine's workflow ids for a task queue: none on
// the default queue, "<queue>:" otherwise.
func DeviceScope(taskQueue string) string {
	if taskQueue == "" || taskQueue == DefaultTaskQueue {
		return ""
	}
	return taskQueue + ":"
}

// DispatcherWorkflowID is the device dispatcher singleton's id in its scope.
func DispatcherWorkflowID(scope string) string { return scope + "device-dispatcher" }

// PCWorkflowID is the id of the workflow keeping PC pc's slots full: pc/<name>.
func PCWorkflowID(scope, pc string) string { return scope + "pc/" + pc }

// PCTimerWorkflowID is the id of PC pc's timer: pc-timer/<name>.
func PCTimerWorkflowID(scope, pc string) string { return scope + "pc-timer/" + pc }
