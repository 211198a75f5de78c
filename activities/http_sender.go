package activities

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/telemetry"
	"github.com/tickgate/tickgate/metrics"
	"github.com/tickgate/tickgate/store"
)

// First attempts at the event floor (docs/schedules.md "How an http fire is sent"). An http
// fire the planner arms is released like an event fire — made true at its tick by the
// release, one transaction for every fire due — and its first attempt is sent at once by the
// worker that released it: claimed from http_first_attempts in batches, recorded as being
// sent before it is, sent under its host's limits, and recorded again with its answer,
// the run's outcome with it. No Temporal workflow takes part. Only a fire whose first attempt
// fails in a way the retry policy tries again (408, 429, 5xx, no answer), or whose sender
// died mid-send, goes on to its delivery workflow (HTTPDeliveryWorkflow), which counts the
// attempt made.
const (
	// firstAttemptLease is how long a sender holds a first attempt without renewing it: a
	// sender that does not renew its leases this long is taken for dead, and the sweep of
	// another (or of its own successor) takes its rows over.
	firstAttemptLease = 30 * time.Second
	// leaseRenewal is how often a sender renews the leases of the rows it is working on.
	leaseRenewal = 5 * time.Second
	// sweepEvery is how often a sender looks for rows whose lease ran out.
	sweepEvery = 2 * time.Second
	// claimBatch is the most first attempts one claim takes (firstClaim the first claim of
	// a burst, so that its first requests leave sooner); maxHeld the most one process works
	// on at once (sent or waiting for their host's turn).
	firstClaim = 200
	claimBatch = 1000
	maxHeld    = 20000
	// recordBatch bounds the attempts one record (before or after) writes; startRecorders
	// and finishRecorders are how many of each are written at once.
	recordBatch     = 1000
	startRecorders  = 4
	finishRecorders = 2
	// startGather and finishGather are how long a recorder gathers what else comes after the
	// first attempt of a batch: a statement per few requests costs PostgreSQL more than the
	// wait costs them (the start's wait holds the request's turn; the finish's holds nothing).
	startGather  = 2 * time.Millisecond
	finishGather = 20 * time.Millisecond
	// While first attempts the sender holds are still to leave, answers are gathered for up
	// to finishHold (finishBatch at most in one statement): recording them takes PostgreSQL
	// from the requests still to leave, and nothing waits on them but their runs' status.
	finishHold  = 2 * time.Second
	finishBatch = 5000
	// sendPoll is the longest a sender sleeps between two looks at the queue (its
	// releaser nudges it as soon as a release of its process commits).
	sendPoll = time.Second
	// lateNoteAfter: an attempt its host's limits held this long has its lateness, and why,
	// recorded as its run's reason.
	lateNoteAfter = 100 * time.Millisecond
	// stopGrace is how long a stopping sender lets the requests it sent finish.
	stopGrace = 15 * time.Second
)

// HTTPSender sends the first attempts of http fires released by its process (see above).
// Every worker process runs one; they share the queue through the rows' locks and leases.
type HTTPSender struct {
	// Deliveries sends the requests: the outbound client and the process's host limits.
	Deliveries *HTTPDeliveries
	// Acts starts the delivery workflows of the runs handed over.
	Acts *ScheduleActivities
	// ID names the sender (the worker process's id): the rows it holds say so.
	ID string
	// Lease is how long the sender holds a first attempt without renewing it (0:
	// firstAttemptLease).
	Lease  time.Duration
	Logger *slog.Logger
	// Tracer, when set, records each first attempt as a span of its fire's trace
	// (SpanFirstAttempt; nil: tracing off).
	Tracer trace.Tracer
	// Pauser sends the pause of a schedule whose auto_pause rule was met to its workflow
	// (nil: the schedules due to pause themselves wait for a sender that has one).
	Pauser SchedulePauser

	nudgeOnce sync.Once
	nudges    chan struct{}

	mu   sync.Mutex
	held map[int64]struct{}

	starts   chan startReq
	finishes chan store.FirstAttemptOutcome
	// unsent counts the first attempts claimed whose request has not left (nor been given
	// up).
	unsent atomic.Int64
}

// startReq asks the start recorder to record a first attempt as being sent, answering on
// ok whether it may be.
type startReq struct {
	runID int64
	at    time.Time
	ok    chan bool
}

func (s *HTTPSender) init() {
	s.nudgeOnce.Do(func() {
		s.nudges = make(chan struct{}, 1)
		s.held = map[int64]struct{}{}
		s.starts = make(chan startReq, recordBatch)
		s.finishes = make(chan store.FirstAttemptOutcome, recordBatch)
		if s.Logger == nil {
			s.Logger = slog.Default()
		}
	})
}

func (s *HTTPSender) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return firstAttemptLease
}

// Nudge tells the sender that a release committed: it looks at the queue at once.
func (s *HTTPSender) Nudge() {
	s.init()
	select {
	case s.nudges <- struct{}{}:
	default:
	}
}

// Held is how many first attempts the sender is working on.
func (s *HTTPSender) Held() int {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

func (s *HTTPSender) hold(ids []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.held[id] = struct{}{}
	}
}

// letGo forgets rows: their lease is no longer renewed (a row still this sender's in the
// database then runs out, and the sweep takes it).
func (s *HTTPSender) letGo(ids ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.held, id)
	}
}

func (s *HTTPSender) heldIDs() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int64, 0, len(s.held))
	for id := range s.held {
		out = append(out, id)
	}
	return out
}

// Run claims and sends first attempts until ctx ends; the requests already sent then have
// stopGrace to finish and be recorded.
func (s *HTTPSender) Run(ctx context.Context) {
	s.init()
	// Sending and recording go on a little past ctx: a request sent is answered and recorded
	// rather than left for the sweep.
	sendCtx, cancelSend := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSend()
	var sends, recorders sync.WaitGroup
	// Several recorders of each kind: a batch is written while the next one gathers, so the
	// requests a host's turns let go are not held in step behind one statement.
	for i := 0; i < startRecorders; i++ {
		recorders.Add(1)
		go func() { defer recorders.Done(); s.recordStarts(sendCtx) }()
	}
	for i := 0; i < finishRecorders; i++ {
		recorders.Add(1)
		go func() { defer recorders.Done(); s.recordFinishes(sendCtx) }()
	}
	recorders.Add(1)
	go func() { defer recorders.Done(); s.maintain(ctx, sendCtx) }()
	defer func() {
		done := make(chan struct{})
		go func() { sends.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopGrace):
		}
		cancelSend()
		recorders.Wait()
	}()
	size := firstClaim
	for {
		room := maxHeld - s.Held()
		if room > 0 && ctx.Err() == nil {
			want := min(room, size)
			claimed, err := s.Deliveries.Store.ClaimFirstAttempts(ctx, s.ID, s.lease(), want)
			if err != nil && ctx.Err() == nil {
				s.Logger.Warn("claim first attempts of http fires", "error", err)
			}
			ids := make([]int64, len(claimed))
			for i, a := range claimed {
				ids[i] = a.Target.RunID
			}
			s.hold(ids)
			s.unsent.Add(int64(len(claimed)))
			for _, a := range claimed {
				sends.Add(1)
				go func() {
					defer sends.Done()
					s.send(ctx, sendCtx, a)
				}()
			}
			if len(claimed) == want {
				size = claimBatch
				continue // more may be due: no sleep
			}
		}
		size = firstClaim
		wait := sendPoll
		if next, ok, err := s.Deliveries.Store.NextFirstAttemptIn(ctx); err == nil && ok {
			wait = min(max(next, 5*time.Millisecond), sendPoll)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.nudges:
		case <-t.C:
		}
		t.Stop()
	}
}

// send sends one first attempt: its turn under the host's limits (until ctx ends: a
// stopping sender puts back what it has not sent), its record as being sent, the request,
// and its answer to record (sendCtx: a request sent is answered and recorded).
func (s *HTTPSender) send(ctx, sendCtx context.Context, a store.FirstAttempt) {
	left := sync.OnceFunc(func() { s.unsent.Add(-1) })
	defer left()
	t := a.Target
	if t.Unreadable != nil {
		// What it sends cannot be read: its delivery workflow reads it again at each attempt
		// and says why it fails.
		s.Logger.Warn("an http fire's request cannot be read; its delivery workflow takes it", "run", t.RunID, "error", t.Unreadable)
		s.handOver(sendCtx, []int64{t.RunID})
		return
	}
	lim := s.Deliveries.limiter()
	host := t.Action.Host()
	slot, err := lim.Acquire(ctx, host, lim.LimitOf(host, t.Action.Limits))
	if err != nil {
		// Stopping before its turn came: back to the queue, for any sender.
		s.requeue(sendCtx, t.RunID)
		return
	}
	at := s.Deliveries.now()
	ok := make(chan bool, 1)
	select {
	case s.starts <- startReq{runID: t.RunID, at: at, ok: ok}:
	case <-sendCtx.Done():
		slot.Release()
		return
	}
	var sent bool
	select {
	case sent = <-ok:
	case <-sendCtx.Done():
	}
	if !sent {
		// Not recorded as being sent (stopped, swept, or the database failed): not sent.
		slot.Release()
		s.letGo(t.RunID)
		return
	}
	left()
	res := s.Deliveries.attempt(sendCtx, t, 1, at, slot)
	s.trace(a, host, at, slot, res)
	if res.Canceled {
		// The process is going away mid-send: the attempt stays recorded as being sent, and
		// the sweep records it lost and hands it to its delivery workflow.
		s.letGo(t.RunID)
		return
	}
	out := store.FirstAttemptOutcome{
		RunID: t.RunID, Outcome: res.Outcome, StartedAt: at, FinishedAt: at.Add(res.Latency), LatencyMs: res.Latency.Milliseconds(),
		StatusCode: res.StatusCode, Error: res.What, ResponseStart: res.ResponseStart, RetryAfter: res.RetryAfter,
	}
	if slot.Waited >= lateNoteAfter && slot.Why != "" {
		out.Reason = fmt.Sprintf("sent %s after its tick: %s", lateness(at.Sub(a.VisibleAt)), slot.Why)
	}
	msg := res.What
	if res.ResponseStart != "" {
		msg += ": " + oneLine(res.ResponseStart, 200)
	}
	switch res.Outcome {
	case domain.AttemptSucceeded:
		out.RunStatus = domain.RunSucceeded
	case domain.AttemptFinal:
		out.RunStatus, out.RunError = domain.RunFailed, fmt.Sprintf("%s (attempt 1; not retried)", msg)
	default:
		if r, err := domain.NormalizeRetry(t.Retry, domain.ActionHTTP); err == nil && r.MaxAttempts <= 1 {
			out.RunStatus, out.RunError = domain.RunFailed, fmt.Sprintf("%s (gave up after 1 attempts: max_attempts)", msg)
		}
		// Otherwise its delivery workflow tries again, counting this attempt.
	}
	select {
	case s.finishes <- out:
	case <-sendCtx.Done():
		s.letGo(t.RunID)
	}
}

// SpanFirstAttempt is a first attempt of an http fire, in its fire's trace, sent by the worker
// that released it: its host's limits' wait, the request, and its answer.
const SpanFirstAttempt = "schedule.http.first_attempt"

// Attributes of a first attempt's span.
const (
	AttrHTTPHost       = attribute.Key("tickgate.http.host")
	AttrHTTPStatus     = attribute.Key("tickgate.http.status_code")
	AttrHTTPOutcome    = attribute.Key("tickgate.http.outcome")
	AttrHTTPLimitWait  = attribute.Key("tickgate.http.limit_wait_ms")
	AttrHTTPLimitCause = attribute.Key("tickgate.http.limit_cause")
)

// trace records a first attempt's span in its fire's trace (with tracing on).
func (s *HTTPSender) trace(a store.FirstAttempt, host string, sentAt time.Time, slot *HostSlot, res attemptResult) {
	if s.Tracer == nil || a.TraceContext == "" {
		return
	}
	ctx := telemetry.Resume(context.Background(), a.TraceContext)
	_, span := s.Tracer.Start(ctx, SpanFirstAttempt, trace.WithTimestamp(sentAt.Add(-slot.Waited)), trace.WithAttributes(
		AttrRunID.Int64(a.Target.RunID), AttrSchedule.String(a.Target.Schedule), AttrHTTPHost.String(host),
		AttrHTTPOutcome.String(res.Outcome), AttrHTTPLimitWait.Int64(slot.Waited.Milliseconds())))
	if res.StatusCode != 0 {
		span.SetAttributes(AttrHTTPStatus.Int(res.StatusCode))
	}
	if slot.Why != "" {
		span.SetAttributes(AttrHTTPLimitCause.String(slot.Why))
	}
	if res.Outcome != domain.AttemptSucceeded {
		span.SetStatus(codes.Error, res.What)
	}
	span.End(trace.WithTimestamp(sentAt.Add(res.Latency)))
}

// lateness says a lateness in seconds, to a tenth.
func lateness(d time.Duration) string {
	return fmt.Sprintf("%.1f s", max(d, 0).Seconds())
}

// recordStarts records first attempts as being sent, in batches: whatever asked meanwhile,
// up to recordBatch, in one statement.
func (s *HTTPSender) recordStarts(ctx context.Context) {
	for {
		var batch []startReq
		select {
		case <-ctx.Done():
			return
		case r := <-s.starts:
			batch = append(batch, r)
		}
		gather := time.NewTimer(startGather)
	more:
		for len(batch) < recordBatch {
			select {
			case r := <-s.starts:
				batch = append(batch, r)
			case <-gather.C:
				break more
			}
		}
		gather.Stop()
		ids := make([]int64, len(batch))
		at := make([]time.Time, len(batch))
		for i, r := range batch {
			ids[i], at[i] = r.runID, r.at
		}
		recorded, err := s.Deliveries.Store.StartFirstAttempts(ctx, s.ID, ids, at)
		if err != nil && ctx.Err() == nil {
			s.Logger.Warn("record first attempts as sent", "attempts", len(ids), "error", err)
		}
		for _, r := range batch {
			r.ok <- recorded[r.runID]
		}
	}
}

// recordFinishes records the answers of first attempts and their runs' outcomes, in
// batches, then starts the delivery workflows of the runs handed over.
func (s *HTTPSender) recordFinishes(ctx context.Context) {
	for {
		var batch []store.FirstAttemptOutcome
		select {
		case <-ctx.Done():
			return
		case o := <-s.finishes:
			batch = append(batch, o)
		}
		gather := time.NewTimer(finishGather)
		hold := time.Now().Add(finishHold)
	more:
		for len(batch) < finishBatch {
			select {
			case o := <-s.finishes:
				batch = append(batch, o)
			case <-gather.C:
				if s.unsent.Load() > 0 && time.Now().Before(hold) {
					gather.Reset(finishGather) // the burst's requests first
					continue
				}
				break more
			}
		}
		gather.Stop()
		var handOver []int64
		var ended []store.EndedRun
		var err error
		for try := 0; try < 5; try++ {
			if handOver, ended, err = s.Deliveries.Store.FinishFirstAttempts(ctx, s.ID, batch); err == nil || ctx.Err() != nil {
				break
			}
			s.Logger.Warn("record the answers of first attempts", "attempts", len(batch), "error", err)
			if sleepCtx(ctx, time.Duration(try+1)*200*time.Millisecond) != nil {
				break
			}
		}
		ids := make([]int64, len(batch))
		for i, o := range batch {
			ids[i] = o.RunID
		}
		if err != nil {
			// Not recorded: the rows run out, and the sweep hands the runs to their delivery
			// workflows, which act on what the attempts say.
			s.letGo(ids...)
			continue
		}
		handed := map[int64]bool{}
		for _, id := range handOver {
			handed[id] = true
		}
		var done []int64
		for _, id := range ids {
			if !handed[id] {
				done = append(done, id)
			}
		}
		s.letGo(done...)
		countFirstAttempts(batch)
		if hasFailure(ended) {
			go s.AutoPause(ctx) // a schedule may be due to pause itself
		}
		if len(handOver) > 0 {
			go s.handOver(ctx, handOver)
		}
	}
}

// handOver starts the delivery workflow of each run given — it retries the first attempt,
// counting it — and then lets its row go. A run whose start fails keeps its row until its
// lease runs out; the sweep hands it over again.
func (s *HTTPSender) handOver(ctx context.Context, runIDs []int64) {
	var mu sync.Mutex
	var started []int64
	calls := make([]func(), 0, len(runIDs))
	for _, id := range runIDs {
		calls = append(calls, func() {
			if err := s.startDelivery(ctx, id); err != nil {
				if ctx.Err() == nil {
					s.Logger.Warn("start the delivery workflow of an http run", "run", id, "error", err)
				}
				return
			}
			mu.Lock()
			started = append(started, id)
			mu.Unlock()
		})
	}
	runParallel(ctx, calls)
	if err := s.Deliveries.Store.ReleaseFirstAttempts(ctx, s.ID, started); err != nil && ctx.Err() == nil {
		s.Logger.Warn("let go of first attempts handed over", "runs", len(started), "error", err)
	}
	s.letGo(runIDs...)
}

// startDelivery starts the delivery workflow of a run, under the run's workflow id.
func (s *HTTPSender) startDelivery(ctx context.Context, runID int64) error {
	run, err := s.Acts.Store.GetRunByID(ctx, runID)
	if err != nil {
		return err
	}
	row, err := s.Acts.Store.GetScheduleByID(ctx, run.ScheduleID)
	if err != nil {
		return err
	}
	def, err := DefinitionFromRow(row)
	if err != nil {
		return err
	}
	if def.Action.Kind != domain.ActionHTTP {
		def.Action = domain.Action{Kind: domain.ActionHTTP} // its delivery says why it cannot send
	}
	start := RunStart(def.Name, def.Action, def.Retry)
	start.WorkflowID, start.RunID = run.WorkflowID, run.ID
	_, err = s.Acts.StartHandedOver(ctx, start)
	return err
}

// requeue puts a first attempt this sender did not send back in the queue.
func (s *HTTPSender) requeue(ctx context.Context, runID int64) {
	s.letGo(runID)
	if err := s.Deliveries.Store.RequeueFirstAttempts(ctx, s.ID, []int64{runID}); err != nil && ctx.Err() == nil {
		s.Logger.Warn("put a first attempt back in the queue", "run", runID, "error", err)
	}
}

// maintain renews the leases of the rows the sender works on, and sweeps the rows whose
// sender died: never sent, back in the queue; sent, handed to their delivery workflows.
func (s *HTTPSender) maintain(ctx, sendCtx context.Context) {
	renew := time.NewTicker(min(leaseRenewal, s.lease()/3))
	defer renew.Stop()
	sweep := time.NewTicker(sweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-sendCtx.Done():
			return
		case <-renew.C:
			if ids := s.heldIDs(); len(ids) > 0 {
				if _, err := s.Deliveries.Store.RenewFirstAttemptLeases(sendCtx, s.ID, ids, s.lease()); err != nil && sendCtx.Err() == nil {
					s.Logger.Warn("renew the leases of first attempts", "error", err)
				}
			}
		case <-sweep.C:
			if ctx.Err() != nil {
				continue // stopping: another process sweeps
			}
			s.Sweep(ctx)
			s.AutoPause(ctx)
		}
	}
}

// Sweep takes over the first attempts whose sender's lease ran out (see
// store.SweepFirstAttempts) and hands over those that were sent.
func (s *HTTPSender) Sweep(ctx context.Context) {
	s.init()
	swept, err := s.Deliveries.Store.SweepFirstAttempts(ctx, s.ID, s.lease(), claimBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.Logger.Warn("sweep first attempts", "error", err)
		}
		return
	}
	metrics.HTTPFirstAttempts.WithLabelValues(domain.AttemptLost).Add(float64(swept.Lost))
	if swept.Lost > 0 || swept.Requeued > 0 {
		s.Logger.Info("first attempts of a sender that stopped taken over", "requeued", swept.Requeued, "lost", swept.Lost,
			"handed_over", len(swept.HandOver))
	}
	if len(swept.HandOver) > 0 {
		s.hold(swept.HandOver)
		s.handOver(ctx, swept.HandOver)
	}
}

// SchedulePauser pauses a schedule whose auto_pause rule was met, through its workflow (the
// one writer of its paused state), the pause command's identity saying it paused itself
// (domain.AutoPauseIdentity) and its note why. The worker fills it with the starter.
type SchedulePauser interface {
	AutoPause(ctx context.Context, id int64, name, reason, identity string) error
}

// AutoPause sends the pause of every schedule whose auto_pause rule was met to its workflow;
// the workflow's mirror write records it (store.SetPaused). One whose command fails is sent
// again on a later look.
func (s *HTTPSender) AutoPause(ctx context.Context) {
	s.init()
	if s.Pauser == nil {
		return
	}
	due, err := s.Deliveries.Store.AutoPausesDue(ctx, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.Logger.Warn("schedules due to pause themselves", "error", err)
		}
		return
	}
	for _, d := range due {
		if err := s.Pauser.AutoPause(ctx, d.ID, d.Name, d.Reason, domain.AutoPauseIdentity); err != nil && ctx.Err() == nil {
			s.Logger.Warn("pause a schedule its auto_pause rule stops", "schedule", d.Name, "error", err)
		}
	}
}

// countFirstAttempts counts the answered first attempts in the metrics.
func countFirstAttempts(batch []store.FirstAttemptOutcome) {
	for _, o := range batch {
		metrics.HTTPFirstAttempts.WithLabelValues(o.Outcome).Inc()
	}
}

func hasFailure(ended []store.EndedRun) bool {
	for _, e := range ended {
		if e.Status == domain.RunFailed {
			return true
		}
	}
	return false
}
