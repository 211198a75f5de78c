package worker

import (
	"context"
	"sync"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/store"
)

// releasingWorker is a Temporal worker that also runs the releaser of armed schedule
// fires (store.Releaser) while it runs: every process that runs the schedule workflows,
// which arm the fires, releases them too. Several workers share the work safely.
type releasingWorker struct {
	sdkworker.Worker
	releaser *store.Releaser

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func withReleaser(w sdkworker.Worker, st *store.Store) *releasingWorker {
	return &releasingWorker{Worker: w, releaser: &store.Releaser{Store: st, OnRelease: activities.ObserveReleased}}
}

func (w *releasingWorker) startReleaser() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		w.releaser.Run(ctx)
	}(w.done)
}

func (w *releasingWorker) stopReleaser() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel, w.done = nil, nil
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Start starts the worker and the releaser.
func (w *releasingWorker) Start() error {
	if err := w.Worker.Start(); err != nil {
		return err
	}
	w.startReleaser()
	return nil
}

// Run runs the worker and the releaser until interruptCh or a fatal worker error.
func (w *releasingWorker) Run(interruptCh <-chan interface{}) error {
	w.startReleaser()
	defer w.stopReleaser()
	return w.Worker.Run(interruptCh)
}

// Stop stops the releaser and the worker.
func (w *releasingWorker) Stop() {
	w.stopReleaser()
	w.Worker.Stop()
}
