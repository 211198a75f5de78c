package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/workflows"
)

// scheduleStart is how a schedule's workflow is started — woken by the planner, or by a
// command to a schedule at rest: a run already open under its id is kept; a closed one (a
// run that rested, or a deleted schedule's with the same name) does not block the new one.
func (s *Starter) scheduleStart(id int64, name string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       domain.ScheduleWorkflowID(name),
		TaskQueue:                s.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.KindKey.ValueSet(workflows.KindSchedule), workflows.ScheduleKey.ValueSet(name)),
		StaticSummary: "schedule " + name,
	}
}

// WakeSchedule starts the workflow of schedule id/name, which takes the schedule over from
// its row; a run already open is kept. With resident schedules (ResidentSchedules) the open
// run is a resident one at rest: the wake is signalled to it (signal-with-start), and it takes
// the schedule over.
func (s *Starter) WakeSchedule(ctx context.Context, id int64, name string) error {
	in := workflows.ScheduleInput{ScheduleID: id, Name: name, Woken: true}
	var err error
	if s.ResidentSchedules {
		_, err = s.Client.SignalWithStartWorkflow(ctx, workflows.ScheduleWorkflowID(name), workflows.ScheduleWake, nil,
			s.scheduleStart(id, name), workflows.ScheduleWorkflowType, in)
	} else {
		_, err = s.Client.ExecuteWorkflow(ctx, s.scheduleStart(id, name), workflows.ScheduleWorkflowType, in)
	}
	if err != nil {
		return fmt.Errorf("wake schedule workflow %s: %w", name, err)
	}
	return nil
}

// StopSchedule ends a schedule's workflow; one already gone is fine.
func (s *Starter) StopSchedule(ctx context.Context, name, reason string) error {
	err := s.Client.TerminateWorkflow(ctx, domain.ScheduleWorkflowID(name), "", reason)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("stop schedule workflow %s: %w", name, err)
	}
	return nil
}

// StopDelayedStarts terminates the targets a deleted schedule had started ahead of their
// ticks (armed workflow fires), so that none runs for a schedule that is gone; one that
// already ended or is unknown is fine.
func (s *Starter) StopDelayedStarts(ctx context.Context, workflowIDs []string) error {
	var errs []error
	for _, id := range workflowIDs {
		err := s.Client.TerminateWorkflow(ctx, id, "", "its schedule was deleted before its tick")
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			errs = append(errs, fmt.Errorf("stop delayed start %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// updateSchedule sends a command to the schedule's workflow as an update, starting the
// workflow if the schedule is at rest (update-with-start), and waits for its answer.
func (s *Starter) updateSchedule(ctx context.Context, id int64, name, update string, out any, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := s.Client.NewWithStartWorkflowOperation(s.scheduleStart(id, name), workflows.ScheduleWorkflowType,
		workflows.ScheduleInput{ScheduleID: id, Name: name})
	h, err := s.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID: domain.ScheduleWorkflowID(name), UpdateName: update, Args: args,
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	if err != nil {
		return fmt.Errorf("%s schedule %s: %w", update, name, err)
	}
	if err := h.Get(ctx, out); err != nil {
		return fmt.Errorf("%s schedule %s: %w", update, name, err)
	}
	return nil
}

// PauseSchedule pauses a schedule through its workflow; the answer says whether it changed
// the paused state.
func (s *Starter) PauseSchedule(ctx context.Context, id int64, name string, req workflows.PauseRequest) (workflows.ScheduleDescription, error) {
	var d workflows.ScheduleDescription
	err := s.updateSchedule(ctx, id, name, workflows.SchedulePause, &d, req)
	return d, err
}

// ResumeSchedule resumes a schedule through its workflow; the answer says whether it
// changed the paused state.
func (s *Starter) ResumeSchedule(ctx context.Context, id int64, name string, req workflows.ResumeRequest) (workflows.ScheduleDescription, error) {
	var d workflows.ScheduleDescription
	err := s.updateSchedule(ctx, id, name, workflows.ScheduleResume, &d, req)
	return d, err
}

// TriggerSchedule fires a schedule now and returns the run it recorded.
func (s *Starter) TriggerSchedule(ctx context.Context, id int64, name string, req workflows.TriggerRequest) (workflows.TriggerResult, error) {
	var r workflows.TriggerResult
	err := s.updateSchedule(ctx, id, name, workflows.ScheduleTrigger, &r, req)
	return r, err
}

// RefreshSchedule tells the workflow its definition changed in Postgres.
func (s *Starter) RefreshSchedule(ctx context.Context, id int64, name string) error {
	var d workflows.ScheduleDescription
	return s.updateSchedule(ctx, id, name, workflows.ScheduleRefresh, &d)
}

// StartSchedulePlanners makes sure n planners run (schedule-planner/0 … n-1); running ones
// are kept. A worker of the version before the planner left its schedule singleton
// running (legacyScheduleSingletonID): it is stopped, the planner does its work.
func (s *Starter) StartSchedulePlanners(ctx context.Context, n int) error {
	var errs []error
	for i := range n {
		_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                       domain.SchedulePlannerWorkflowID(s.TaskQueue, i),
			TaskQueue:                s.TaskQueue,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.KindKey.ValueSet(workflows.KindSchedulePlanner)),
			StaticSummary:            "arms the fires of schedules at rest and wakes their workflows",
		}, workflows.SchedulePlannerType, workflows.PlannerInput{Index: i})
		if err != nil {
			errs = append(errs, fmt.Errorf("start schedule planner %d: %w", i, err))
		}
	}
	err := s.Client.TerminateWorkflow(ctx, legacyScheduleSingletonID, "", "replaced by the schedule planner")
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		errs = append(errs, fmt.Errorf("stop the schedule singleton of the version before the planner: %w", err))
	}
	return errors.Join(errs...)
}

// StopSchedulePlanners terminates n planners (a test stack's, at its end).
func (s *Starter) StopSchedulePlanners(ctx context.Context, n int) error {
	var errs []error
	for i := range n {
		err := s.Client.TerminateWorkflow(ctx, domain.SchedulePlannerWorkflowID(s.TaskQueue, i), "", "stack stopped")
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// legacyScheduleSingletonID is the schedule singleton of the version before the planner,
// which the planner replaced; its id is what that version ran under.
const legacyScheduleSingletonID = "schedule-reconciler"

// RescheduleSchedule moves the schedule's next fire.
func (s *Starter) RescheduleSchedule(ctx context.Context, id int64, name string, at time.Time) (workflows.ScheduleDescription, error) {
	var d workflows.ScheduleDescription
	err := s.updateSchedule(ctx, id, name, workflows.ScheduleReschedule, &d, workflows.RescheduleRequest{NextRunAt: at})
	return d, err
}

// BackfillSchedule queues a backfill of a past range.
func (s *Starter) BackfillSchedule(ctx context.Context, id int64, name string, req workflows.BackfillRequest) (workflows.BackfillResult, error) {
	var r workflows.BackfillResult
	err := s.updateSchedule(ctx, id, name, workflows.ScheduleBackfill, &r, req)
	return r, err
}
