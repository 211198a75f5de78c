package cli_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/testing/teststack"
	"github.com/tickgate/tickgate/store"
)

// The HTTP action from the command line: a create with an http action and a retry policy
// shows the signing secret once, rotate-secret shows a new one; the dead letter lists a
// FAILED run with its attempts; redrive makes it RUNNING again; attempts lists them.
func TestCLIHTTPAction(t *testing.T) {
	t.Parallel()
	st := teststack.Start(t, teststack.Options{NoWorker: true})
	admin := st.AdminToken
	secret := regexp.MustCompile(`signing_secret\s+(whsec_[A-Za-z0-9+/]{43}=)`)

	r := run(t, st, admin, "schedule", "create", "hooked", "--interval", "1h", "--url", "https://example.com/hook",
		"--header", "X-Team=billing", "--body", `{"a":1}`, "--max-attempts", "5", "--max-age", "1h")
	require.Equal(t, 0, r.code, r.errOut)
	first := secret.FindStringSubmatch(r.out)
	require.NotNil(t, first, r.out)
	require.Contains(t, r.out, "max_attempts=5")
	r = run(t, st, admin, "schedule", "get", "hooked")
	require.Equal(t, 0, r.code, r.errOut)
	require.NotContains(t, r.out, first[1], "get never shows the secret")
	r = run(t, st, admin, "schedule", "rotate-secret", "hooked")
	require.Equal(t, 0, r.code, r.errOut)
	second := secret.FindStringSubmatch(r.out)
	require.NotNil(t, second, r.out)
	require.NotEqual(t, first[1], second[1])

	r = run(t, st, admin, "schedule", "create", "internal", "--interval", "1h", "--url", "http://127.0.0.1:9/hook")
	require.Equal(t, 6, r.code, "refused as invalid: %s", r.errOut)
	require.Contains(t, r.errOut, "action.url")
	r = run(t, st, admin, "schedule", "create", "bad-header", "--interval", "1h", "--url", "https://example.com", "--header", "novalue")
	require.Equal(t, 2, r.code, r.errOut)

	ctx := context.Background()
	row, err := st.Store.GetSchedule(ctx, "hooked")
	require.NoError(t, err)
	tick := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	var id int64
	require.NoError(t, st.Store.Pool.QueryRow(ctx, `INSERT INTO schedule_runs (schedule_id, scheduled_at, fired_at, trigger, status,
		idempotency_key, workflow_id, error, finished_at) VALUES ($1, $2, $2, 'scheduled', 'FAILED', $3, $4, 'HTTP 502 (gave up)', $2) RETURNING id`,
		row.ID, tick, domain.TickKey(row.ID, tick), domain.RunWorkflowID("hooked", domain.TickKey(row.ID, tick))).Scan(&id))
	code := int32(502)
	require.NoError(t, st.Store.RecordAttempt(ctx, store.RunAttempt{RunID: id, WorkflowID: "w", Attempt: 1, StartedAt: tick, LatencyMs: 7,
		StatusCode: &code, Outcome: domain.AttemptRetryable, Error: "HTTP 502 Bad Gateway", ResponseStart: "upstream down"}))

	r = run(t, st, admin, "run", "dead-letter")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+hooked\s+.*\s1\s+0\s+HTTP 502 \(gave up\)`, id), r.out)
	r = run(t, st, admin, "run", "attempts", "hooked", fmt.Sprint(id))
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "upstream down")
	require.Contains(t, r.out, "retryable")
	r = run(t, st, admin, "run", "redrive", fmt.Sprint(id))
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `status\s+RUNNING`, r.out)
	require.Regexp(t, `workflow_id\s+\S+~redrive-1`, r.out)
	r = run(t, st, admin, "run", "redrive", fmt.Sprint(id))
	require.Equal(t, 4, r.code, "a RUNNING run is not redriven: %s", r.errOut)
	r = run(t, st, admin, "run", "attempts", "hooked", "999999")
	require.Equal(t, 3, r.code, r.errOut)
}
