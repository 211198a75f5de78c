package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/tickgate/tickgate/domain"
	"github.com/tickgate/tickgate/internal/outbound"
)

func (a *RolloutActivities) execute(ctx context.Context, t ClaimedTaskRun) (json.RawMessage, error) {
	if err := domain.ValidatePayload(t.Executor, t.Payload); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "BadPayload", nil)
	}
	switch t.Executor {
	case domain.ExecutorNoop:
		var p domain.NoopPayload
		_ = json.Unmarshal(t.Payload, &p)
		if p.Sleep == "" {
			return nil, nil
		}
		d, _ := time.ParseDuration(p.Sleep)
		return nil, sleepWithHeartbeat(ctx, d)
	case domain.ExecutorHTTP:
		return a.executeHTTP(ctx, t)
	case domain.ExecutorSQL:
		return a.executeSQL(ctx, t)
	}
	return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("executor %q does not run as an activity", t.Executor), "BadExecutor", nil)
}

// sleepWithHeartbeat sleeps d, heartbeating so a cancel reaches it and a dead worker is
// noticed by the heartbeat timeout.
func sleepWithHeartbeat(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, 5*time.Second)):
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx)
			}
		}
	}
}

// ExecutorHTTPTimeout bounds one call of the http executor, from the dial to the answer.
const ExecutorHTTPTimeout = 5 * time.Minute

// httpExecutor is the http executor's client: the outbound rule's (it refuses internal
// addresses after DNS resolution, takes no proxy from the environment and follows no
// redirect), wrapped for tracing.
func (a *RolloutActivities) httpExecutor() *http.Client {
	a.executorClient.once.Do(func() {
		a.executorClient.c = a.Outbound.NewClient(outbound.Options{Timeout: ExecutorHTTPTimeout, Wrap: a.WrapHTTP, MaxIdleConnsPerHost: 16})
	})
	return a.executorClient.c
}

// executeHTTP POSTs the task's payload: a 2xx answer is success; a 4xx other than 408 and
// 429, a redirect (not followed) and an address the outbound rule refuses end the task;
// anything else is tried again.
func (a *RolloutActivities) executeHTTP(ctx context.Context, t ClaimedTaskRun) (json.RawMessage, error) {
	var p domain.HTTPPayload
	_ = json.Unmarshal(t.Payload, &p)
	body := p.Body
	if len(body) == 0 {
		body, _ = json.Marshal(map[string]any{"task_id": t.ID, "database": t.Database, "type": t.Type, "version": t.Version})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "BadPayload", nil)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	resp, err := a.httpExecutor().Do(req)
	if err != nil {
		if errors.Is(err, outbound.ErrRefused) {
			return nil, temporal.NewNonRetryableApplicationError("payload.url: "+outbound.Reason(err), "OutboundRefused", nil)
		}
		return nil, fmt.Errorf("POST %s: %w", p.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body) // bounded by the client
	out, _ := json.Marshal(map[string]any{"http_status": resp.StatusCode})
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return out, nil
	case code >= 300 && code < 400:
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("POST %s answered %d (a redirect, which is not followed: give the final URL)", p.URL, code), "HTTPStatus", nil)
	case code >= 400 && code < 500 && !domain.RetryableHTTPStatus(code):
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("POST %s answered %d", p.URL, code), "HTTPStatus", nil)
	}
	return nil, fmt.Errorf("POST %s answered %d", p.URL, resp.StatusCode)
}

// executeSQL runs an sql task's statement on its database: in one transaction, under the
// server-side timeouts (sql_targets.go), sent over the extended query protocol so that
// PostgreSQL itself refuses a text of more than one statement, whatever the lexer that
// judged it (domain.CheckOneStatement, in ValidatePayload) made of it.
func (a *RolloutActivities) executeSQL(ctx context.Context, t ClaimedTaskRun) (json.RawMessage, error) {
	var p domain.SQLPayload
	_ = json.Unmarshal(t.Payload, &p)
	dsn, ok := a.SQLTargets[t.Database]
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("no SQL target configured for database %q (TICKGATE_SQL_TARGETS)", t.Database), "NoSQLTarget", nil)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		// Do not echo the DSN: the error of a failed connect may contain it.
		return nil, fmt.Errorf("connect to database %q failed", t.Database)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var rows int64
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := setLocalTimeouts(ctx, tx, a.statementTimeout(), a.lockTimeout()); err != nil {
			return err
		}
		tag, err := execOneStatement(ctx, tx, p.Statement)
		rows = tag.RowsAffected()
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if lockTimedOut(err) {
			// Another transaction held the lock longer than the lock timeout: worth another
			// attempt, later, rather than a failed task.
			return nil, fmt.Errorf("statement on %q: %w", t.Database, err)
		}
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("statement on %q failed: %v", t.Database, err), "SQLFailed", nil)
	}
	out, _ := json.Marshal(map[string]any{"rows_affected": rows})
	return out, nil
}
