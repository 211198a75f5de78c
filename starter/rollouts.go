package starter

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/workflows"
)

func (s *Starter) rolloutOptions(rolloutID int64) client.StartWorkflowOptions {
	id := strconv.FormatInt(rolloutID, 10)
	return client.StartWorkflowOptions{
		ID:                       domain.RolloutWorkflowID(rolloutID),
		TaskQueue:                s.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.KindKey.ValueSet(workflows.KindRollout), workflows.RolloutKey.ValueSet(id)),
		StaticSummary: "rollout " + id + ": claims and runs its AVAILABLE tasks",
	}
}

// StartRollout starts a rollout's workflow (kept if already running).
func (s *Starter) StartRollout(ctx context.Context, rolloutID int64) error {
	_, err := s.Client.ExecuteWorkflow(ctx, s.rolloutOptions(rolloutID), workflows.RolloutWorkflowType,
		workflows.RolloutInput{RolloutID: rolloutID})
	if err != nil {
		return fmt.Errorf("start rollout workflow %d: %w", rolloutID, err)
	}
	return nil
}

// signalRollout signals a rollout's workflow, starting it first if it is not running (a
// finished rollout's workflow restarts when a task is retried).
func (s *Starter) signalRollout(ctx context.Context, rolloutID int64, signal string, arg any) error {
	opts := s.rolloutOptions(rolloutID)
	_, err := s.Client.SignalWithStartWorkflow(ctx, opts.ID, signal, arg, opts, workflows.RolloutWorkflowType,
		workflows.RolloutInput{RolloutID: rolloutID})
	if err != nil {
		return fmt.Errorf("signal %s to rollout workflow %d: %w", signal, rolloutID, err)
	}
	return nil
}

// NudgeRollouts tells the rollouts' workflows that tasks were promoted into them.
func (s *Starter) NudgeRollouts(ctx context.Context, rolloutIDs []int64) error {
	var errs []error
	for _, id := range rolloutIDs {
		errs = append(errs, s.signalRollout(ctx, id, workflows.SignalPromoted, nil))
	}
	return errors.Join(errs...)
}

// NudgePromoter asks the promoter singleton for a round, starting it if needed.
func (s *Starter) NudgePromoter(ctx context.Context) error {
	_, err := s.Client.SignalWithStartWorkflow(ctx, domain.PromoterWorkflowID(s.TaskQueue), workflows.SignalNudgePromoter, nil,
		client.StartWorkflowOptions{
			ID:                    domain.PromoterWorkflowID(s.TaskQueue),
			TaskQueue:             s.TaskQueue,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				workflows.KindKey.ValueSet(workflows.KindPromoter)),
			StaticSummary: "rollout promoter: applies the gates PENDING → AVAILABLE across all rollouts",
		}, workflows.PromoterWorkflowType)
	if err != nil {
		return fmt.Errorf("nudge rollout promoter: %w", err)
	}
	return nil
}

// SendExternalTaskResult delivers an external task's result to its rollout's workflow.
func (s *Starter) SendExternalTaskResult(ctx context.Context, rolloutID int64, res workflows.ExternalTaskResult) error {
	return s.signalRollout(ctx, rolloutID, workflows.SignalTaskResult, res)
}

// CancelRunningTaskRun asks a rollout's workflow to cancel one RUNNING task.
func (s *Starter) CancelRunningTaskRun(ctx context.Context, rolloutID, taskID int64) error {
	return s.signalRollout(ctx, rolloutID, workflows.SignalCancelTask, taskID)
}

// StopRollout tells a canceled rollout's workflow to cancel its RUNNING tasks and end; a
// workflow that is not running has nothing to stop.
func (s *Starter) StopRollout(ctx context.Context, rolloutID int64) error {
	err := s.Client.SignalWorkflow(ctx, domain.RolloutWorkflowID(rolloutID), "", workflows.SignalCancelRollout, nil)
	var notFound *serviceerror.NotFound
	if err != nil && !errors.As(err, &notFound) {
		return fmt.Errorf("stop rollout workflow %d: %w", rolloutID, err)
	}
	return nil
}
