package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// Change is a change to what a workflow emits, guarded by workflow.GetVersion so that
// histories recorded before it replay the old way. Every change id the code passes to
// GetVersion is listed in Changes (TestEveryChangeIsListedPinnedAndReplayed fails
// otherwise), and each has a recorded history in testdata that replays its new branch.
//
// How a change retires (docs/production.md "Retiring a workflow change"): a workflow run
// pins every change of its type when it starts (pinChanges), so the run carries
// "<id>-<version>" in Temporal's TemporalChangeVersion search attribute from its first
// workflow task on. A run without it started before the change was deployed, and may
// still need the old branch; `tickgate versions` counts them per change. Once no open run
// needs it anywhere the workflows run — the schedule and PC workflows continue as new, so
// their old runs end on their own — the old branch and the GetVersion call go, and so does
// the change from this list.
type Change struct {
	ID string
	// Max is the version the code takes for runs started after the change.
	Max workflow.Version
	// Workflows are the workflow types whose code calls GetVersion with this id.
	Workflows []string
	// What says what the old branch did, for whoever retires it.
	What string
}

// Changes are the GetVersion change ids in the code.
var Changes = []Change{
	{
		ID: rolloutRunnerChange, Max: 1, Workflows: []string{RolloutWorkflowType},
		What: "before it, a rollout ran its executor tasks in fixed batches, each claimed by the workflow",
	},
	{
		ID: rolloutWavesChange, Max: 1, Workflows: []string{RolloutWorkflowType},
		What: "before it, a rollout had one wave: its claims took no wave step, it armed no bake timer and ran no health checks",
	},
	{
		ID: scheduleCalendarsChange, Max: 1, Workflows: []string{ScheduleWorkflowType},
		What: "before it, a schedule's workflow did not ask whether a calendar excludes a tick before deciding it " +
			"(no ExcludedBy local activity), nor passed its calendars to the records of its ticks",
	},
	{
		ID: scheduleOneTimeReloadChange, Max: 1, Workflows: []string{ScheduleWorkflowType},
		What: "before it, a schedule whose spec an update changed counted its ticks from the reload, even a " +
			"one-time spec whose at the update set a moment before",
	},
	{
		ID: httpDeliveryLoadsRunChange, Max: 1, Workflows: []string{HTTPDeliveryWorkflowType},
		What: "before it, a delivery took its action, retry policy and tick key from its input, and ran no " +
			"LoadHTTPDelivery local activity first",
	},
	{
		ID: httpDeliveryAfterFirstAttemptChange, Max: 1, Workflows: []string{HTTPDeliveryWorkflowType},
		What: "before it, every attempt of a delivery was the workflow's: none was sent before it started, and it " +
			"counted none it had not made (no FirstAttempts loaded, no wait before its first activity)",
	},
	{
		ID: scheduleCapChange, Max: 1, Workflows: []string{ScheduleWorkflowType},
		What: "before it, a schedule had no concurrency cap: under allow_all every tick started at once (no max_concurrent)",
	},
	{
		ID: scheduleOneWriterChange, Max: 1, Workflows: []string{ScheduleWorkflowType},
		What: "before it, a schedule's update and signal handlers decided their commands themselves, concurrently " +
			"with the loop, and a watch recorded its run's end from its own coroutine (schedule_legacy.go: the mirror " +
			"mutex, the starting counter, the dirty flag)",
	},
	{
		ID: scheduleResidentChange, Max: 1, Workflows: []string{ScheduleWorkflowType},
		What: "before it, a schedule's workflow ended when it rested, whatever TICKGATE_SCHEDULES_RESIDENT said (no StayOpen " +
			"in its rest request, no look and no timer at rest)",
	},
	{
		ID: scheduleFirePremiseChange, Max: 1, Workflows: []string{ScheduleWorkflowType},
		What: "before it, the record of a fire that starts a run carried no premise (TickRecord.Premise): PostgreSQL " +
			"recorded it whatever else ran, and a run a lost workflow task left in flight was not counted by the overlap " +
			"policy or the cap until it ended",
	},
}

// BranchTakenPrefix begins the value of the side effect branchTaken writes.
const BranchTakenPrefix = "branch taken: "

// branchTaken writes the event by which a history shows that the new branch of change id
// ran — a side effect whose value is BranchTakenPrefix and the id — where the branch first
// does what the old one did not (once per run: the caller keeps the flag). The version
// marker alone proves nothing: every run pins every change at its start, whether or not it
// ever reaches the branch. TestEveryChangeIsListedPinnedAndReplayed looks for this event,
// or for another that only the new branch produces, in a recorded history.
func branchTaken(ctx workflow.Context, id string) {
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return BranchTakenPrefix + id })
}

// pinChanges records, at the start of a run of workflowType, the version of every change
// its code may call: from then on the run takes the new branch of each wherever it meets
// it, and says so in TemporalChangeVersion — which is how `tickgate versions` tells the runs
// that may still need an old branch from those that never will. A history recorded before a
// change has no marker at the start, so its replay gets the default version there, and
// takes the old branch later, as it did.
func pinChanges(ctx workflow.Context, workflowType string) {
	for _, c := range Changes {
		for _, t := range c.Workflows {
			if t == workflowType {
				workflow.GetVersion(ctx, c.ID, workflow.DefaultVersion, c.Max)
			}
		}
	}
}
