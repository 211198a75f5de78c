package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// The premise of a fire (docs/schedules.md "How the workflow decides"): the overlap policies
// and the cap decide a fire on the runs in flight, and the workflow counts its own
// (carry.Running). That count can miss a run. A workflow task whose local activities
// committed — a fire recorded RUNNING, its target started — can be lost before Temporal
// completes it (the server restarted in between; an update the task took is then lost with
// it), and its retry decides without that run: the chaos run found a capped schedule at
// three runs for two minutes that way. So the record of a fire that starts a run carries the
// runs the decision counted (TickRecord.Premise), and PostgreSQL, under the schedule's row
// lock, records it only when it holds no other run in flight. Otherwise nothing is recorded;
// the workflow takes the runs it did not know of in — starts them, idempotently, and watches
// them to their end (adoptIfUnwatched) — and decides the fire again with them counted. It
// costs no round trip when the count is right.

// scheduleFirePremiseChange guards the premise: before it, a fire's record carried none, and
// a run a lost workflow task left in flight went uncounted until its end.
const scheduleFirePremiseChange = "schedule-fire-premise"

// maxDecisions bounds how often one fire is decided: each time its record finds runs the
// workflow did not count, it takes them in, so the next decision counts them. (A run that
// can be neither started nor finished — Temporal and PostgreSQL both failing through the
// local activities' retries — is found again each time; the fire then fails like any record
// that cannot be written.)
const maxDecisions = 4

// premise is what a fire that starts a run under overlap is decided on: the runs in flight
// the workflow holds. Nil — no check — when the decision does not rest on them (allow_all
// without a cap), in a run pinned before scheduleFirePremiseChange, and in one pinned before
// scheduleOneWriterChange (whose handlers decide beside the loop).
func (w *scheduleWorkflow) premise(ctx workflow.Context, overlap domain.Overlap) *activities.FirePremise {
	if w.legacy != nil || (overlap == domain.OverlapAllowAll && w.def.MaxConcurrent <= 0) ||
		workflow.GetVersion(ctx, scheduleFirePremiseChange, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	p := &activities.FirePremise{Running: make([]int64, 0, len(w.carry.Running))}
	for _, r := range w.carry.Running {
		p.Running = append(p.Running, r.RunID)
	}
	return p
}

// unknownRuns is a fire whose record found runs in flight the workflow had not counted: it
// recorded nothing, and the workflow has taken them in (takeIn); the fire is decided again.
type unknownRuns struct {
	ids []int64
}

func (e *unknownRuns) Error() string {
	return fmt.Sprintf("runs %v were in flight beside the ones the workflow counted: the fire is decided again", e.ids)
}

// takeIn starts (idempotently) and watches the runs in flight a record found that the
// workflow did not count, and answers the fire with unknownRuns, for its decider to decide it
// again with them counted.
func (w *scheduleWorkflow) takeIn(ctx workflow.Context, runs []activities.RunRecord) error {
	e := &unknownRuns{}
	for _, r := range runs {
		workflow.GetLogger(ctx).Warn("a run in flight the workflow did not count: taken in, and the fire decided again",
			"run", r.ID, "workflow_id", r.WorkflowID)
		w.adoptIfUnwatched(ctx, r, nil)
		e.ids = append(e.ids, r.ID)
	}
	return e
}
