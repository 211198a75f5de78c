// Package workflows holds tickgate's workflow functions and, with them, the contract other
// services use: workflow ids, signal / query / update names and their payload types.
package workflows

import "go.temporal.io/sdk/temporal"

// Search attributes every tickgate workflow carries (registered by `tickgate dev` and the
// test harness; see internal/devstack.SearchAttributes), so an operator can filter
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
	KindSchedule           = "schedule"
	KindScheduleReconciler = "schedule-reconciler"
	KindRollout            = "rollout"
	KindPromoter           = "promoter"
	KindDispatcher         = "dispatcher"
	KindPC                 = "pc"
	KindDeviceSlot         = "device-slot"
)
