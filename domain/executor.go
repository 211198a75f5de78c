package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Executor runs a rollout's task run (task_runs.executor).
type Executor string

// Executors of rollout tasks.
const (
	ExecutorNoop     Executor = "noop"
	ExecutorHTTP     Executor = "http"
	ExecutorSQL      Executor = "sql"
	ExecutorExternal Executor = "external"
)

// RunsCode reports whether the executor runs what its payload says on a rollout's targets
// (a statement on the database, a request to a URL): only a role that RunsCodeOnTargets
// may create such a task.
func (e Executor) RunsCode() bool {
	return e == ExecutorSQL || e == ExecutorHTTP
}

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

// SQL on a target database runs under server-side timeouts (SET LOCAL in its transaction),
// so a statement that hangs or waits on a lock is ended by the database itself.
const (
	// DefaultSQLStatementTimeout bounds an sql task's statement
	// (TICKGATE_SQL_STATEMENT_TIMEOUT): below the task's own two hours, so the database ends
	// it before the worker gives up on it.
	DefaultSQLStatementTimeout = time.Hour
	// DefaultSQLLockTimeout bounds a statement's wait for a lock (TICKGATE_SQL_LOCK_TIMEOUT):
	// a migration queued behind a long transaction would otherwise block every query queued
	// behind it. A task that times out on a lock is tried again.
	DefaultSQLLockTimeout = 10 * time.Second
)

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
func ValidatePayload(executor Executor, payload json.RawMessage) error {
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
		if err := CheckOneStatement(p.Statement); err != nil {
			return &PayloadError{Field: "statement", Msg: err.Error()}
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
