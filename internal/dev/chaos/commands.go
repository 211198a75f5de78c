package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tickgate/tickgate/internal/dev/chaos/histories"
)

// Command schedules: workflow-action schedules that clients pause, resume and trigger
// throughout the faults, several clients at once, each command with a request id of its
// own, reading back after each command whether the schedule is paused and which manual runs
// it has. The history goes to histories.ScheduleModel. Their paused spells record no ticks
// (docs/schedules.md, pause), so S2 leaves them out; they end resumed.

// commandName names the i-th command schedule.
func commandName(i int) string { return fmt.Sprintf("chaos-cmd-%02d", i) }

// commandPrefix is what S2 leaves out.
const commandPrefix = "chaos-cmd-"

// createCommandSchedules creates the profile's command schedules.
func createCommandSchedules(ctx context.Context, c *apiClient, p Profile, l *load, targetQueue string) error {
	for i := 0; i < p.CommandSchedules; i++ {
		body := map[string]any{
			"name": commandName(i),
			"spec": map[string]any{"interval": p.CommandEvery.String(), "start_at": l.startAt.Format(time.RFC3339)},
			"action": map[string]any{"kind": "workflow", "workflow_type": TargetWorkflowName, "task_queue": targetQueue,
				"input": TargetInput{MinMs: p.TargetMin.Milliseconds(), MaxMs: p.TargetMin.Milliseconds() * 5}},
			"policies": map[string]any{"overlap": "allow_all", "catchup_window": p.CatchupWindow.String()},
			"labels":   chaosLabel(),
		}
		if err := c.do(ctx, http.MethodPost, "/api/v1/schedules", body, nil); err != nil {
			return err
		}
	}
	return nil
}

// commandDriver sends the commands and keeps their history.
type commandDriver struct {
	c    *recordingClient
	h    *history
	logf func(string, ...any)
}

// drive runs two clients per command schedule until ctx ends: each in turn sends a
// trigger (half the time), a pause or a resume, then reads the schedule back.
func (d *commandDriver) drive(ctx context.Context, p Profile, seed uint64) {
	var wg sync.WaitGroup
	for i := 0; i < p.CommandSchedules; i++ {
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(i*2+k))) // #nosec G115 G404 -- i and k count up from 0; a generator seeded so that a run repeats
				client := fmt.Sprintf("%s client %d", commandName(i), k)
				for ctx.Err() == nil {
					switch n := rng.IntN(4); {
					case n < 2:
						d.command(ctx, client, commandName(i), histories.ScheduleTrigger)
					case n == 2:
						d.command(ctx, client, commandName(i), histories.SchedulePause)
					default:
						d.command(ctx, client, commandName(i), histories.ScheduleResume)
					}
					d.read(ctx, client, commandName(i))
					sleepCtx(ctx, time.Duration(500+rng.IntN(2500))*time.Millisecond)
				}
			}()
		}
	}
	wg.Wait()
}

// command sends one command with a request id of its own and records it.
func (d *commandDriver) command(ctx context.Context, client, name, kind string) {
	req := d.c.requestID("cmd")
	var body any = map[string]any{}
	path := "/schedules/" + name + "/" + kind
	if kind == histories.SchedulePause {
		body = map[string]any{"note": "chaos command " + req}
	}
	code, began, ended := d.c.call(ctx, http.MethodPost, path, req, body, nil)
	if ctx.Err() != nil && code == 0 {
		// Cut short by the run itself: it may still have taken effect, as any unanswered one.
		d.h.add(client, histories.ScheduleOp{Kind: kind, Schedule: name, Request: req, Client: client}, histories.ScheduleOut{}, began, time.Time{}, false)
		return
	}
	d.h.add(client, histories.ScheduleOp{Kind: kind, Schedule: name, Request: req, Client: client}, histories.ScheduleOut{Code: code}, began, ended, code != 0)
}

// read records what the schedule is: paused or not (GET /schedules/{name}), and its manual
// runs (each named by its request in its workflow id, schedule/<name>/run/manual/<request>).
// A read that got no answer is left out: it saw nothing.
func (d *commandDriver) read(ctx context.Context, client, name string) {
	var sched struct {
		Paused bool   `json:"paused"`
		State  string `json:"state"`
	}
	code, began, ended := d.c.call(ctx, http.MethodGet, "/schedules/"+name, "", nil, &sched)
	if code == http.StatusOK {
		d.h.add(client, histories.ScheduleOp{Kind: histories.ScheduleReadPaused, Schedule: name, Client: client},
			histories.ScheduleOut{Code: code, Paused: sched.Paused || sched.State == "paused"}, began, ended, true)
	}
	runs, code, began, ended := list[RunRow](ctx, d.c, "/schedules/"+name+"/runs?trigger=manual")
	if code != http.StatusOK {
		return
	}
	prefix := "schedule/" + name + "/run/manual/"
	var reqs []string
	for _, r := range runs {
		if req, ok := strings.CutPrefix(r.WorkflowID, prefix); ok {
			reqs = append(reqs, req)
		}
	}
	slices.Sort(reqs)
	d.h.add(client, histories.ScheduleOp{Kind: histories.ScheduleReadRuns, Schedule: name, Client: client},
		histories.ScheduleOut{Code: code, Requests: reqs}, began, ended, true)
}

// RunRow is the part of a run the reads need.
type RunRow struct {
	ID         int64  `json:"id"`
	Trigger    string `json:"trigger"`
	WorkflowID string `json:"workflow_id"`
}

// finish resumes every command schedule (each until answered) and reads it a last time.
func (d *commandDriver) finish(ctx context.Context, p Profile) {
	for i := 0; i < p.CommandSchedules; i++ {
		name := commandName(i)
		for try := 0; try < 5 && ctx.Err() == nil; try++ {
			req := d.c.requestID("cmd-end")
			code, began, ended := d.c.call(ctx, http.MethodPost, "/schedules/"+name+"/resume", req, map[string]any{}, nil)
			d.h.add("finish", histories.ScheduleOp{Kind: histories.ScheduleResume, Schedule: name, Request: req, Client: "finish"},
				histories.ScheduleOut{Code: code}, began, ended, code != 0)
			if code == http.StatusOK {
				break
			}
			d.logf("chaos: resume %s at the end: answered %d", name, code)
		}
		d.read(ctx, "finish", name)
	}
}
