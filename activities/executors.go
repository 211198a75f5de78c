package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Executors of rollout tasks.
const (
	ExecutorNoop     = "noop"
	ExecutorHTTP     = "http"
	ExecutorSQL      = "sql"
	ExecutorExternal = "external"
)

// NoopPayload: {"sleep": "200ms"} (optional).
type NoopPayload struct {
	Sleep string `json:"sleep,omitempty"`
}

// HTTPPayload: POST body to url; a 2xx answer is success.
type HTTPPayload struct {
	URL     string            `json:"url"`
	Body    json.RawMessage   `json:"body,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// SQLPayload: run statement in one transaction on the task's database (DSN from the
// worker's TICKGATE_SQL_TARGETS, never from the request).
type SQLPayload struct {
	Statement string `json:"statement"`
}

// PayloadError names the payload field that is wrong.
type PayloadError struct {
	Field string // relative to payload, e.g. "sleep"
	Msg   string
}

func (e *PayloadError) Error() string { return e.Field + ": " + e.Msg }

// ValidatePayload checks a task's executor and payload before anything is stored. It never
// looks at SQL targets: whether a database has a DSN is the worker's business.
func ValidatePayload(executor string, payload json.RawMessage) error {
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = json.RawMessage("{}")
	}
	strict := func(dst any) error {
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(dst); err != nil {
			if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				// The key comes %q-quoted: unquote it to name the field as sent.
				if unq, uerr := strconv.Unquote(name); uerr == nil {
					name = unq
				}
				return &PayloadError{Field: name, Msg: "unknown field"}
			}
			return &PayloadError{Field: "", Msg: err.Error()}
		}
		return nil
	}
	switch executor {
	case ExecutorNoop:
		var p NoopPayload
		if err := strict(&p); err != nil {
			return err
		}
		if p.Sleep != "" {
			d, err := time.ParseDuration(p.Sleep)
			if err != nil || d < 0 || d > time.Hour {
				return &PayloadError{Field: "sleep", Msg: fmt.Sprintf("want a duration from 0 to 1h such as \"200ms\", got %q", p.Sleep)}
			}
		}
	case ExecutorHTTP:
		var p HTTPPayload
		if err := strict(&p); err != nil {
			return err
		}
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &PayloadError{Field: "url", Msg: fmt.Sprintf("want an absolute http(s) URL, got %q", p.URL)}
		}
	case ExecutorSQL:
		var p SQLPayload
		if err := strict(&p); err != nil {
			return err
		}
		if strings.TrimSpace(p.Statement) == "" {
			return &PayloadError{Field: "statement", Msg: "is required"}
		}
	case ExecutorExternal:
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			return &PayloadError{Field: "", Msg: "must be a JSON object"}
		}
	default:
		return fmt.Errorf("unknown executor %q (want noop, http, sql or external)", executor)
	}
	return nil
}

func (a *RolloutActivities) execute(ctx context.Context, t ClaimedTask) (json.RawMessage, error) {
	if err := ValidatePayload(t.Executor, t.Payload); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "BadPayload", nil)
	}
	switch t.Executor {
	case ExecutorNoop:
		var p NoopPayload
		_ = json.Unmarshal(t.Payload, &p)
		if p.Sleep == "" {
			return nil, nil
		}
		d, _ := time.ParseDuration(p.Sleep)
		return nil, sleepWithHeartbeat(ctx, d)
	case ExecutorHTTP:
		return a.executeHTTP(ctx, t)
	case ExecutorSQL:
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

func (a *RolloutActivities) executeHTTP(ctx context.Context, t ClaimedTask) (json.RawMessage, error) {
	var p HTTPPayload
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
	hc := a.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", p.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	out, _ := json.Marshal(map[string]any{"http_status": resp.StatusCode})
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return out, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("POST %s answered %d", p.URL, resp.StatusCode), "HTTPStatus", nil)
	}
	return nil, fmt.Errorf("POST %s answered %d", p.URL, resp.StatusCode)
}

func (a *RolloutActivities) executeSQL(ctx context.Context, t ClaimedTask) (json.RawMessage, error) {
	var p SQLPayload
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
		tag, err := tx.Exec(ctx, p.Statement)
		rows = tag.RowsAffected()
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("statement on %q failed: %v", t.Database, err), "SQLFailed", nil)
	}
	out, _ := json.Marshal(map[string]any{"rows_affected": rows})
	return out, nil
}
