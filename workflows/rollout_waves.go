package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
)

// A rollout's waves (docs/progressive.md), as its workflow moves them along. Where a wave
// stands is kept in PostgreSQL (rollout_waves), and every claim reads it (and takes the
// step SQL can take alone: the bake's start, a failed wave, a wave that opens the next at
// once); this run only adds what needs time or I/O — the bake's durable timer, then the
// health checks — so a run that continued as new, or was restarted, picks up from the
// database where the last one stood.

// Health check activity bounds: the checks' own timeouts bound each probe; these bound
// the activity (a dead worker is noticed by the heartbeat).
var (
	WaveChecksStartToClose = time.Hour
	WaveChecksHeartbeat    = time.Minute
)

// onWave acts on the open wave's state from a claim: BAKING arms the bake's timer (its
// end recorded in SQL), CHECKING runs the health checks. Nothing is started twice.
func (r *rolloutRun) onWave(ctx workflow.Context, w *activities.WaveState) {
	if w == nil || r.waveBusy {
		return
	}
	switch w.Status {
	case domain.WaveBaking:
		if w.BakeUntil == nil {
			return
		}
		d := max(w.BakeUntil.Sub(workflow.Now(ctx)), time.Millisecond)
		summary := fmt.Sprintf("wave %d bake: wave %d waits until %s", w.Wave, w.Wave+1, w.BakeUntil.UTC().Format("2006-01-02 15:04:05 UTC"))
		r.waveBusy = true
		timer := workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: summary})
		wave := w.Wave
		r.sel.AddFuture(timer, func(f workflow.Future) {
			r.waveBusy = false
			if f.Get(ctx, nil) != nil || r.canceled {
				return
			}
			r.runChecks(ctx, wave)
		})
	case domain.WaveChecking:
		r.runChecks(ctx, w.Wave)
	}
}

// runChecks runs the wave's health checks; their verdict opens the next wave (its tasks
// already promoted) or pauses the rollout. Either way the run claims again and the promoter
// brings the waiting causes up to date.
func (r *rolloutRun) runChecks(ctx workflow.Context, wave int32) {
	r.waveBusy = true
	r.pending++
	cctx, cancel := workflow.WithCancel(ctx)
	r.stopChecks = cancel
	actx := workflow.WithActivityOptions(cctx, workflow.ActivityOptions{
		StartToCloseTimeout: WaveChecksStartToClose,
		HeartbeatTimeout:    WaveChecksHeartbeat,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 30 * time.Second},
		Summary:             fmt.Sprintf("health checks of wave %d, then wave %d opens or the rollout pauses", wave, wave+1),
	})
	in := activities.WaveChecksInput{RolloutID: r.id, Wave: wave, Now: workflow.Now(ctx)}
	r.sel.AddFuture(workflow.ExecuteActivity(actx, rolloutActs.RunWaveChecks, in), func(f workflow.Future) {
		r.pending--
		r.waveBusy, r.stopChecks = false, nil
		var res activities.WaveChecksResult
		if err := f.Get(ctx, &res); err != nil {
			if !temporal.IsCanceledError(err) {
				workflow.GetLogger(ctx).Error("wave checks", "wave", wave, "error", err)
			}
		}
		r.claimNext, r.finished = true, true
	})
}

// rolloutDetails is the run's current details in the Temporal UI: the rollout's status,
// why the engine paused or canceled it, and where its open wave stands.
func rolloutDetails(id int64, res activities.ClaimResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rollout %d: %s", id, res.RolloutStatus)
	if res.StatusReason != "" {
		fmt.Fprintf(&b, " — %s", res.StatusReason)
	}
	fmt.Fprintf(&b, "\n\n%d tasks not finished", res.Unfinished)
	if w := res.Wave; w != nil {
		fmt.Fprintf(&b, "; wave %d of %d %s", w.Wave, w.Waves, w.Status)
		if w.Status == domain.WaveBaking && w.BakeUntil != nil {
			fmt.Fprintf(&b, " until %s", w.BakeUntil.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		if w.Reason != "" {
			fmt.Fprintf(&b, " (%s)", w.Reason)
		}
	}
	return b.String()
}
