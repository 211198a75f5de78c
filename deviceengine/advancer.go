package deviceengine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/store"
)

// TaskAdvancer owns "advance the active task" (D1) for the API process (store.Advance is
// the step). A request handler
// whose commit may have ended the active task (its last execution final, an abort, a
// cancel) calls AdvanceSoon after the commit and returns at once; the advancer's own
// goroutine then runs Advance — the one place a task becomes active — with the settings in
// force, so the next task starts without waiting for a Temporal round trip to the
// dispatcher. Start and Close bound its life: Close stops taking requests, finishes the
// queued ones and waits for them.
//
// The queue is bounded and coalesces: one Advance covers every commit made before it
// started, so a request arriving while another one still waits its turn adds nothing and
// is dropped. After each Advance that changed the active task, or failed, Notify tells the
// dispatcher workflow (starting it if needed), which owns the step from there: it retries a
// failed one, and its safety poll covers whatever a closed advancer left.
type TaskAdvancer struct {
	store    *store.Store
	settings domain.DeviceSettings
	notify   func(context.Context) error
	logger   *slog.Logger
	timeout  time.Duration

	queue chan string

	mu      sync.Mutex // guards started and closed against a send on a closed queue
	started bool
	closed  bool
	done    chan struct{}
	ctx     context.Context // canceled when Close gives up waiting
	cancel  context.CancelFunc
}

// TaskAdvancerOptions configure a TaskAdvancer.
type TaskAdvancerOptions struct {
	// Settings are the attempt limit and device timeout a task activated here takes: the
	// process's configuration (internal/config), as the dispatcher's worker uses.
	Settings domain.DeviceSettings
	// Notify, when set, is called after each Advance, committed or failed, to nudge the
	// dispatcher workflow (starter.Starter.CheckDispatcher).
	Notify func(context.Context) error
	// Logger receives what each advance did and its failures (default slog.Default()).
	Logger *slog.Logger
	// Queue is how many requests may wait (default 16); more are coalesced.
	Queue int
	// Timeout bounds one Advance, and its notification (default 30 seconds).
	Timeout time.Duration
}

// NewTaskAdvancer builds an advancer for st; it does nothing until Start.
func NewTaskAdvancer(st *store.Store, opts TaskAdvancerOptions) (*TaskAdvancer, error) {
	if err := opts.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("task advancer: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Queue <= 0 {
		opts.Queue = 16
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &TaskAdvancer{
		store: st, settings: opts.Settings, notify: opts.Notify, logger: opts.Logger, timeout: opts.Timeout,
		queue: make(chan string, opts.Queue), done: make(chan struct{}), ctx: ctx, cancel: cancel,
	}, nil
}

// Settings are the settings tasks activated here take.
func (a *TaskAdvancer) Settings() domain.DeviceSettings { return a.settings }

// Start runs the advancer's goroutine; a second Start does nothing.
func (a *TaskAdvancer) Start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.closed {
		return
	}
	a.started = true
	go a.run()
}

// AdvanceSoon asks for an Advance after a commit that may have ended the active task; why
// says which commit, for the log. It never blocks; after Close it is a no-op (the
// dispatcher's safety poll still advances).
func (a *TaskAdvancer) AdvanceSoon(why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		a.logger.Warn("devices: task advancer closed; the dispatcher will advance", "after", why)
		return
	}
	select {
	case a.queue <- why:
	default:
		// Full: the requests waiting will run an Advance that starts after this commit.
	}
}

// Close stops taking requests and waits until the queued ones are done, or until ctx
// ends, when the advance in progress is canceled (its transaction rolls back; the
// dispatcher's safety poll does the step).
func (a *TaskAdvancer) Close(ctx context.Context) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	started := a.started
	close(a.queue)
	a.mu.Unlock()
	if !started {
		a.cancel()
		if n := len(a.queue); n > 0 {
			a.logger.Warn("devices: task advancer closed before it started; the dispatcher will advance", "requests", n)
		}
		return nil
	}
	select {
	case <-a.done:
		a.cancel()
		return nil
	case <-ctx.Done():
		a.cancel()
		<-a.done
		return fmt.Errorf("close task advancer: %w", ctx.Err())
	}
}

func (a *TaskAdvancer) run() {
	defer close(a.done)
	for first := range a.queue {
		whys := []string{first}
		for more := true; more; {
			select {
			case why, ok := <-a.queue:
				if !ok {
					more = false
					break
				}
				whys = append(whys, why)
			default:
				more = false
			}
		}
		a.advance(whys)
	}
}

// advance runs one Advance for the commits that asked, then notifies the dispatcher if it
// changed the active task or failed.
func (a *TaskAdvancer) advance(whys []string) {
	ctx, cancel := context.WithTimeout(a.ctx, a.timeout)
	defer cancel()
	adv, err := a.store.Advance(ctx, a.settings)
	switch {
	case err != nil:
		a.logger.Error("devices: advance failed; the dispatcher will retry it", "after", whys, "error", err)
	case len(adv.Finished) > 0 || len(adv.Activated) > 0:
		a.logger.Info("devices: advanced the active task", "after", whys, "finished", adv.Finished,
			"activated", adv.Activated, "active", adv.ActiveTaskID, "refilled", adv.Refilled)
	}
	if a.notify == nil || a.ctx.Err() != nil { // closing: the dispatcher's safety poll does it
		return
	}
	if err == nil && len(adv.Finished) == 0 && len(adv.Activated) == 0 {
		// Nothing to hand over: the dispatcher would find what this Advance found. (Each
		// PC's last result asks for an Advance; only the task's last one changes anything,
		// and a Temporal call per PC would hold the queue up behind it.)
		return
	}
	nctx, ncancel := context.WithTimeout(a.ctx, a.timeout)
	defer ncancel()
	if err := a.notify(nctx); err != nil {
		a.logger.Error("devices: nudge the dispatcher", "after", whys, "error", err)
	}
}
