package worker

import (
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/internal/config"
)

// PollerOptions are the poll settings every tickgate worker uses: pollers goroutines per
// task queue kind to begin with (config.DefaultWorkerPollers when fewer than 2).
//
// Workflow tasks are polled with the SDK's autoscaling behaviour, not a fixed count. With a
// fixed count the SDK sends every workflow poll to the worker's sticky queue while that
// queue reports a backlog, and a worker whose cached workflows fire every second always
// reports one. When another worker died, the workflows it had cached went to the normal
// queue and waited there: in the chaos run on the real server, 105 schedule workflows sat
// in a normal-queue backlog of 170 tasks for over seven minutes while both live workers held
// all 8 of their workflow pollers on their sticky queues (temporal_num_pollers
// {poller_type="workflow_task"} 0). The autoscaling balancer always keeps a normal poll
// open, and grows the sticky and normal polls apart as their backlogs ask.
func PollerOptions(pollers int) sdkworker.Options {
	if pollers < 2 {
		pollers = config.DefaultWorkerPollers
	}
	return sdkworker.Options{
		WorkflowTaskPollerBehavior: sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{
			InitialNumberOfPollers: pollers,
			MinimumNumberOfPollers: 2,
			MaximumNumberOfPollers: max(pollers, maxWorkflowPollers),
		}),
		MaxConcurrentActivityTaskPollers: pollers,
	}
}

// maxWorkflowPollers caps each of the normal and sticky workflow polls a worker keeps open.
const maxWorkflowPollers = 32
