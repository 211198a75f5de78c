package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/workflows"
)

// engineWorker is a Temporal worker that also runs, while it runs, the loops the schedule
// engine needs beside its workflows:
//   - the releaser of armed schedule fires (store.Releaser): every process that runs the
//     planners, which arm the fires, releases them too; several share the work;
//   - the run watcher (activities.RunWatcher): it records the outcome of the runs in flight
//     of schedules at rest, which no schedule workflow waits for; several share the work;
//   - the http sender (activities.HTTPSender): it sends the first attempts of the http fires
//     its releaser made true, at once, and sweeps those of senders that died;
//   - the worker's liveness (store.Liveness): the evidence that tells a tick missed while
//     tickgate was down from one that is late because it is busy (S2). The process is
//     recorded alive before it polls its first task;
//   - with resident schedules (TICKGATE_SCHEDULES_RESIDENT), the resident keeper
//     (activities.ResidentKeeper): it wakes the schedules at rest that have no workflow open.
type engineWorker struct {
	sdkworker.Worker
	store    *store.Store
	workerID string
	releaser *store.Releaser
	watcher  *activities.RunWatcher
	sender   *activities.HTTPSender
	liveness *store.Liveness
	keeper   *activities.ResidentKeeper // nil unless schedules are resident

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func withEngineLoops(w sdkworker.Worker, d Deps) *engineWorker {
	st, tc, tr, taskQueue := d.Store, d.Temporal, d.Telemetry.Tracer(), d.Config.TaskQueue
	id := newWorkerID()
	onRelease := activities.ObserveReleased
	if tr != nil {
		onRelease = func(fires []store.ReleasedFire) {
			activities.ObserveReleased(fires)
			activities.TraceReleased(tr, fires)
		}
	}
	acts := &activities.ScheduleActivities{Store: st, Temporal: tc, TaskQueue: taskQueue}
	var keeper *activities.ResidentKeeper
	if d.Config.SchedulesResident {
		keeper = &activities.ResidentKeeper{Acts: acts}
	}
	sender := &activities.HTTPSender{Deliveries: d.httpDeliveries(), Acts: acts, ID: id, Tracer: tr,
		Pauser: autoPauser{&starter.Starter{Client: tc, TaskQueue: taskQueue}}}
	return &engineWorker{
		keeper: keeper,
		Worker: w, store: st, workerID: id,
		releaser: &store.Releaser{Store: st, Targets: activities.TargetStarts{Temporal: tc}, OnRelease: onRelease, Released: sender.Nudge},
		watcher:  &activities.RunWatcher{Acts: acts},
		sender:   sender,
		liveness: &store.Liveness{Store: st, WorkerID: id, Healthy: func(ctx context.Context) error {
			_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
	}
}

// newWorkerID names this process in worker_liveness: host, pid and a random part, so a
// restarted process (which may reuse a pid) is a new worker.
func newWorkerID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}

// startLoops records the process alive and starts the loops (once).
func (w *engineWorker) startLoops() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return nil
	}
	if err := w.store.StartLiveness(context.Background(), w.workerID); err != nil {
		return err
	}
	// Fires that came due while no worker ran are judged before this one polls a task:
	// a late armed workflow fire whose target has not begun can still be stopped, if its
	// catch-up window has closed, before a worker of this process picks it up.
	if fires, err := w.store.ReleaseDue(context.Background(), w.releaser.Targets); err != nil {
		slog.Warn("release fires due at start", "error", err)
	} else if len(fires) > 0 {
		w.releaser.OnRelease(fires)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	loops := []func(context.Context){w.releaser.Run, w.watcher.Run, w.sender.Run, w.liveness.Run}
	if w.keeper != nil {
		loops = append(loops, w.keeper.Run)
	}
	for _, loop := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
	go func(done chan struct{}) {
		wg.Wait()
		close(done)
	}(w.done)
	return nil
}

func (w *engineWorker) stopLoops() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel, w.done = nil, nil
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Start records the process alive, starts the loops, then the worker.
func (w *engineWorker) Start() error {
	if err := w.startLoops(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if err := w.Worker.Start(); err != nil {
		w.stopLoops()
		return err
	}
	return nil
}

// Run runs the loops and the worker until interruptCh or a fatal worker error.
func (w *engineWorker) Run(interruptCh <-chan interface{}) error {
	if err := w.startLoops(); err != nil {
		return fmt.Errorf("run worker: %w", err)
	}
	defer w.stopLoops()
	return w.Worker.Run(interruptCh)
}

// Stop stops the loops and the worker.
func (w *engineWorker) Stop() {
	w.stopLoops()
	w.Worker.Stop()
}

// autoPauser sends a schedule the pause its auto_pause rule asks for, as a pause command
// from tickgate itself (activities.SchedulePauser).
type autoPauser struct {
	starter *starter.Starter
}

func (p autoPauser) AutoPause(ctx context.Context, id int64, name, reason, identity string) error {
	_, err := p.starter.PauseSchedule(ctx, id, name, workflows.PauseRequest{Note: reason, Identity: identity})
	return err
}
