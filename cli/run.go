package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickgate/tickgate/client"
)

// `tickgate run …`: schedule runs across schedules — the dead letter, redrives, an http
// action's delivery attempts (docs/schedules.md "HTTP action"); and the flags of an http
// action and a retry policy that `schedule create` takes.

var (
	deadCols    = []col{{"ID", "id"}, {"SCHEDULE", "schedule"}, {"SCHEDULED", "scheduled_at"}, {"TRIGGER", "trigger"}, {"ATTEMPTS", "attempts.#"}, {"REDRIVES", "redrives.#"}, {"ERROR", "error"}}
	attemptCols = []col{{"REDRIVE", "redrive"}, {"ATTEMPT", "attempt"}, {"STARTED", "started_at"}, {"STATUS", "status_code"}, {"LATENCY MS", "latency_ms"},
		{"OUTCOME", "outcome"}, {"RETRY AFTER MS", "retry_after_ms"}, {"ERROR", "error"}, {"ANSWER", "response_start"}}
	redrivenRec = []col{{"id", "id"}, {"schedule", "schedule"}, {"status", "status"}, {"workflow_id", "workflow_id"}, {"redrives", "redrives.#"}}
)

func runCmd(a *app) *cobra.Command {
	var lf *listFlags
	var window string
	dead := &cobra.Command{
		Use:   "dead-letter [--window DUR]",
		Short: "FAILED runs of http and workflow actions not redriven since",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.list(lf, func(cursor *string, limit int) ([]byte, error) {
				yes := true
				p := client.ListRunsParams{DeadLetter: &yes, Cursor: cursor, Limit: &limit}
				if window != "" {
					p.Window = &window
				}
				return body(a.api.ListRunsWithResponse(a.ctx, &p))
			}, deadCols)
		},
	}
	lf = addListFlags(dead)
	dead.Flags().StringVar(&window, "window", "", "only ticks within this long (default: all)")
	g := group("run", "Act on schedule runs: dead-letter, redrive, attempts",
		dead,
		redriveCmd(a),
		&cobra.Command{
			Use:               "attempts SCHEDULE RUN_ID",
			Short:             "An http action's delivery attempts of one run, every series",
			Args:              exactArgs(2, "SCHEDULE RUN_ID"),
			ValidArgsFunction: a.completeSchedules,
			RunE: func(cmd *cobra.Command, args []string) error {
				id, err := strconv.ParseInt(args[1], 10, 64)
				if err != nil || id <= 0 {
					return usagef("run attempts: RUN_ID is a positive integer, got %q", args[1])
				}
				return a.attempts(args[0], id)
			},
		})
	g.Aliases = []string{"runs"}
	return g
}

// redriveCmd is `run redrive ID`, one FAILED run, and `run redrive --since T --until T
// [--selector S]`, every dead-lettered run of the range (POST /runs/redrive), a page at a time
// until none remains, each page's progress on stderr.
func redriveCmd(a *app) *cobra.Command {
	var selector, since, until string
	var limit int
	cmd := &cobra.Command{
		Use:   "redrive ID | --since T --until T [--selector S]",
		Short: "Deliver a FAILED run again (the same tick key, a new series of attempts), or every dead-lettered run of a range of ticks",
		RunE: func(cmd *cobra.Command, args []string) error {
			bulk := since != "" || until != "" || selector != ""
			switch {
			case bulk && len(args) > 0:
				return usagef("run redrive: give a run ID, or --since and --until (with --selector), not both")
			case !bulk && len(args) != 1:
				return usagef("run redrive: want a run ID, or --since and --until")
			case !bulk:
				id, err := idArg(args[0])
				if err != nil {
					return err
				}
				raw, err := body(a.api.RedriveRunWithResponse(a.ctx, int(id), nil))
				if err != nil {
					return err
				}
				return a.show(raw, redrivenRec)
			}
			return a.redriveRange(selector, since, until, limit)
		},
	}
	f := cmd.Flags()
	f.StringVar(&selector, "selector", "", "bulk: the schedules whose runs are redriven (label selector; default every schedule)")
	f.StringVar(&since, "since", "", "bulk: the first tick of the range (RFC 3339)")
	f.StringVar(&until, "until", "", "bulk: the end of the range, not included (RFC 3339)")
	f.IntVar(&limit, "limit", 0, "bulk: the most runs a request redrives (default 100, at most 1000)")
	return cmd
}

// redriveRange redrives every dead-lettered run of a range, page by page (each request
// carrying an Idempotency-Key of its own, so a retried page is not redriven twice), and
// prints the redrive's counts once none remains.
func (a *app) redriveRange(selector, since, until string, limit int) error {
	from, err := time.Parse(time.RFC3339, since)
	if err != nil {
		return usagef("run redrive: --since wants an RFC 3339 time, got %q", since)
	}
	to, err := time.Parse(time.RFC3339, until)
	if err != nil {
		return usagef("run redrive: --until wants an RFC 3339 time, got %q", until)
	}
	req := client.BulkRedriveRequest{Since: &from, Until: &to}
	if selector != "" {
		req.Selector = &selector
	}
	if limit != 0 {
		req.Limit = &limit
	}
	var last []byte
	var items []map[string]any
	for {
		raw, err := body(a.api.RedriveRunsWithResponse(a.ctx, nil, req))
		if err != nil {
			return err
		}
		var page struct {
			Matched, Redriven, Skipped, Remaining int
			Done                                  bool
			Continue                              string
			Items                                 []map[string]any
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return err
		}
		last, items = raw, append(items, page.Items...)
		fmt.Fprintf(a.env.Stderr, "redrive: %d matched, %d redriven, %d skipped, %d remaining\n", page.Matched, page.Redriven, page.Skipped, page.Remaining)
		if page.Done || page.Continue == "" {
			break
		}
		req = client.BulkRedriveRequest{Continue: &page.Continue}
		if limit != 0 {
			req.Limit = &limit
		}
	}
	if a.output != "table" {
		var v map[string]any
		if err := json.Unmarshal(last, &v); err != nil {
			return err
		}
		v["items"] = items // every page's runs
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return a.printRaw(b)
	}
	table(a.env.Stdout, bulkRedriveCols, items)
	return nil
}

var bulkRedriveCols = []col{{"RUN", "run_id"}, {"SCHEDULE", "schedule"}, {"OUTCOME", "outcome"}, {"WORKFLOW", "workflow_id"}, {"REASON", "reason"}}

// attempts prints a run's attempts, found among its schedule's runs (newest first, so the
// pages are read until the run or an older one shows).
func (a *app) attempts(schedule string, runID int64) error {
	limit := 500
	notFound := &client.Error{Status: http.StatusNotFound, Title: "Not Found", Detail: fmt.Sprintf("schedule %q has no run %d", schedule, runID)}
	for r, err := range a.api.ScheduleRuns(a.ctx, schedule, &client.ListScheduleRunsParams{Limit: &limit}) {
		if err != nil {
			return err
		}
		if r.Id == nil || int64(*r.Id) > runID {
			continue
		}
		if int64(*r.Id) < runID {
			return notFound
		}
		attempts := []client.Attempt{}
		if r.Attempts != nil {
			attempts = *r.Attempts
		}
		b, err := json.Marshal(attempts)
		if err != nil {
			return err
		}
		if a.output != "table" {
			return a.printRaw(b)
		}
		var rows []map[string]any
		if err := json.Unmarshal(b, &rows); err != nil {
			return err
		}
		table(a.env.Stdout, attemptCols, rows)
		return nil
	}
	return notFound
}

// addHTTPActionFlags adds `schedule create`'s flags of an http action and a retry policy;
// httpActionOf and retryOf read them back.
func addHTTPActionFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("url", "", "http action: the URL each tick sends a signed request to")
	f.String("method", "", "http action: method (default POST)")
	f.String("body", "", "http action: body (JSON; a JSON string is sent as its text)")
	f.String("http-timeout", "", "http action: timeout per attempt (default 10s)")
	f.Var(&listFlag{}, "header", "http action: a header K=V (repeatable)")
	f.Int("max-attempts", 0, "retry (http, workflow): attempts at most")
	f.String("max-age", "", "retry (http, workflow): no attempt starts later than this after the first")
	f.String("initial-backoff", "", "retry (http, workflow): the first wait, doubling after")
	f.String("max-backoff", "", "retry (http, workflow): the longest wait")
}

// httpActionOf is the http action the flags give (nil: no --url).
func httpActionOf(cmd *cobra.Command) (map[string]any, error) {
	f := cmd.Flags()
	url, _ := f.GetString("url")
	if url == "" {
		return nil, nil
	}
	act := map[string]any{"kind": "http", "url": url}
	for flag, key := range map[string]string{"method": "method", "http-timeout": "timeout"} {
		if v, _ := f.GetString(flag); v != "" {
			act[key] = v
		}
	}
	b, _ := f.GetString("body")
	if raw, err := rawJSON("body", b); err != nil {
		return nil, err
	} else if raw != nil {
		act["body"] = raw
	}
	if headers := *f.Lookup("header").Value.(*listFlag); len(headers) > 0 {
		h := map[string]any{}
		for _, kv := range headers {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usagef("--header wants K=V, got %q", kv)
			}
			h[k] = v
		}
		act["headers"] = h
	}
	return act, nil
}

// retryOf is the retry policy the flags give (nil: none given).
func retryOf(cmd *cobra.Command) map[string]any {
	f := cmd.Flags()
	r := map[string]any{}
	if n, _ := f.GetInt("max-attempts"); n != 0 {
		r["max_attempts"] = n
	}
	for flag, key := range map[string]string{"max-age": "max_age", "initial-backoff": "initial_backoff", "max-backoff": "max_backoff"} {
		if v, _ := f.GetString(flag); v != "" {
			r[key] = v
		}
	}
	if len(r) == 0 {
		return nil
	}
	return r
}
