package activities_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/api"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/config"
	"github.com/tickgate/tickgate/internal/dev/receiver"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
	"github.com/tickgate/tickgate/worker"
)

// senderEnv is a database and a Temporal server, http schedules whose fires a test arms and
// releases by hand, and the parts of a worker process that send and retry them: a worker on
// a task queue of its own (the delivery workflows of runs handed over) and a run watcher
// (their outcomes). The senders themselves a test starts (send).
type senderEnv struct {
	t       *testing.T
	url     string
	st      *store.Store
	plan    *plannerEnv
	acts    *activities.ScheduleActivities
	rule    outbound.Rule
	queue   string
	mu      sync.Mutex
	secrets map[string]string
}

func newSenderEnv(t *testing.T) *senderEnv {
	t.Helper()
	url := testenv.DatabaseURL(t)
	st, err := store.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	tc := testenv.TemporalClient(t)
	queue := fmt.Sprintf("sender-%d", time.Now().UnixNano())
	rule, err := outbound.Parse("127.0.0.1")
	require.NoError(t, err)
	acts := &activities.ScheduleActivities{Store: st, Temporal: tc, Schedules: &recordingStarter{}, TaskQueue: queue}
	e := &senderEnv{t: t, url: url, st: st, acts: acts, rule: rule, queue: queue, secrets: map[string]string{},
		plan: &plannerEnv{t: t, st: st, wakes: &recordingStarter{}, acts: acts}}
	w := sdkworker.New(tc, queue, sdkworker.Options{})
	require.NoError(t, worker.Register(w, worker.Deps{Config: config.Config{TaskQueue: queue, HTTPAllow: rule}, Store: st, Temporal: tc}))
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); (&activities.RunWatcher{Acts: acts}).Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

func (e *senderEnv) secret(schedule string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.secrets[schedule]
	return s, ok
}

// arm creates n http schedules posting to url (the action's limits and retry given), whose
// next tick is a minute away, arms their fires (a planner round) and releases them as of that
// tick, as the releaser at the tick does: their first attempts are then due. It answers the
// schedules' names and the tick.
func (e *senderEnv) arm(prefix string, n int, url string, limits *domain.HostLimit, retry *domain.Retry) ([]string, time.Time) {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	created := now.Add(-time.Hour + time.Minute) // hourly from here: the next tick a minute ahead
	tick := created.Add(time.Hour)
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		act := domain.Action{Kind: domain.ActionHTTP, URL: url, Body: []byte(`{"n":1}`), Timeout: schedulespec.Duration(5 * time.Second), Limits: limits}
		require.NoError(e.t, act.Normalize())
		e.plan.create(name, schedulespec.Spec{Interval: every(1, "HOURS")}, act, api.SchedulePolicies{Overlap: domain.OverlapAllowAll}, created)
		if retry != nil {
			r, err := domain.NormalizeRetry(retry, domain.ActionHTTP)
			require.NoError(e.t, err)
			_, err = e.st.Pool.Exec(ctx, `UPDATE schedules SET retry = $1 WHERE name = $2`, r, name)
			require.NoError(e.t, err)
		}
		secret := domain.SigningSecret([]byte(fmt.Sprintf("%-32s", name)))
		require.NoError(e.t, e.st.SetScheduleSecret(ctx, name, secret))
		e.mu.Lock()
		e.secrets[name] = secret
		e.mu.Unlock()
		names = append(names, name)
	}
	res, err := e.acts.PlanRound(ctx, now)
	require.NoError(e.t, err)
	require.Equal(e.t, n, res.Armed, "one fire armed per schedule")
	_, err = e.st.ReleaseDueAsOf(ctx, &tick, nil)
	require.NoError(e.t, err)
	return names, tick
}

// sender starts a sender named id on its own connection pool (a worker process of its own)
// with the lease given; kill stops it at once, as a process killed: its pool closed first, so
// it writes nothing more, then its loops.
func (e *senderEnv) sender(id string, lease time.Duration) (kill func()) {
	e.t.Helper()
	st, err := store.Open(context.Background(), e.url)
	require.NoError(e.t, err)
	acts := &activities.ScheduleActivities{Store: st, Temporal: e.acts.Temporal, TaskQueue: e.queue}
	s := &activities.HTTPSender{Deliveries: &activities.HTTPDeliveries{Store: st, Outbound: e.rule}, Acts: acts, ID: id, Lease: lease}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	var once sync.Once
	kill = func() {
		once.Do(func() {
			st.Close()
			cancel()
		})
	}
	e.t.Cleanup(func() { kill(); <-done })
	return kill
}

// runs are the runs of the schedules named, at tick, by schedule.
func (e *senderEnv) runs(names []string, tick time.Time) map[string]store.ScheduleRun {
	e.t.Helper()
	out := map[string]store.ScheduleRun{}
	for _, name := range names {
		for _, r := range e.plan.runs(name) {
			if r.ScheduledAt.Equal(tick) {
				out[name] = r
			}
		}
	}
	return out
}

// waitFinal waits until every run of the schedules at tick has its outcome.
func (e *senderEnv) waitFinal(names []string, tick time.Time) map[string]store.ScheduleRun {
	e.t.Helper()
	var runs map[string]store.ScheduleRun
	require.Eventually(e.t, func() bool {
		runs = e.runs(names, tick)
		for _, r := range runs {
			if r.Status == domain.RunRunning {
				return false
			}
		}
		return len(runs) == len(names)
	}, 2*time.Minute, 100*time.Millisecond, "every run has its outcome")
	return runs
}

func (e *senderEnv) attempts(runs map[string]store.ScheduleRun) map[string][]store.RunAttempt {
	e.t.Helper()
	var ids []int64
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	got, err := e.st.RunAttempts(context.Background(), ids)
	require.NoError(e.t, err)
	out := map[string][]store.RunAttempt{}
	for name, r := range runs {
		out[name] = got[r.ID]
	}
	return out
}

// The first attempt of an http fire the planner armed is sent by the worker that released
// it, with no Temporal workflow at all: recorded before it is sent and with its answer, the
// run SUCCEEDED on a 2xx, fired when its request left. A final 4xx ends the run FAILED at
// once, in the dead letter, as the delivery workflow would have: "(attempt 1; not retried)".
func TestFirstAttemptsAreSentByTheWorkerThatReleasedThem(t *testing.T) {
	t.Parallel()
	e := newSenderEnv(t)
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	rcv.Secret = e.secret
	rcv.Answer = func(key string, attempt int) receiver.Answer {
		if rcv.Deliveries()[key].Schedule == "direct-03" {
			return receiver.Answer{Status: http.StatusNotFound}
		}
		return receiver.Answer{}
	}
	names, tick := e.arm("direct", 8, rcv.URL()+"/hook", nil, nil)
	e.sender("worker-a", 0)
	runs := e.waitFinal(names, tick)
	attempts := e.attempts(runs)
	for _, name := range names {
		r, as := runs[name], attempts[name]
		require.Len(t, as, 1, "%s: one attempt", name)
		a := as[0]
		require.True(t, a.Direct, "%s: sent by the worker that released it", name)
		require.NotNil(t, a.FinishedAt, "%s: its answer recorded", name)
		require.NotNil(t, r.FiredAt)
		require.True(t, r.FiredAt.Equal(a.StartedAt), "%s: fired when its request left", name)
		d := rcv.Deliveries()[r.IdempotencyKey]
		require.Equal(t, 1, d.Requests, "%s: its key came once", name)
		require.Zero(t, d.BadSignatures, "%s: signed", name)
		_, err := e.acts.Temporal.DescribeWorkflowExecution(context.Background(), r.WorkflowID, "")
		var notFound *serviceerror.NotFound
		require.True(t, errors.As(err, &notFound), "%s: no workflow was started (%v)", name, err)
		if name == "direct-03" {
			require.Equal(t, domain.RunFailed, r.Status)
			require.Equal(t, "HTTP 404 Not Found (attempt 1; not retried)", r.Error)
			require.Equal(t, domain.AttemptFinal, a.Outcome)
			require.EqualValues(t, 404, *a.StatusCode)
			continue
		}
		require.Equal(t, domain.RunSucceeded, r.Status, name)
		require.Equal(t, domain.AttemptSucceeded, a.Outcome, name)
		require.Equal(t, 1, d.Executions)
	}
	var queued int
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM http_first_attempts`).Scan(&queued))
	require.Zero(t, queued, "no first attempt left queued")
}

// A worker killed mid-batch neither loses nor duplicates a delivery. Sender A takes a burst
// of thirty first attempts, ten in flight at once (the action's limit) against a receiver
// that holds them; A is killed (its connections to PostgreSQL cut, then its loops) with ten
// requests sent and their answers not recorded, twenty never sent. The receiver then answers
// the ten — executing five (200) and refusing five (503) — into the void. Sender B's sweep,
// once A's leases run out, puts the twenty never sent back in the queue (B sends them), and
// records the ten sent lost and hands them to their delivery workflows, which count the lost
// attempt and try again: the five the receiver executed are acknowledged (it dedupes on
// webhook-id), the five it refused are executed. Every run SUCCEEDED, every key executed
// exactly once, and no request of a key left after a 2xx was recorded for it.
func TestAWorkerKilledMidBatchLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	e := newSenderEnv(t)
	rcv, err := receiver.Start()
	require.NoError(t, err)
	t.Cleanup(rcv.Close)
	rcv.Secret = e.secret
	gate := make(chan struct{})
	var held atomic.Int32
	var refused sync.Map
	rcv.Answer = func(key string, attempt int) receiver.Answer {
		if attempt > 1 {
			return receiver.Answer{}
		}
		n := held.Add(1)
		if n > 10 {
			return receiver.Answer{} // sent by B, after the kill
		}
		<-gate // A is killed while the receiver holds its ten
		if n%2 == 0 {
			refused.Store(key, true)
			return receiver.Answer{Status: http.StatusServiceUnavailable}
		}
		return receiver.Answer{}
	}
	names, tick := e.arm("killed", 30, rcv.URL()+"/hook", &domain.HostLimit{MaxInFlight: 10}, &domain.Retry{InitialBackoff: schedulespec.Duration(200 * time.Millisecond)})
	killA := e.sender("worker-a", 2*time.Second)
	require.Eventually(t, func() bool { return held.Load() == 10 }, time.Minute, 20*time.Millisecond, "A sent ten")
	var sending int
	require.NoError(t, e.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM schedule_run_attempts WHERE outcome = 'sending'`).Scan(&sending))
	require.Equal(t, 10, sending, "each request A sent was recorded before it left")
	killA()
	close(gate)
	require.Eventually(t, func() bool {
		n := 0
		for _, d := range rcv.Deliveries() {
			n += d.Requests
		}
		return n == 10
	}, time.Minute, 20*time.Millisecond, "the receiver answered A's ten into the void")

	e.sender("worker-b", 2*time.Second)
	runs := e.waitFinal(names, tick)
	attempts := e.attempts(runs)
	lost, resent := 0, 0
	for _, name := range names {
		r := runs[name]
		require.Equal(t, domain.RunSucceeded, r.Status, "%s: not lost (%s)", name, r.Error)
		d := rcv.Deliveries()[r.IdempotencyKey]
		require.Equal(t, 1, d.Executions, "%s: executed exactly once", name)
		as := attempts[name]
		sort.Slice(as, func(i, j int) bool { return as[i].Attempt < as[j].Attempt })
		if as[0].Outcome == domain.AttemptLost {
			lost++
			require.Len(t, as, 2, "%s: the lost attempt, then its delivery workflow's", name)
			require.Equal(t, int32(2), as[1].Attempt, "%s: the workflow counted the lost attempt", name)
			require.False(t, as[1].Direct)
			require.Equal(t, domain.AttemptSucceeded, as[1].Outcome)
			require.Equal(t, 2, d.Requests, "%s: sent again once", name)
			if _, was := refused.Load(r.IdempotencyKey); !was {
				resent++
				require.Equal(t, 1, d.Redeliveries, "%s: executed before, acknowledged again without executing", name)
			}
		} else {
			require.Len(t, as, 1, "%s: never sent by A: sent once, by B", name)
			require.True(t, as[0].Direct)
			require.Equal(t, domain.AttemptSucceeded, as[0].Outcome)
			require.Equal(t, 1, d.Requests)
		}
		// tickgate never sends a key again once a 2xx was recorded for it.
		for _, ok := range as {
			if ok.Outcome != domain.AttemptSucceeded {
				continue
			}
			for _, later := range as {
				require.False(t, later.StartedAt.After(*ok.FinishedAt), "%s: attempt %d left after attempt %d's 2xx was recorded", name, later.Attempt, ok.Attempt)
			}
		}
	}
	require.Equal(t, 10, lost, "the ten A sent were recorded lost by B's sweep")
	require.Equal(t, 5, resent, "the five the receiver had executed were resent once, and deduped")
}

// A destination host never has more requests in flight than its limit: forty first attempts
// at one tick, the action limiting its host to four, against a receiver that counts the
// requests it holds at once. Every one is delivered; those the limit held up long say so in
// their run's reason.
func TestAHostNeverHasMoreInFlightThanItsLimit(t *testing.T) {
	t.Parallel()
	e := newSenderEnv(t)
	var inFlight, peak, served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(25 * time.Millisecond)
		inFlight.Add(-1)
		served.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	names, tick := e.arm("limited", 40, srv.URL+"/hook", &domain.HostLimit{MaxInFlight: 4}, nil)
	e.sender("worker-a", 0)
	runs := e.waitFinal(names, tick)
	noted := 0
	for _, name := range names {
		r := runs[name]
		require.Equal(t, domain.RunSucceeded, r.Status, name)
		if r.Reason != "" {
			require.Regexp(t, `^sent \d+\.\d s after its tick: host 127\.0\.0\.1 at its limit of 4 in flight$`, r.Reason)
			noted++
		}
	}
	require.EqualValues(t, 40, served.Load())
	require.LessOrEqual(t, peak.Load(), int32(4), "never more than four in flight at the receiver")
	require.Positive(t, noted, "the lateness the limit caused is recorded as such")
}

// A 429 with Retry-After slows its whole host: the first attempts waiting for the host's
// turn are not sent until the host's wait is over, not only the request that got it.
func TestRetryAfterHoldsEveryFirstAttemptToTheHost(t *testing.T) {
	t.Parallel()
	e := newSenderEnv(t)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	names, tick := e.arm("slowed", 5, srv.URL+"/hook", &domain.HostLimit{MaxInFlight: 1}, nil)
	e.sender("worker-a", 0)
	require.Eventually(t, func() bool { return requests.Load() == 1 }, time.Minute, 20*time.Millisecond)
	require.Never(t, func() bool { return requests.Load() > 1 }, 2*time.Second, 50*time.Millisecond, "the host asked for an hour: nothing more is sent to it")
	runs := e.runs(names, tick)
	waiting := 0
	for _, r := range runs {
		as, err := e.st.RunAttempts(context.Background(), []int64{r.ID})
		require.NoError(t, err)
		if len(as[r.ID]) == 0 {
			require.Equal(t, domain.RunRunning, r.Status)
			waiting++
		}
	}
	require.Equal(t, 4, waiting, "four first attempts wait for the host, unsent")
	for _, r := range runs {
		if strings.HasPrefix(r.WorkflowID, "schedule/") {
			_ = e.acts.Temporal.TerminateWorkflow(context.Background(), r.WorkflowID, "", "test over")
		}
	}
}
