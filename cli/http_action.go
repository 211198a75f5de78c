package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The HTTP action's commands (docs/schedules.md "HTTP action"): the signing secret's
// rotation, the dead letter, redrives, a run's attempts; `schedule create` takes an http
// action through the flags added here (httpActionFlags).

var (
	secretRec   = []col{{"name", "name"}, {"signing_secret", "signing_secret"}, {"rotated_at", "rotated_at"}}
	deadCols    = []col{{"ID", "id"}, {"SCHEDULE", "schedule"}, {"SCHEDULED", "scheduled_at"}, {"TRIGGER", "trigger"}, {"ATTEMPTS", "attempts.#"}, {"REDRIVES", "redrives.#"}, {"ERROR", "error"}}
	attemptCols = []col{{"REDRIVE", "redrive"}, {"ATTEMPT", "attempt"}, {"STARTED", "started_at"}, {"STATUS", "status_code"}, {"LATENCY MS", "latency_ms"},
		{"OUTCOME", "outcome"}, {"RETRY AFTER MS", "retry_after_ms"}, {"ERROR", "error"}, {"ANSWER", "response_start"}}
	redrivenRec = []col{{"id", "id"}, {"schedule", "schedule"}, {"status", "status"}, {"workflow_id", "workflow_id"}, {"redrives", "redrives.#"}}
)

func init() {
	Groups["run"] = "act on schedule runs: dead-letter, redrive, attempts"
	operations["schedule"]["rotate-secret"] = simple("NAME   (a new signing secret for an http action, shown once)", 1, "POST",
		func(a []string) string { return "/api/v1/schedules/" + esc(a[0]) + "/secret" }, secretRec)
	operations["run"] = map[string]op{
		"dead-letter": {usage: "[--window DUR] [--limit N] [--all]   (FAILED runs of http and workflow actions)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			l := addListFlags(fs)
			window := fs.String("window", "", "only ticks within this long (default: all)")
			return func(c *cmd) error {
				if err := c.want(0, "no arguments"); err != nil {
					return err
				}
				q := url.Values{"dead_letter": {"true"}}
				if *window != "" {
					q.Set("window", *window)
				}
				return c.list("/api/v1/runs", q, l, deadCols)
			}
		}},
		"redrive": simple("ID   (deliver a FAILED run again: same tick key, a new series of attempts)", 1, "POST",
			func(a []string) string { return "/api/v1/runs/" + esc(a[0]) + "/redrive" }, redrivenRec),
		"attempts": {usage: "SCHEDULE RUN_ID   (an http action's delivery attempts, every series)", flags: func(fs *flag.FlagSet) func(c *cmd) error {
			return func(c *cmd) error {
				if err := c.want(2, "SCHEDULE RUN_ID"); err != nil {
					return err
				}
				id, err := strconv.ParseInt(c.args[1], 10, 64)
				if err != nil || id <= 0 {
					return usagef("run attempts: RUN_ID is a positive integer, got %q", c.args[1])
				}
				return c.attempts(c.args[0], id)
			}
		}},
	}
}

// runPage is one page of a schedule's runs, as far as attempts needs it.
type runPage struct {
	Items []struct {
		ID       int64            `json:"id"`
		Attempts []map[string]any `json:"attempts"`
	} `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// attempts prints a run's attempts, found among its schedule's runs (newest first, so the
// pages are read until the run or an older one shows).
func (c *cmd) attempts(schedule string, runID int64) error {
	cursor := ""
	for {
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page runPage
		if err := c.client.Do(c.ctx, "GET", "/api/v1/schedules/"+esc(schedule)+"/runs?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		for _, r := range page.Items {
			if r.ID == runID {
				if r.Attempts == nil {
					r.Attempts = []map[string]any{}
				}
				if c.output == "json" {
					b, err := json.Marshal(r.Attempts)
					if err != nil {
						return err
					}
					return c.printJSON(b)
				}
				table(c.env.Stdout, attemptCols, r.Attempts)
				return nil
			}
			if r.ID < runID {
				return &APIError{Status: 404, Detail: fmt.Sprintf("schedule %q has no run %d", schedule, runID)}
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return &APIError{Status: 404, Detail: fmt.Sprintf("schedule %q has no run %d", schedule, runID)}
		}
	}
}

// httpActionFlags are `schedule create`'s flags of an http action and of a retry policy.
type httpActionFlags struct {
	url, method, body, timeout         *string
	headers                            headerFlags
	maxAttempts                        *int
	maxAge, initialBackoff, maxBackoff *string
}

type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

func addHTTPActionFlags(fs *flag.FlagSet) *httpActionFlags {
	f := &httpActionFlags{
		url:            fs.String("url", "", "http action: the URL each tick sends a signed request to"),
		method:         fs.String("method", "", "http action: method (default POST)"),
		body:           fs.String("body", "", "http action: body (JSON; a JSON string is sent as its text)"),
		timeout:        fs.String("http-timeout", "", "http action: timeout per attempt (default 10s)"),
		maxAttempts:    fs.Int("max-attempts", 0, "retry (http, workflow): attempts at most"),
		maxAge:         fs.String("max-age", "", "retry (http, workflow): no attempt starts later than this after the first"),
		initialBackoff: fs.String("initial-backoff", "", "retry (http, workflow): the first wait, doubling after"),
		maxBackoff:     fs.String("max-backoff", "", "retry (http, workflow): the longest wait"),
	}
	fs.Var(&f.headers, "header", "http action: a header K=V (repeatable)")
	return f
}

// action is the http action the flags give (nil: no --url).
func (f *httpActionFlags) action() (map[string]any, error) {
	if *f.url == "" {
		return nil, nil
	}
	a := map[string]any{"kind": "http", "url": *f.url}
	if *f.method != "" {
		a["method"] = *f.method
	}
	if *f.timeout != "" {
		a["timeout"] = *f.timeout
	}
	if b, err := rawJSON("body", *f.body); err != nil {
		return nil, err
	} else if b != nil {
		a["body"] = b
	}
	if len(f.headers) > 0 {
		h := map[string]any{}
		for _, kv := range f.headers {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usagef("--header wants K=V, got %q", kv)
			}
			h[k] = v
		}
		a["headers"] = h
	}
	return a, nil
}

// retry is the retry policy the flags give (nil: none given).
func (f *httpActionFlags) retry() map[string]any {
	r := map[string]any{}
	if *f.maxAttempts != 0 {
		r["max_attempts"] = *f.maxAttempts
	}
	for k, v := range map[string]string{"max_age": *f.maxAge, "initial_backoff": *f.initialBackoff, "max_backoff": *f.maxBackoff} {
		if v != "" {
			r[k] = v
		}
	}
	if len(r) == 0 {
		return nil
	}
	return r
}
