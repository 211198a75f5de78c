package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/tickgate/tickgate/activities"
	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
	"github.com/tickgate/tickgate/internal/schedulespec"
	"github.com/tickgate/tickgate/internal/testing/testenv"
	"github.com/tickgate/tickgate/store"
)

// A delivered request's answer reaches Temporal even when its attempt cannot be recorded: a
// database cut off mid-attempt (here, a lock the record waits on for good) must not hold the
// answer past the attempt's deadline, where Temporal would count it as timed out, send the
// delivered request again, and at max_attempts end the run FAILED though its request was
// delivered — as the chaos run's blackhole partition from PostgreSQL did (five attempts
// delivered, each "complete after timeout", the run FAILED).
func TestADeliveredAttemptAnswersThoughItsRecordHangs(t *testing.T) {
	t.Parallel()
	st := testenv.Store(t)
	ctx := context.Background()
	var requests atomic.Int32
	// The record of the attempt waits on this lock until the test ends: the receiver takes
	// it as the request arrives, after the attempt was recorded as being sent (StartAttempt)
	// and before its answer is recorded.
	var lock pgx.Tx
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if requests.Add(1) == 1 {
			tx, err := st.Pool.Begin(ctx)
			if err == nil {
				// (Held as long as the test lasts: the pool's idle_in_transaction_session_timeout
				// would end it after 30 s.)
				_, err = tx.Exec(ctx, `SET LOCAL idle_in_transaction_session_timeout = 0; LOCK TABLE schedule_run_attempts IN SHARE MODE`)
			}
			if err != nil {
				w.WriteHeader(http.StatusTeapot) // fails the test below: a final answer, not a 200
				return
			}
			lock = tx
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	name := fmt.Sprintf("http-record-%d", time.Now().UnixNano())
	act := domain.Action{Kind: domain.ActionHTTP, URL: srv.URL, Timeout: schedulespec.Duration(time.Second)}
	require.NoError(t, act.Normalize())
	retry, err := domain.NormalizeRetry(&domain.Retry{MaxAttempts: 3}, domain.ActionHTTP)
	require.NoError(t, err)
	actionJSON, _ := json.Marshal(act)
	retryJSON, _ := json.Marshal(retry)
	row, err := st.CreateSchedule(ctx, store.NewSchedule{Name: name, Spec: json.RawMessage(`{"interval":"1h"}`), Action: actionJSON,
		Overlap: domain.OverlapSkip, Retry: retryJSON, SigningSecret: domain.SigningSecret([]byte("a test signing key of 24 bytes+"))})
	require.NoError(t, err)
	tick := time.Date(2026, 11, 28, 1, 53, 20, 0, time.UTC)
	key := domain.TickKey(row.ID, tick)
	var runID int64
	require.NoError(t, st.Pool.QueryRow(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status, idempotency_key, workflow_id)
		VALUES ($1, $2, $2, 'scheduled', 'RUNNING', $3, $4) RETURNING id`, row.ID, tick, key, testActivityWorkflowID).Scan(&runID))

	defer func() {
		if lock != nil {
			_ = lock.Rollback(ctx)
		}
	}()

	rule, err := outbound.Parse("127.0.0.1")
	require.NoError(t, err)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := &activities.HTTPDeliveries{Store: st, Outbound: rule}
	env.RegisterActivity(acts)
	in := activities.HTTPDelivery{RunID: runID, ScheduleID: row.ID, Schedule: name, Key: key, ScheduledAt: tick, Action: act, Retry: *retry}
	type answer struct {
		out activities.HTTPDelivered
		err error
	}
	done := make(chan answer, 1)
	go func() {
		val, err := env.ExecuteActivity(acts.DeliverHTTP, in)
		var out activities.HTTPDelivered
		if err == nil {
			err = val.Get(&out)
		}
		done <- answer{out, err}
	}()
	var got answer
	select {
	case got = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the attempt's answer waited on its record")
	}
	require.NoError(t, got.err, "delivered: the attempt succeeded")
	require.Equal(t, http.StatusOK, got.out.StatusCode)
	require.EqualValues(t, 1, requests.Load(), "sent once")
}

// testActivityWorkflowID is the workflow id the SDK's test activity environment runs an
// activity under: a delivery sends only for the run its workflow is the target of
// (HTTPDeliveryOf checks it), so the test's run names it.
const testActivityWorkflowID = "default-test-workflow-id"
