// Package deviceengine is the device engine's part that runs in the API process
// (docs/devices.md, "What the API process does, and what the workflows do"): the steps an
// agent's request takes at once, so that it never waits for a Temporal round trip. An
// agent's claim marks its executions SENT and tells the PC's timer of their deadline; an
// agent's result is recorded, its freed slot refilled and the next execution handed out by
// one statement (group-committed with the results arriving together); after a commit that
// may have ended the active task, the task advancer activates the next one. Every other
// write of device state an HTTP request makes goes through the Engine too, with the step
// that follows it.
//
// The steps themselves are store transactions and SQL functions; the durable parts (the
// dispatcher, the PC workflows, the PC timers) are workflows, which redo whatever an API
// process left undone. The api package maps HTTP to Engine calls and store reads.
package deviceengine

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tickgate/tickgate/starter"
	"github.com/tickgate/tickgate/store"
)

// Options configure an Engine.
type Options struct {
	Store *store.Store
	// Starter reaches the device workflows (the dispatcher, PC workflows and PC timers);
	// nil: no Temporal call is made (tests of the SQL alone).
	Starter *starter.Starter
	// Listener wakes claims' long-polls (store.StartListener); nil: a claim's wait is not
	// honoured, it answers at once.
	Listener *store.Listener
	// Advancer, when set, advances the active task after a commit that may have ended it
	// (started, with the configuration's settings, as the dispatcher's worker uses); the
	// engine closes it in Close. nil hands that step to the dispatcher workflow, nudged
	// after the answer.
	Advancer *TaskAdvancer
	// Tracer records the device executions' traces (trace.go); nil: tracing is off.
	Tracer trace.Tracer
	// Logf logs what failed after an answer (default log.Printf).
	Logf func(format string, args ...any)
}

// Engine takes the device engine's steps in the API process. Close (or Drain, when the
// engine has no advancer) before the store it uses is closed.
type Engine struct {
	store    *store.Store
	starter  *starter.Starter
	listener *store.Listener
	tracer   trace.Tracer
	logf     func(format string, args ...any)

	// advancer advances the active task after a commit (nil: the dispatcher does).
	advancer *TaskAdvancer
	// results group-commits agents' successes.
	results *store.ResultBatcher
	// alarms remembers the alarms this process set on each PC's timer.
	alarms pcAlarms
	// timerSignals bounds the Temporal calls setting PC timers' alarms across all claims.
	timerSignals chan struct{}
	// afterAnswers counts the calls running after their answer (afterAnswer, Drain).
	afterAnswers sync.WaitGroup
	// traceScope scopes the derived traces of device executions (workContext).
	traceScope     string
	traceScopeOnce sync.Once
}

// maxTimerSignals bounds the Temporal calls setting PC timers' alarms across all claims.
const maxTimerSignals = 64

// New builds an engine on o.Store.
func New(o Options) *Engine {
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return &Engine{
		store: o.Store, starter: o.Starter, listener: o.Listener, tracer: o.Tracer, logf: o.Logf, advancer: o.Advancer,
		results:      o.Store.NewResultBatcher(store.ResultBatcherOptions{}),
		timerSignals: make(chan struct{}, maxTimerSignals),
	}
}

// Drain waits until the calls started after answers (telling a PC timer an alarm, nudging
// the dispatcher) are done, or ctx ends. Call it once the HTTP server stopped taking
// requests.
func (e *Engine) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		e.afterAnswers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("devices: calls after answers still running: %w", ctx.Err())
	}
}

// Close drains the calls after answers, then stops the task advancer once the advances
// asked for are done (TaskAdvancer.Close), or ctx ends.
func (e *Engine) Close(ctx context.Context) error {
	err := e.Drain(ctx)
	if e.advancer != nil {
		if cerr := e.advancer.Close(ctx); err == nil {
			err = cerr
		}
	}
	return err
}

// afterAnswer runs f off the request path: a Temporal call made after a commit (telling a
// PC timer an alarm, nudging the dispatcher) that the agent or operator must not wait for,
// since SQL already holds the truth. Its context outlives the request, bounded by timeout;
// Drain waits for every such call.
func (e *Engine) afterAnswer(timeout time.Duration, f func(ctx context.Context)) {
	e.afterAnswers.Add(1)
	go func() {
		defer e.afterAnswers.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		f(ctx)
	}()
}

// signalTimeout bounds one Temporal call made after a device commit.
const signalTimeout = 10 * time.Second

// advanceSoon hands "advance the active task" over after a commit that may have ended it
// (its last execution final, an abort, a cancel, a device leaving): to the task advancer,
// which activates the next task at once, or — in an engine without one — to the dispatcher
// workflow, nudged after the answer.
func (e *Engine) advanceSoon(why string) {
	if e.advancer != nil {
		e.advancer.AdvanceSoon(why)
		return
	}
	if e.starter == nil {
		return
	}
	e.afterAnswer(signalTimeout, func(ctx context.Context) {
		// SQL already holds the truth, and the dispatcher's safety poll re-checks, so a
		// failure is logged, not returned.
		if err := e.starter.CheckDispatcher(ctx); err != nil {
			e.logf("devices: %v", err)
		}
	})
}
