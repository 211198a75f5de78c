package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/workflows"
)

// ErrNoWorkflow means the schedule's workflow is not running.
var ErrNoWorkflow = errors.New("schedule workflow is not running")

// StartSchedule starts the workflow of schedule id/name. A workflow already running under
// that id is kept (the reconciler and the API may race); a closed one of a deleted
// schedule with the same name does not block the new one.
func (s *Starter) StartSchedule(ctx context.Context, id int64, name, summary string) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.ScheduleWorkflowID(name),
		TaskQueue:                s.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.KindKey.ValueSet(workflows.KindSchedule), workflows.ScheduleKey.ValueSet(name)),
		StaticSummary: summary,
	}, workflows.ScheduleWorkflowType, workflows.ScheduleInput{ScheduleID: id, Name: name})
	if err != nil {
		return fmt.Errorf("start schedule workflow %s: %w", name, err)
	}
	return nil
}

// StopSchedule ends a deleted schedule's workflow; one already gone is fine.
func (s *Starter) StopSchedule(ctx context.Context, name string) error {
	err := s.Client.TerminateWorkflow(ctx, workflows.ScheduleWorkflowID(name), "", "schedule deleted")
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

// updateSchedule sends an update to the schedule's workflow and waits for its answer.
func (s *Starter) updateSchedule(ctx context.Context, name, update string, out any, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: workflows.ScheduleWorkflowID(name), UpdateName: update, Args: args,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return fmt.Errorf("%s %s: %w", update, name, ErrNoWorkflow)
		}
		return fmt.Errorf("%s schedule %s: %w", update, name, err)
	}
	if err := h.Get(ctx, out); err != nil {
		return fmt.Errorf("%s schedule %s: %w", update, name, err)
	}
	return nil
}

// PauseSchedule pauses a schedule through its workflow.
func (s *Starter) PauseSchedule(ctx context.Context, name, note string) (workflows.ScheduleDescription, error) {
	var d workflows.ScheduleDescription
	err := s.updateSchedule(ctx, name, workflows.SchedulePause, &d, workflows.PauseRequest{Note: note})
	return d, err
}

// ResumeSchedule resumes a schedule through its workflow.
func (s *Starter) ResumeSchedule(ctx context.Context, name string) (workflows.ScheduleDescription, error) {
	var d workflows.ScheduleDescription
	err := s.updateSchedule(ctx, name, workflows.ScheduleResume, &d)
	return d, err
}

// TriggerSchedule fires a schedule now and returns the run it recorded.
func (s *Starter) TriggerSchedule(ctx context.Context, name string, req workflows.TriggerRequest) (workflows.TriggerResult, error) {
	var r workflows.TriggerResult
	err := s.updateSchedule(ctx, name, workflows.ScheduleTrigger, &r, req)
	return r, err
}

// RefreshSchedule tells the workflow its definition changed in Postgres.
func (s *Starter) RefreshSchedule(ctx context.Context, name string) error {
	var d workflows.ScheduleDescription
	return s.updateSchedule(ctx, name, workflows.ScheduleRefresh, &d)
}

// DescribeSchedule queries the workflow's live state.
func (s *Starter) DescribeSchedule(ctx context.Context, name string) (workflows.ScheduleDescription, error) {
	var d workflows.ScheduleDescription
	v, err := s.Client.QueryWorkflow(ctx, workflows.ScheduleWorkflowID(name), "", workflows.ScheduleDescribe)
	if err != nil {
		return d, fmt.Errorf("describe schedule %s: %w", name, err)
	}
	if err := v.Get(&d); err != nil {
		return d, fmt.Errorf("decode description of %s: %w", name, err)
	}
	return d, nil
}

// StartScheduleReconciler starts the singleton reconciler; a running one is kept.
func (s *Starter) StartScheduleReconciler(ctx context.Context) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       workflows.ScheduleReconcilerID,
		TaskQueue:                s.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.KindKey.ValueSet(workflows.KindScheduleReconciler)),
		StaticSummary:            "keeps one ScheduleWorkflow per schedule row",
	}, workflows.ScheduleReconcilerType)
	if err != nil {
		return fmt.Errorf("start schedule reconciler: %w", err)
	}
	return nil
}

// ListRunningScheduleNames lists the schedules whose workflow runs, from visibility.
func (s *Starter) ListRunningScheduleNames(ctx context.Context) ([]string, error) {
	var names []string
	var token []byte
	for {
		resp, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf(`TickgateKind = %q AND ExecutionStatus = "Running"`, workflows.KindSchedule),
			NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list schedule workflows: %w", err)
		}
		for _, e := range resp.Executions {
			if name, ok := strings.CutPrefix(e.GetExecution().GetWorkflowId(), "schedule/"); ok && !strings.Contains(name, "/") {
				names = append(names, name)
			}
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			return names, nil
		}
	}
}

// RescheduleSchedule moves the schedule's next fire.
func (s *Starter) RescheduleSchedule(ctx context.Context, name string, at time.Time) (workflows.ScheduleDescription, error) {
	var d workflows.ScheduleDescription
	err := s.updateSchedule(ctx, name, workflows.ScheduleReschedule, &d, workflows.RescheduleRequest{NextRunAt: at})
	return d, err
}

// BackfillSchedule queues a backfill of a past range.
func (s *Starter) BackfillSchedule(ctx context.Context, name string, req workflows.BackfillRequest) (workflows.BackfillResult, error) {
	var r workflows.BackfillResult
	err := s.updateSchedule(ctx, name, workflows.ScheduleBackfill, &r, req)
	return r, err
}
