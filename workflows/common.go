// Package workflows holds tickgate's workflow functions and, with them, the contract other
// services use: signal / query / update names, their payload types, and the workflow ids
// under the names other services call (domain/workflow_ids.go spells each id once).
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Search attributes every tickgate workflow carries (registered by `tickgate dev` and the
// test harness; see internal/dev/devstack.SearchAttributes), so an operator can filter
// `TickgateKind = "schedule"` in the Temporal UI.
var (
	KindKey     = temporal.NewSearchAttributeKeyKeyword("TickgateKind")
	ScheduleKey = temporal.NewSearchAttributeKeyKeyword("TickgateSchedule")
	RolloutKey  = temporal.NewSearchAttributeKeyKeyword("TickgateRollout")
	PCKey       = temporal.NewSearchAttributeKeyKeyword("TickgatePC")
	TaskKey     = temporal.NewSearchAttributeKeyKeyword("TickgateTask")
)

// Kinds, the values of TickgateKind.
const (
	KindSchedule        = "schedule"
	KindSchedulePlanner = "schedule-planner"
	KindRollout         = "rollout"
	KindPromoter        = "promoter"
	KindDispatcher      = "dispatcher"
	KindPC              = "pc"
	KindPCTimer         = "pc-timer"
)

// waitOutOutages bounds the retries of the local activities that read and write
// PostgreSQL. The SDK defaults a local activity's ScheduleToCloseTimeout to its
// StartToCloseTimeout, so without it a database outage longer than one attempt (a restart
// with crash recovery takes longer) failed the whole workflow — found by the chaos run.
// An outage is waited out instead, retrying every few seconds.
const waitOutOutages = 30 * 24 * time.Hour

// databaseLocalActivity runs one SQL round (a promotion, a claim) as a local activity that
// waits out a database outage (waitOutOutages), retrying at most every 10 s.
func databaseLocalActivity(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute, ScheduleToCloseTimeout: waitOutOutages,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
		Summary:     summary,
	})
}

// handlerCount counts a workflow's signal handlers that are mid-way. AllHandlersFinished
// counts update handlers only; a workflow that continued as new or completed while a signal
// handler was mid-way (between its database write and its state change, say) would lose
// what the handler had not done yet. Every signal handler counts itself with track, and
// the workflow waits for awaitIdle before it continues as new or completes.
type handlerCount int

// track counts a handler in flight until the returned func is called: `defer h.track()()`.
func (h *handlerCount) track() func() {
	*h++
	return func() { *h-- }
}

// awaitIdle waits until no signal or update handler is mid-way. It adds no command: when
// nothing is in flight it returns at once.
func (h *handlerCount) awaitIdle(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool { return *h == 0 && workflow.AllHandlersFinished(ctx) })
}
