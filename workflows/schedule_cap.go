package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/tickgate/tickgate/domain"
)

// The concurrency cap (docs/schedules.md "Policies"): under overlap allow_all, at most
// max_concurrent runs of a schedule are in flight at once. The rule is
// scheduleplan.Schedule.Room, which the planner applies when it arms fires ahead; here the
// schedule's workflow applies it to every tick it decides — scheduled, catch-up, manual and
// backfill alike — and to the ticks waiting in its buffer.

// scheduleCapChange guards the cap in the schedule workflow: histories recorded before it
// never buffered or skipped a tick under allow_all.
const scheduleCapChange = "schedule-max-concurrent"

// capRoom is how many more runs the cap lets start now, with waitingAhead ticks due to start
// before the one decided, and whether the schedule has a cap at all.
func (w *scheduleWorkflow) capRoom(ctx workflow.Context, waitingAhead int) (room int, capped bool) {
	if w.def.MaxConcurrent <= 0 || workflow.GetVersion(ctx, scheduleCapChange, workflow.DefaultVersion, 1) < 1 {
		return 0, false
	}
	p := w.planFacts()
	p.Waiting = waitingAhead
	return p.Room()
}

// applyCap decides a tick fired under allow_all whose schedule's cap is full: it waits in
// the buffer, recorded BUFFERED with the reason (behind the ticks waiting already, which
// start first), or is recorded SKIPPED with the reason under overlap_when_full skip. full is
// false when the tick may start.
func (w *scheduleWorkflow) applyCap(ctx workflow.Context, tick time.Time, trigger domain.Trigger, key string, input json.RawMessage) (full bool, res TriggerResult, err error) {
	ahead := len(w.carry.Buffer)
	room, capped := w.capRoom(ctx, ahead)
	if !capped || room > 0 {
		return false, TriggerResult{}, nil
	}
	n, running := w.def.MaxConcurrent, len(w.carry.Running)
	switch {
	case w.def.WhenFull == domain.WhenFullSkip:
		res, err = w.record(ctx, tick, trigger, key, domain.RunSkipped,
			fmt.Sprintf("max_concurrent %d: %s in flight (overlap_when_full skip)", n, count(running, "run")), "")
		return true, res, err
	case ahead >= maxBuffer:
		res, err = w.record(ctx, tick, trigger, key, domain.RunSkipped,
			fmt.Sprintf("max_concurrent %d: buffer full (%d ticks waiting)", n, ahead), "")
		return true, res, err
	}
	reason := fmt.Sprintf("max_concurrent %d: %s in flight; waits for one to end", n, count(running, "run"))
	if ahead > 0 {
		reason = fmt.Sprintf("max_concurrent %d: %s in flight and %s waiting before it; waits its turn", n, count(running, "run"), count(ahead, "tick"))
	}
	res, err = w.record(ctx, tick, trigger, key, domain.RunBuffered, reason, "")
	if err != nil || res.Status != domain.RunBuffered {
		return true, res, err // recorded before with another outcome: that outcome stands
	}
	w.carry.Buffer = append(w.carry.Buffer, BufferedTick{Tick: tick, Trigger: trigger, Key: key, Input: input, Overlap: domain.OverlapAllowAll})
	return true, res, nil
}

// mayStartBuffered reports whether the buffered tick first in line may start now: one
// waiting under the cap when the cap has room (or was lifted), one waiting under another
// policy when nothing runs.
func (w *scheduleWorkflow) mayStartBuffered(ctx workflow.Context, b BufferedTick) bool {
	overlap := b.Overlap
	if overlap == "" {
		overlap = w.def.Overlap
	}
	if overlap == domain.OverlapAllowAll {
		room, capped := w.capRoom(ctx, 0)
		return !capped || room > 0
	}
	return len(w.carry.Running) == 0
}

// count says "1 run", "3 runs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
